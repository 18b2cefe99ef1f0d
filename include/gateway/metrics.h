#ifndef SK_METRICS_H
#define SK_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/textbuf.h"


/* The gateway's Prometheus metrics, declared once here (name, help) and rendered by
 * metrics_render. Plain counters in one process: the gateway is single-threaded. */

#define METRICS_COUNTERS(X)                                                                      \
    X(ORDERS_ACCEPTED, "seckill_orders_accepted_total", "Orders reserved in Redis and durably in Kafka") \
    X(ORDERS_ROLLED_BACK, "seckill_orders_rolled_back_total", "Reservations undone after Kafka refused or " \
      "failed the order") \
    X(RELEASE_RETRIES, "seckill_release_retries_total", "Rollbacks of orders already given to Kafka sent " \
      "again because Redis gave no verdict (their answer waits for one)") \
    X(RESERVATIONS_EXPIRED, "seckill_reservations_expired_total", \
      "Reservations the reaper expired (never reached Kafka)") \
    X(ORDERS_REDELIVERED, "seckill_orders_redelivered_total", "Orders answered 200 before Kafka had them " \
      "(reply-after-ack off) produced again: after a failed delivery, or by a reaper for a stale " \
      "reservation") \
    X(KAFKA_DELIVERY_FAILURES, "seckill_kafka_delivery_failures_total", \
      "Kafka produce or delivery failures") \
    X(REDIS_TIMEOUTS, "seckill_redis_timeouts_total", "Times the Redis connection was dropped for missing " \
      "its deadline") \
    X(REDIS_WAIT_SHORT, "seckill_redis_wait_short_total", "Script calls whose WAIT counted fewer than " \
      "redis.wait-replicas replicas (their reservations rolled back, their queued marks sent again)") \
    X(LOCAL_ANSWERS, "seckill_local_answers_total", "execute requests answered from the local cache " \
      "without I/O") \
    X(COUPONS_REDEEMED, "seckill_coupons_redeemed_total", "Coupon redemptions recorded in Kafka") \
    X(ACCEPT_PAUSES, "seckill_http_accept_pauses_total", "Times accepting paused at http.max-connections") \
    X(ACCEPT_FAILURES, "seckill_http_accept_failures_total", "Times accepting paused because accept() " \
      "failed (no descriptor left)") \
    X(HEADER_TIMEOUTS, "seckill_http_header_timeouts_total", "Connections closed for not completing a " \
      "request within http.header-timeout-ms") \
    X(RATE_LIMITED_LOCAL_IP, "seckill_rate_limited_local_ip_total", \
      "execute requests refused by the local per-IP limit (the global bucket not charged)") \
    X(RATE_LIMITED_GLOBAL, "seckill_rate_limited_global_total", "execute requests refused by the global " \
      "token bucket") \
    X(BUCKET_EMPTY_RETRIES, "seckill_bucket_empty_retries_total", \
      "execute requests answered 503 because their bucket was empty while others had stock") \
    X(REBALANCE_UNITS, "seckill_rebalance_units_total", "Units of stock this gateway moved between the " \
      "buckets of bucketed sales") \
    X(LONGPOLL_WAKEUPS, "seckill_longpoll_wakeups_total", "Held GET ...?wait=N requests answered because " \
      "their order became final") \
    X(LONGPOLL_EXPIRED, "seckill_longpoll_expired_total", "Held requests whose wait ended before their " \
      "order was final (answered with its status then)") \
    X(LONGPOLL_GONE, "seckill_longpoll_gone_total", "Held requests whose client hung up before the answer") \
    X(LONGPOLL_REFUSED, "seckill_longpoll_refused_total", "wait=N requests refused with 503 at " \
      "http.max-waiting") \
    X(ARCHIVED_READS, "seckill_archived_reads_total", "Stock, result and order reads of archived sales " \
      "answered, from the activity hash or through seckill-admin") \
    X(ARCHIVE_FORWARD_FAILURES, "seckill_archive_forward_failures_total", \
      "Reads of archived sales answered 503: seckill-admin off, unreachable, slow, refusing, or too many " \
      "forwards at once")

#define METRICS_HISTOGRAMS(X)                                                                    \
    X(EXECUTE_LATENCY, "seckill_execute_duration_seconds", "POST /seckill/execute from parse to reply, " \
      "when it reached Redis") \
    X(REDIS_ROUNDTRIP, "seckill_redis_roundtrip_seconds", "Redis command round trips") \
    X(KAFKA_DELIVERY, "seckill_kafka_delivery_seconds", "Kafka produce to delivery report") \
    X(EXECUTE_BATCH_SIZE, "seckill_execute_batch_size", "Execute requests carried by one execute.lua call " \
      "(one pass of the event loop, one activity)")

#define METRICS_ENUM(id, name, help) METRIC_##id,
enum metrics_counter { METRICS_COUNTERS(METRICS_ENUM) METRICS_COUNTER_COUNT };
enum metrics_histogram { METRICS_HISTOGRAMS(METRICS_ENUM) METRICS_HISTOGRAM_COUNT };
#undef METRICS_ENUM

void metrics_inc(enum metrics_counter counter);
void metrics_add(enum metrics_counter counter, uint64_t n);
void metrics_observe_us(enum metrics_histogram histogram, int64_t microseconds);
/* For the histograms of counts (EXECUTE_BATCH_SIZE). */
void metrics_observe_count(enum metrics_histogram histogram, int64_t count);
/* Requests by route (index into the router's table, names given at start-up). */
void metrics_set_routes(const char *const *names, size_t count);
void metrics_request(size_t route);
/* Responses by API status; code 200 counts as "OK". */
void metrics_response(int code, const char *status);

struct metrics_gauges {
    uint64_t in_flight;
    uint64_t open_connections;
    uint64_t queuedmarks_pending;
    uint64_t redis_pending;
    uint64_t redis_reconnects;
    uint64_t kafka_queue;
    uint64_t redis_up;
    uint64_t kafka_up;
    uint64_t longpoll_waiting;
    uint64_t cached_winners;
    uint64_t admin_forwards;
};

/* Appends the counters, histograms and gauges to t in Prometheus's text exposition format.
 * The page's other families (the per-sale gauges) are their owners' to append. */
void metrics_render(const struct metrics_gauges *gauges, struct textbuf *t);

#endif
