#ifndef SK_REAPER_H
#define SK_REAPER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/activity.h"
#include "common/config.h"
#include "common/orderno.h"
#include "gateway/nodelease.h"
#include "gateway/queuedmarks.h"
#include "gateway/redeliver.h"
#include "gateway/redisconn.h"

/* Expires reservations that never reached Kafka (older than seckill.pre-reduce-timeout
 * and not marked queued) on a timer: the stock returns, the user may try again, the
 * order becomes FAILED. release.lua is atomic, so gateways reaping at once never release
 * one reservation twice. Given a redeliver (seckill.order.reply-after-ack = false, where
 * a 200 goes out before Kafka has the order) it expires nothing and hands the same
 * reservations back to Kafka instead (redeliver.h).
 *
 * A reservation belongs to the gateway whose node id is in its order number. A gateway
 * reaps its own, and those of nodes it has seen without a lease (nodelease.c) for longer
 * than the grace, reaper_grace_ms: never those of another live gateway, which may have
 * delivered them to Kafka and not yet been able to mark them (Redis unreachable). The
 * grace is measured while this gateway is connected to Redis, and none is reaped but its
 * own for one grace after every (re)connect, so that after an outage the other gateways
 * have the time to come back, renew their leases and write their marks.
 *
 * Pending callbacks point at the reaper: free it after the Redis connection. */

struct reaper;

/* redeliver: NULL to expire stale reservations (reply-after-ack), else what hands them
 * back to Kafka; it must outlive the reaper's pending Redis calls like the reaper.
 * marks: this gateway's queued marks (NULL: none), whose orders it never expires. */
struct reaper *reaper_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                          struct activity_cache *activities, struct nodelease *lease,
                          struct redeliver *redeliver, const struct queuedmarks *marks);
void reaper_free(struct reaper *reaper);

/* node-lease-ms (a lease seen missing may just have been let lapse) + redis.reconnect-max-ms
 * (the other gateway's reconnect backoff) + http.request-timeout-ms (a delivery it has in
 * flight, which it still marks). */
int64_t reaper_grace_ms(const struct config *cfg);

/* The reservations expired are those older than this (wall-clock ms): pre-reduce-timeout
 * before now, and never from the oldest order whose queued mark has not reached Redis
 * (oldest_mark_ms, INT64_MAX for none) on: that order is in Kafka and answered 200. Marks
 * are late only while Redis refuses them (a master that lost its replicas, a failover),
 * and the same reservation may then be found, replicated, on the master that follows:
 * expired there before its mark arrived, an order told 200 ended FAILED (a minority
 * master under load, docs/chaos.md P3). REAPER_MARK_SLACK_MS covers an order number
 * drawn a little after its reservation's time (orderno's clock never goes back). */
#define REAPER_MARK_SLACK_MS 1000
int64_t reaper_cutoff_ms(int64_t now_ms, int64_t pre_reduce_ms, int64_t oldest_mark_ms);

#define REAPER_NODES (ORDERNO_MAX_NODE + 1)
/* ",id" for every node but one, and the NUL. */
#define REAPER_KEEP_LEN (REAPER_NODES * 5 + 2)

/* The nodes whose reservations this gateway must leave alone, as ",a,b," for release.lua:
 * every live node but `own`, and every node first seen without a lease (dead_since_ms,
 * updated here from `live`; 0 for a live one) less than grace_ms before now_ms. */
void reaper_keep_list(const bool live[REAPER_NODES], int64_t dead_since_ms[REAPER_NODES], int own,
                      int64_t now_ms, int64_t grace_ms, char out[REAPER_KEEP_LEN]);

#endif
