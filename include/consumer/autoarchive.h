#ifndef SK_AUTOARCHIVE_H
#define SK_AUTOARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

struct consumer;

/* The lifecycle pass's archive of sales over for consumer.archive-after-ms (0: never by
 * itself): store/archive.h on each, the latest end first, at most AUTOARCHIVE_PER_PASS a
 * pass. One consumer of the group does it at a time: the one holding KEYS_ARCHIVE_LOCK
 * (SET NX with a TTL, so a consumer that dies holding it frees it by itself); should two
 * overlap all the same, every step of an archive is idempotent and its marks atomic.
 * A sale the archive refuses (an order not in MySQL, say) is logged and left alone by this
 * consumer for AUTOARCHIVE_RETRY_MS, so that a sale that needs an operator does not cost a
 * walk of its orders every pass. */

#define AUTOARCHIVE_PER_PASS 4
#define AUTOARCHIVE_RETRY_MS (10 * 60 * 1000)

/* Archives what is due. Returns how many sales it archived, or -1 (logged). */
int autoarchive_run(struct consumer *c);
/* The lifecycle pass's archive of coupons over for consumer.coupon-archive-after-ms (0:
 * never by itself): store/couponarchive.h, one coupon at a time, the oldest end first, a
 * time-boxed part of the walk each call, by the one consumer holding KEYS_COUPON_ARCHIVE_LOCK.
 * With look, a coupon due is looked for when none is being walked (the lifecycle pass);
 * without, only a walk under way goes on (a turn of the loop that had no message).
 * Returns 1 when a coupon's walk finished, 0, or -1 (logged). */
int autoarchive_coupons(struct consumer *c, bool look);
void autoarchive_free(struct consumer *c);

#endif
