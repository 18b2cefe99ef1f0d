#ifndef SK_HOLDER_H
#define SK_HOLDER_H

#include <stddef.h>
#include <stdint.h>

/* A sale with a per-user limit of N (seckillctl activity create --per-user N) lets a user
 * hold up to N orders of it, each in a slot 1..N. A holder names one slot of one user:
 * the user id for slot 1 (so a sale of one order per user reads as it always did), and
 * "<userId>#<slot>" for slot 2 and above. It is the users hash's field, the second half
 * of a reservation member "orderNo|holder", the failed stream's u and the failed-users
 * hash's field; MySQL holds the slot in seckill_order.user_slot, under
 * UNIQUE(user_id, activity_id, user_slot). */

#define HOLDER_MAX_SLOT 100
/* "9223372036854775807#100" and its NUL. */
#define HOLDER_LEN 24

/* Returns the length written, or -1 when the slot is out of 1..HOLDER_MAX_SLOT or buf is
 * too small. */
int holder_format(char *buf, size_t len, int64_t user_id, int slot);
/* The whole string must be a holder: a positive id, then nothing or '#' and a slot of
 * 2..HOLDER_MAX_SLOT without a leading zero ("#1" is written as the bare id). */
int holder_parse(const char *s, int64_t *user_id, int *slot);
/* As holder_parse, for the first n bytes of s. */
int holder_parse_n(const char *s, size_t n, int64_t *user_id, int *slot);

#endif
