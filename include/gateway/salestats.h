#ifndef SK_SALESTATS_H
#define SK_SALESTATS_H

#include <event2/event.h>
#include <stdint.h>

#include "common/config.h"
#include "common/textbuf.h"
#include "gateway/activity.h"
#include "gateway/redisconn.h"

/* Per-sale gauges for /metrics, read from Redis by salestats.lua on a timer
 * (seckill.sale-stats-interval-ms), never on the request path: the six terms of
 * invariant I3 (so that an alert sees a broken balance while the sale runs, not only
 * `seckillctl verify` afterwards) and the age of the oldest reservation not yet in Kafka
 * (so that a reaper that stopped expiring them shows).
 *
 * Every term is a counter or a cardinality (O(1) on Redis, whatever the size of the sale).
 * A sale is watched from its warm-up until SALESTATS_AFTER_END_MS after its end. A sale
 * whose last read failed (Redis down) is left out of the page rather than shown stale; a
 * sale with no 'sold' counter (warmed before it existed) is shown without its sold units
 * and its imbalance, which would be wrong by the unknown count.
 *
 * Pending callbacks point at the salestats: free it after the Redis connection. */

#define SALESTATS_AFTER_END_MS (3600 * 1000)
#define SALESTATS_UNKNOWN (-1)

/* One salestats.lua answer. */
struct salestats_sale {
    int64_t stock;      /* initial */
    int64_t left;
    int64_t reserved;
    int64_t queued;
    int64_t claimed;
    int64_t sold;       /* orders SUCCESS, SALESTATS_UNKNOWN: the sale has no counter */
    int64_t returned;   /* unsold stock taken off by a cancel */
    int64_t oldest_ms;  /* accept time of the oldest reservation, -1: none */
};

struct salestats;

/* NULL when out of memory; with an interval of 0 it reads nothing and shows nothing. */
struct salestats *salestats_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                                struct activity_cache *activities);
void salestats_free(struct salestats *stats);

/* The gauge families, appended to a /metrics page; now_ms (wall clock, the one the
 * reservations are scored by) ages the oldest reservation. */
void salestats_render(const struct salestats *stats, struct textbuf *t, int64_t now_ms);

/* Takes one salestats.lua reply for sale `id` (what the timer's callback does): the sale
 * is shown from then on, or left off the page when the reply is not a valid answer
 * (NULL: Redis failed). Returns 0 when shown. */
int salestats_apply(struct salestats *stats, int64_t id, const redisReply *reply);
/* left + reserved + queued + claimed + sold + returned - stock: 0 while I3 holds. */
int64_t salestats_imbalance(const struct salestats_sale *sale);
/* Fills sale from a salestats.lua reply; -1 when it is not one (or says "not warmed"). */
int salestats_from_reply(struct salestats_sale *sale, const redisReply *reply);

#endif
