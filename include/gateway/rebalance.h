#ifndef SK_REBALANCE_H
#define SK_REBALANCE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/activity.h"
#include "gateway/redisconn.h"

/* Moves stock between the buckets of a bucketed sale (bucket.h) so that a user whose
 * bucket runs out is not refused while other buckets still hold stock. A pass every
 * seckill.rebalance-interval-ms (and soon after a request found its bucket empty):
 *
 *   1. view every bucket (rebalance.lua 'view'): its stock and its outbound transfers;
 *   2. finish every transfer found ('in' on its destination, then 'done' on the source);
 *   3. if rebalance_plan says so, move units from the fullest bucket to the emptiest one
 *      ('out', then 'in', then 'done').
 *
 * Each step is one atomic script on one bucket and safe to repeat, so any number of
 * gateways may run passes at once, and a crash between steps leaves units "in transit"
 * (counted by verify's I3), which the next pass of any gateway delivers. Stock is only
 * ever moved: 'in' adds what an 'out' took, once per transfer id (docs/protocol.md,
 * "Buckets and rebalance"). */

struct rebalance;

struct rebalance *rebalance_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                                struct activity_cache *activities);
void rebalance_free(struct rebalance *rb);
/* A request found its bucket empty: run a pass at the next loop pass instead of waiting
 * for the timer (no-op while one is in flight or when rebalancing is off). */
void rebalance_soon(struct rebalance *rb);

/* Pure: the one move to make among n buckets with these stocks (starved: a request found
 * the bucket empty since the last pass), as from, to and units; false when none. A bucket
 * is refilled when it is empty and starved, or holds at most half the average while the
 * fullest holds at least 2 more; it gets half the difference (at least 1). */
bool rebalance_plan(const int64_t *stock, const bool *starved, int n, int *from, int *to, int64_t *units);

#endif
