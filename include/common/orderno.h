#ifndef SK_ORDERNO_H
#define SK_ORDERNO_H

#include <stddef.h>
#include <stdint.h>

/* Order numbers: "<id>-<activityId>", id a 63-bit snowflake of
 * 41 bits of milliseconds since 2024-01-01, 10 bits of node and 12 bits of sequence.
 * The node id is drawn from a Redis counter at start-up, so two gateways, or one gateway
 * and its restarted self, never share one. The activity id rides along so that the status
 * of an order can be found in its activity's Redis hash slot from the number alone. */

#define ORDERNO_EPOCH_MS 1704067200000LL
#define ORDERNO_NODE_BITS 10
#define ORDERNO_SEQ_BITS 12
#define ORDERNO_MAX_NODE ((1 << ORDERNO_NODE_BITS) - 1)
#define ORDERNO_LEN 48

struct orderno_gen {
    int64_t last_ms;    /* logical clock: never goes backwards */
    uint32_t seq;
    uint32_t node;
};

void orderno_init(struct orderno_gen *gen, uint32_t node);
/* Pure: the caller passes the wall clock. A clock that steps back or more than 4096
 * orders in one millisecond borrow from the next millisecond instead of repeating. */
uint64_t orderno_next(struct orderno_gen *gen, int64_t now_ms);
int orderno_format(char *buf, size_t len, uint64_t id, int64_t activity_id);
/* Accepts exactly "<digits>-<digits>" with both parts positive and in range. */
int orderno_parse(const char *s, uint64_t *id, int64_t *activity_id);
/* The wall-clock millisecond an id was drawn for (its 41 bits of time). */
int64_t orderno_time_ms(uint64_t id);

#endif
