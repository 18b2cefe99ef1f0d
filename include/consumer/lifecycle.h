#ifndef SK_LIFECYCLE_H
#define SK_LIFECYCLE_H

#include <stdint.h>

struct consumer;

/* Keeps the status columns of MySQL true to the clock, so that a report in SQL sees what
 * the gateways enforce: activities PENDING -> ACTIVE -> ENDED when their window opens and
 * closes, coupons past their validity EXPIRED together with their unused user coupons.
 * Every consumer of a group runs it; each statement is idempotent, so several at once
 * only find nothing left to do. A CANCELLED activity or a USED user coupon is never
 * touched. The same pass records the orders that ended FAILED (outcomes.h), then archives
 * the Redis side of sales over for consumer.archive-after-ms (autoarchive.h). */

struct lifecycle_counts {
    uint64_t activities_started, activities_ended, coupons_expired, user_coupons_expired;
};

/* Runs one pass when consumer.lifecycle-interval-ms has passed since the last one (never
 * when it is 0). MySQL down: logged, retried at the next interval; the batch loop goes on. */
void lifecycle_tick(struct consumer *c);

/* One pass now, on c->db. Returns 0 with what it changed, or -1 (c->db dropped). */
int lifecycle_run(struct consumer *c, struct lifecycle_counts *changed);

#endif
