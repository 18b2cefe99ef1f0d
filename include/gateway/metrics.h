#ifndef SK_METRICS_H
#define SK_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/textbuf.h"


/* The gateway's Prometheus metrics, declared once here in the shape of common/exposition.h,
 * X(id, kind, name, labels, help), and rendered by metrics_render. Plain values in one
 * process: the gateway is single-threaded. The gauges are set just before a render. */

#define METRICS_LIST(X)                                                                                  \
    X(ORDERS_ACCEPTED, COUNTER, "seckill_orders_accepted_total", "",                                     \
      "Orders reserved in Redis and durably in Kafka")                                                   \
    X(ORDERS_ROLLED_BACK, COUNTER, "seckill_orders_rolled_back_total", "",                               \
      "Reservations undone after Kafka refused or failed the order")                                     \
    X(RELEASE_RETRIES, COUNTER, "seckill_release_retries_total", "",                                     \
      "Rollbacks of orders already given to Kafka sent again because Redis gave no verdict (their "      \
      "answer waits for one)")                                                                           \
    X(RESERVATIONS_EXPIRED, COUNTER, "seckill_reservations_expired_total", "",                           \
      "Reservations the reaper expired (never reached Kafka)")                                           \
    X(ORDERS_REDELIVERED, COUNTER, "seckill_orders_redelivered_total", "",                               \
      "Orders answered 200 before Kafka had them (reply-after-ack off) produced again: after a failed "  \
      "delivery, or by a reaper for a stale reservation")                                                \
    X(KAFKA_DELIVERY_FAILURES, COUNTER, "seckill_kafka_delivery_failures_total", "",                     \
      "Kafka produce or delivery failures")                                                              \
    X(REDIS_TIMEOUTS, COUNTER, "seckill_redis_timeouts_total", "",                                       \
      "Times the Redis connection was dropped for missing its deadline")                                 \
    X(REDIS_WAIT_SHORT, COUNTER, "seckill_redis_wait_short_total", "",                                   \
      "Script calls whose WAIT counted fewer than redis.wait-replicas replicas (their reservations "     \
      "rolled back, their queued marks sent again)")                                                     \
    X(LOCAL_ANSWERS, COUNTER, "seckill_local_answers_total", "",                                         \
      "execute requests answered from the local cache without I/O")                                      \
    X(COUPONS_REDEEMED, COUNTER, "seckill_coupons_redeemed_total", "",                                   \
      "Coupon redemptions recorded in Kafka")                                                            \
    X(ACCEPT_PAUSES, COUNTER, "seckill_http_accept_pauses_total", "",                                    \
      "Times accepting paused at http.max-connections")                                                  \
    X(ACCEPT_FAILURES, COUNTER, "seckill_http_accept_failures_total", "",                                \
      "Times accepting paused because accept() failed (no descriptor left)")                             \
    X(HEADER_TIMEOUTS, COUNTER, "seckill_http_header_timeouts_total", "",                                \
      "Connections closed for not completing a request within http.header-timeout-ms")                   \
    X(RATE_LIMITED_LOCAL_IP, COUNTER, "seckill_rate_limited_local_ip_total", "",                         \
      "execute requests refused by the local per-IP limit (the global bucket not charged)")              \
    X(RATE_LIMITED_GLOBAL, COUNTER, "seckill_rate_limited_global_total", "",                             \
      "execute requests refused by the global token bucket")                                             \
    X(BANS_REFUSED, COUNTER, "seckill_bans_refused_total", "",                                           \
      "execute and token requests refused because a manual ban (seckillctl ban) holds their user or "    \
      "address")                                                                                         \
    X(BUCKET_EMPTY_RETRIES, COUNTER, "seckill_bucket_empty_retries_total", "",                           \
      "execute requests answered 503 because their bucket was empty while others had stock")             \
    X(REBALANCE_UNITS, COUNTER, "seckill_rebalance_units_total", "",                                     \
      "Units of stock this gateway moved between the buckets of bucketed sales")                         \
    X(LONGPOLL_WAKEUPS, COUNTER, "seckill_longpoll_wakeups_total", "",                                   \
      "Held GET ...?wait=N requests answered because their order became final")                          \
    X(LONGPOLL_EXPIRED, COUNTER, "seckill_longpoll_expired_total", "",                                   \
      "Held requests whose wait ended before their order was final (answered with its status then)")     \
    X(LONGPOLL_GONE, COUNTER, "seckill_longpoll_gone_total", "",                                         \
      "Held requests whose client hung up before the answer")                                            \
    X(LONGPOLL_REFUSED, COUNTER, "seckill_longpoll_refused_total", "",                                   \
      "wait=N requests refused with 503 at http.max-waiting")                                            \
    X(ARCHIVED_READS, COUNTER, "seckill_archived_reads_total", "",                                       \
      "Stock, result and order reads of archived sales answered, from the activity hash or through "     \
      "seckill-admin")                                                                                   \
    X(ARCHIVE_FORWARD_FAILURES, COUNTER, "seckill_archive_forward_failures_total", "",                   \
      "Reads of archived sales answered 503: seckill-admin off, unreachable, slow, refusing, or too "    \
      "many forwards at once")                                                                           \
    X(EXECUTE_LATENCY, SECONDS, "seckill_execute_duration_seconds", "",                                  \
      "POST /seckill/execute from parse to reply, when it reached Redis")                                \
    X(REDIS_ROUNDTRIP, SECONDS, "seckill_redis_roundtrip_seconds", "",                                   \
      "Redis command round trips")                                                                       \
    X(KAFKA_DELIVERY, SECONDS, "seckill_kafka_delivery_seconds", "",                                     \
      "Kafka produce to delivery report")                                                                \
    X(EXECUTE_BATCH_SIZE, COUNT, "seckill_execute_batch_size", "",                                       \
      "Execute requests carried by one execute.lua call (one pass of the event loop, one activity)")     \
    X(IN_FLIGHT, GAUGE, "seckill_in_flight_requests", "",                                                \
      "Requests waiting on Redis writes or Kafka")                                                       \
    X(OPEN_CONNECTIONS, GAUGE, "seckill_http_open_connections", "",                                      \
      "Open client connections")                                                                         \
    X(QUEUED_MARKS_PENDING, GAUGE, "seckill_queued_marks_pending", "",                                   \
      "Kafka-acknowledged orders not yet marked queued in Redis")                                        \
    X(REDIS_PENDING, GAUGE, "seckill_redis_pending_commands", "",                                        \
      "Redis commands awaiting an answer")                                                               \
    X(REDIS_RECONNECTS, COUNTER, "seckill_redis_reconnects_total", "",                                   \
      "Redis connections lost and re-established")                                                       \
    X(KAFKA_QUEUE, GAUGE, "seckill_kafka_queue_messages", "",                                            \
      "Messages in the Kafka producer's queue (unacknowledged)")                                         \
    X(REDIS_UP, GAUGE, "seckill_redis_up", "",                                                           \
      "1 when the Redis connection is up")                                                               \
    X(KAFKA_UP, GAUGE, "seckill_kafka_up", "",                                                           \
      "1 when a Kafka broker connection is up")                                                          \
    X(LONGPOLL_WAITING, GAUGE, "seckill_longpoll_waiting", "",                                           \
      "GET ...?wait=N requests held until their order is final")                                         \
    X(BANS_IN_FORCE, GAUGE, "seckill_bans_in_force", "",                                                 \
      "Manual bans in force on this gateway, as of its last read of seckill:bans")                       \
    X(CACHED_WINNERS, GAUGE, "seckill_cached_winners", "",                                               \
      "Buyers the sale cache remembers to answer a sold-out sale's repeats locally; an ended sale's go") \
    X(ARCHIVE_FORWARDS, GAUGE, "seckill_archive_forwards_in_flight", "",                                 \
      "Reads of archived sales waiting on seckill-admin (at most 32)")

#define METRICS_ENUM(id, kind, name, labels, help) METRIC_##id,
enum metrics_id { METRICS_LIST(METRICS_ENUM) METRICS_COUNT };
#undef METRICS_ENUM

void metrics_inc(enum metrics_id id);
void metrics_add(enum metrics_id id, uint64_t n);
/* A gauge's value now. */
void metrics_set(enum metrics_id id, uint64_t value);
/* A histogram's observation: a duration in microseconds (SECONDS) or a size (COUNT). */
void metrics_observe(enum metrics_id id, int64_t value);
/* Requests by route (index into the router's table, names given at start-up). */
void metrics_set_routes(const char *const *names, size_t count);
void metrics_request(size_t route);
/* Responses by API status; code 200 counts as "OK". */
void metrics_response(int code, const char *status);

/* Appends the requests by route, the responses by status and METRICS_LIST to t in
 * Prometheus's text exposition format. The page's other families (the per-sale gauges)
 * are their owners' to append. */
void metrics_render(struct textbuf *t);

#endif
