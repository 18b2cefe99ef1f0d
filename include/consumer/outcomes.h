#ifndef SK_OUTCOMES_H
#define SK_OUTCOMES_H

#include <stddef.h>
#include <stdint.h>

struct consumer;

/* Records in MySQL (seckill_order_failed) the orders that ended FAILED. The script that
 * failed an order (release, confirm, abandon) added it to its activity's failed stream in
 * the same atomic step; every consumer reads those streams in one consumer group, so each
 * entry is taken by one of them, written with INSERT ... ON DUPLICATE KEY (a repeat adds
 * nothing), then acknowledged and deleted. An entry taken by a consumer that died before
 * acknowledging it is claimed by another after OUTCOMES_IDLE_MS. Runs in the lifecycle
 * pass, between batches. */

#define OUTCOMES_GROUP "seckill-outcomes"
#define OUTCOMES_IDLE_MS 60000

/* One failed-stream entry as the scripts write it. */
struct outcomes_entry {
    char order_no[48];
    int64_t user_id;
    int64_t activity_id;
    char reason[16];
    int64_t accepted_ms;    /* from the order number */
    int64_t failed_ms;
};

/* Parses the field/value pairs of one entry of activity_id's stream. 0, or -1 with why set
 * (an entry no consumer can record: it is dropped with a warning). Pure. */
int outcomes_parse(const char *const *fields, const char *const *values, size_t n,
                   int64_t activity_id, struct outcomes_entry *out, char *why, size_t whylen);

/* One pass over every warmed activity's stream. Returns the orders recorded, or -1 when
 * Redis or MySQL failed (what was taken stays pending, retried next pass). */
int64_t outcomes_run(struct consumer *c);

#endif
