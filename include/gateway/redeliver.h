#ifndef SK_REDELIVER_H
#define SK_REDELIVER_H

#include <stdint.h>

#include "common/config.h"
#include "common/keys.h"
#include "gateway/activity.h"
#include "gateway/kafkaprod.h"
#include "gateway/queuedmarks.h"
#include "gateway/redisconn.h"

/* With seckill.order.reply-after-ack = false a client is told 200 as soon as its
 * reservation is made, so a reservation whose order never reached Kafka must not be
 * expired: that would turn the 200 into a lie. The reaper calls redeliver_stale instead
 * of expiring: redeliver.lua takes the reservations older than the cutoff (of the nodes
 * the reaper leaves to this gateway) and pushes each one seckill.pre-reduce-timeout into
 * the future, and each is produced to Kafka again, rebuilt from Redis alone (order number,
 * user, the sale's coupon, the bucket's tag, the time in the order number). Once Kafka
 * acknowledges it, it is marked queued like any order (queuedmarks.h); a delivery that
 * fails again is taken up by the next reaper pass. A copy too many in Kafka costs nothing:
 * the consumer writes an order once.
 *
 * Pending callbacks point at the struct: free it after both the Redis connection and the
 * Kafka producer. */

struct redeliver;

struct redeliver *redeliver_new(const struct config *cfg, struct redisconn *redis, struct kafkaprod *kafka,
                                struct queuedmarks *marks, struct activity_cache *activities);
void redeliver_free(struct redeliver *rd);

/* One redeliver.lua call on the reservations of one bucket of an activity (part 0 when not
 * bucketed); mode and nodes as release.lua's ("own" NODE or "except" ",a,b,"). */
void redeliver_stale(struct redeliver *rd, int64_t activity_id, int part, const struct keys_set *keys,
                     const char *cutoff_ms, const char *count, const char *mode, const char *nodes);

#endif
