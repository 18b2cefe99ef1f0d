#ifndef SK_PARKING_H
#define SK_PARKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/orderevent.h"

struct batch;

/* Orders set aside because a Redis step could not be done on their slot (its master and
 * every replica gone, a WAIT that cannot be met): the rest of their batch goes on, and
 * they are fed again into a later batch, whole pipeline again (every step is idempotent),
 * until their slot answers. Nothing here is durable: the offset commit of a partition
 * stops at its lowest parked order (parking_floor), so a restart or a rebalance replays
 * them from Kafka. No I/O here.
 *
 * A run (an activity's bucket) with orders waiting parks its later orders too, without
 * trying them, so they never overtake the older ones. */

struct parked {
    struct orderevent ev;
    int32_t partition;
    int64_t offset;
    uint64_t batch;   /* serial of the batch it was fed into again; 0: waiting */
};

struct parking {
    struct parked *items;
    size_t count;
    size_t cap;
    size_t max;             /* no more than this many: beyond, the step retries whole */
    int64_t min_delay_ms;
    int64_t max_delay_ms;
    int64_t delay_ms;       /* before the next feed, doubling while they park again */
    int64_t feed_at_ms;     /* monotonic */
    bool setback;           /* an order fed since the last feed was parked again */
};

void parking_init(struct parking *p, size_t max, int64_t min_delay_ms, int64_t max_delay_ms);
void parking_free(struct parking *p);

/* Room for n more orders. */
bool parking_has_room(const struct parking *p, size_t n);
/* True when orders of this activity and bucket wait in the lot (not fed into a batch). */
bool parking_waits_for(const struct parking *p, int64_t activity_id, const char *bucket_tag);
/* Parks ev from partition/offset; one already parked waits again. Returns 0, or -1 out of
 * memory (then it is not parked: the caller's step fails and retries whole). */
int parking_add(struct parking *p, const struct orderevent *ev, int32_t partition, int64_t offset,
                int64_t now_ms);
/* Feeds waiting orders into b (serial b_serial) once their delay is over: whole runs,
 * oldest first, until limit is reached. Returns the count fed, or -1 out of memory. */
int parking_feed(struct parking *p, struct batch *b, uint64_t b_serial, size_t limit, int64_t now_ms);
/* The batch of that serial is done: its fed orders that did not park again leave. */
void parking_finish(struct parking *p, uint64_t b_serial);
/* The next offset a commit of partition may name: the lowest parked offset there, or
 * INT64_MAX when none is parked there. */
int64_t parking_floor(const struct parking *p, int32_t partition);
/* A rebalance took the partition: its new owner replays its parked orders. */
size_t parking_drop_partition(struct parking *p, int32_t partition);

#endif
