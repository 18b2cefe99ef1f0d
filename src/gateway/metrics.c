#include "gateway/metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/histogram.h"
#include "common/textbuf.h"

#define METRICS_MAX_ROUTES 32
#define METRICS_MAX_STATUSES 32

#define METRICS_NAME(id, name, help) name,
#define METRICS_HELP(id, name, help) help,
static const char *const counter_names[] = { METRICS_COUNTERS(METRICS_NAME) };
static const char *const counter_help[] = { METRICS_COUNTERS(METRICS_HELP) };
static const char *const histogram_names[] = { METRICS_HISTOGRAMS(METRICS_NAME) };
static const char *const histogram_help[] = { METRICS_HISTOGRAMS(METRICS_HELP) };
#undef METRICS_NAME
#undef METRICS_HELP

/* The one process-wide instance: metrics are written from everywhere and read only by
 * metrics_render, on the same thread. */
static struct {
    uint64_t counters[METRICS_COUNTER_COUNT];
    struct histogram histograms[METRICS_HISTOGRAM_COUNT];  /* durations (SECONDS, 0) unless set below */
    const char *route_names[METRICS_MAX_ROUTES];
    uint64_t route_requests[METRICS_MAX_ROUTES];
    size_t route_count;
    struct {
        const char *status;  /* static strings from reply.c */
        int code;
        uint64_t count;
    } responses[METRICS_MAX_STATUSES];
    size_t response_count;
} metrics = { .histograms = { [METRIC_EXECUTE_BATCH_SIZE] = { .unit = HISTOGRAM_COUNT } } };

void metrics_inc(enum metrics_counter counter) { metrics.counters[counter]++; }

void metrics_add(enum metrics_counter counter, uint64_t n) { metrics.counters[counter] += n; }

void metrics_observe_us(enum metrics_histogram histogram, int64_t microseconds)
{
    histogram_observe(&metrics.histograms[histogram], microseconds);
}

void metrics_observe_count(enum metrics_histogram histogram, int64_t count)
{
    histogram_observe(&metrics.histograms[histogram], count);
}

void metrics_set_routes(const char *const *names, size_t count)
{
    if (count > METRICS_MAX_ROUTES)
        count = METRICS_MAX_ROUTES;
    for (size_t i = 0; i < count; i++)
        metrics.route_names[i] = names[i];
    metrics.route_count = count;
}

void metrics_request(size_t route)
{
    if (route < metrics.route_count)
        metrics.route_requests[route]++;
}

void metrics_response(int code, const char *status)
{
    for (size_t i = 0; i < metrics.response_count; i++) {
        if (metrics.responses[i].code == code && strcmp(metrics.responses[i].status, status) == 0) {
            metrics.responses[i].count++;
            return;
        }
    }
    if (metrics.response_count < METRICS_MAX_STATUSES) {
        metrics.responses[metrics.response_count].status = status;
        metrics.responses[metrics.response_count].code = code;
        metrics.responses[metrics.response_count].count = 1;
        metrics.response_count++;
    }
}

static void gauge(struct textbuf *t, const char *name, const char *help, uint64_t value)
{
    textbuf_printf(t, "# HELP %s %s\n# TYPE %s gauge\n%s %" PRIu64 "\n", name, help, name, name, value);
}

void metrics_render(const struct metrics_gauges *g, struct textbuf *t)
{
    textbuf_printf(t, "# HELP seckill_http_requests_total HTTP requests by route\n# TYPE "
                   "seckill_http_requests_total counter\n");
    for (size_t i = 0; i < metrics.route_count; i++)
        textbuf_printf(t, "seckill_http_requests_total{route=\"%s\"} %" PRIu64 "\n", metrics.route_names[i],
             metrics.route_requests[i]);
    textbuf_printf(t, "# HELP seckill_http_responses_total HTTP responses by API status\n# TYPE "
                   "seckill_http_responses_total counter\n");
    for (size_t i = 0; i < metrics.response_count; i++)
        textbuf_printf(t, "seckill_http_responses_total{status=\"%s\",code=\"%d\"} %" PRIu64 "\n",
             metrics.responses[i].status, metrics.responses[i].code, metrics.responses[i].count);
    for (size_t i = 0; i < METRICS_COUNTER_COUNT; i++)
        textbuf_printf(t, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", counter_names[i],
                       counter_help[i],
             counter_names[i], counter_names[i], metrics.counters[i]);
    for (size_t i = 0; i < METRICS_HISTOGRAM_COUNT; i++) {
        textbuf_printf(t, "# HELP %s %s\n# TYPE %s histogram\n", histogram_names[i], histogram_help[i],
                       histogram_names[i]);
        histogram_render(&metrics.histograms[i], t, histogram_names[i], "");
    }
    gauge(t, "seckill_in_flight_requests", "Requests waiting on Redis writes or Kafka", g->in_flight);
    gauge(t, "seckill_http_open_connections", "Open client connections", g->open_connections);
    gauge(t, "seckill_queued_marks_pending", "Kafka-acknowledged orders not yet marked queued in Redis",
          g->queuedmarks_pending);
    gauge(t, "seckill_redis_pending_commands", "Redis commands awaiting an answer", g->redis_pending);
    textbuf_printf(t, "# HELP seckill_redis_reconnects_total Redis connections lost and re-established\n"
             "# TYPE seckill_redis_reconnects_total counter\nseckill_redis_reconnects_total %" PRIu64 "\n",
         g->redis_reconnects);
    gauge(t, "seckill_kafka_queue_messages", "Messages in the Kafka producer's queue (unacknowledged)",
          g->kafka_queue);
    gauge(t, "seckill_redis_up", "1 when the Redis connection is up", g->redis_up);
    gauge(t, "seckill_kafka_up", "1 when a Kafka broker connection is up", g->kafka_up);
    gauge(t, "seckill_longpoll_waiting", "GET ...?wait=N requests held until their order is final",
          g->longpoll_waiting);
    gauge(t, "seckill_cached_winners",
          "Buyers the sale cache remembers to answer a sold-out sale's repeats locally; an ended sale's go",
          g->cached_winners);
    gauge(t, "seckill_archive_forwards_in_flight", "Reads of archived sales waiting on seckill-admin (at "
          "most 32)", g->admin_forwards);
}
