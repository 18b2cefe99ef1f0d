#ifndef SK_REFUSALS_H
#define SK_REFUSALS_H

#include <event2/event.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/activity.h"
#include "gateway/redisconn.h"
#include "gateway/reply.h"

/* The refusals of POST /seckill/execute, counted per sale and reason, so that whoever runs
 * a sale sees why its buyers are turned away (sold out, a second order, the rate limits,
 * a ban, Redis or Kafka unavailable) while it runs: `seckillctl activity show`, the admin
 * API and the console's live view read them from the sale's activity hash.
 *
 * Counting is an increment in memory on the request path. Every
 * seckill.refusal-stats-interval-ms, refused.lua adds what one sale gathered since the
 * last add to the fields 'refused:<STATUS>' of that sale's activity hash (bucket 0's for a
 * bucketed sale): one script per sale that had refusals, however many it had. An add
 * Redis did not answer is kept and added with the next (one that ran but whose answer was
 * lost with the connection is then counted twice: these are a dashboard's figures, not
 * the sale's accounting). NOT_FOUND and INVALID name no
 * sale and are not counted; of the ids not in the activity cache (a sale created within
 * the last refresh) only a few are counted at once, so ids made up by a client cannot
 * grow the table, and refused.lua adds nothing where no sale is. What was counted since
 * the last add is lost when the gateway stops.
 *
 * Pending callbacks point at the refusals: free it after the Redis connection. */

struct refusals;

/* NULL when out of memory; with an interval of 0 it counts nothing. */
struct refusals *refusals_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                              struct activity_cache *activities);
void refusals_free(struct refusals *refusals);

/* One refusal (or UNAVAILABLE) of sale `activity_id`. */
void refusals_count(struct refusals *refusals, int64_t activity_id, enum reply_status status);

/* Sends what was counted (what the timer does); returns the number of sales sent. */
int refusals_flush(struct refusals *refusals);

#endif
