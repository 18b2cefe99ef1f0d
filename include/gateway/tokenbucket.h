#ifndef SK_TOKENBUCKET_H
#define SK_TOKENBUCKET_H

#include <stdbool.h>
#include <stdint.h>

/* A limiter (the gateway's global one, and each bucket of iplimit): `rate` permits per second, at most
 * `burst` saved up. Pure arithmetic on the caller's monotonic clock in microseconds; never waits.
 * Tokens are kept in millionths so that refills of a fraction of a token are not lost. */

struct tokenbucket {
    int64_t rate;          /* permits per second */
    int64_t burst;         /* capacity in permits */
    int64_t micro_tokens;  /* current fill, 1 permit = 1,000,000 */
    int64_t last_us;
};

void tokenbucket_init(struct tokenbucket *tb, int64_t rate, int64_t burst, int64_t now_us);
bool tokenbucket_take(struct tokenbucket *tb, int64_t now_us);
/* The fill at now_us in millionths of a permit (refilled first; takes nothing). */
int64_t tokenbucket_level(struct tokenbucket *tb, int64_t now_us);
/* Seconds until one permit is available, rounded up, at least 1 (for Retry-After). */
int64_t tokenbucket_retry_after(const struct tokenbucket *tb);

#endif
