#include "gateway/metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/exposition.h"
#include "common/histogram.h"
#include "common/textbuf.h"

#define METRICS_MAX_ROUTES 32
#define METRICS_MAX_STATUSES 32

static const struct exposition_def defs[] = { METRICS_LIST(EXPOSITION_DEF) };

/* The one process-wide instance: metrics are written from everywhere and read only by
 * metrics_render, on the same thread. */
#define METRICS_UNIT(id, kind, name, labels, help) EXPOSITION_HISTOGRAM(METRIC_##id, kind)
static struct {
    uint64_t values[METRICS_COUNT];
    struct histogram histograms[METRICS_COUNT];   /* those of counters and gauges unused */
    const char *route_names[METRICS_MAX_ROUTES];
    uint64_t route_requests[METRICS_MAX_ROUTES];
    size_t route_count;
    struct {
        const char *status;  /* static strings from reply.c */
        int code;
        uint64_t count;
    } responses[METRICS_MAX_STATUSES];
    size_t response_count;
} metrics = { .histograms = { METRICS_LIST(METRICS_UNIT) } };
#undef METRICS_UNIT

void metrics_inc(enum metrics_id id) { metrics.values[id]++; }

void metrics_add(enum metrics_id id, uint64_t n) { metrics.values[id] += n; }

void metrics_set(enum metrics_id id, uint64_t value) { metrics.values[id] = value; }

void metrics_observe(enum metrics_id id, int64_t value) { histogram_observe(&metrics.histograms[id], value); }

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

static uint64_t value_of(size_t i, void *arg)
{
    (void)arg;
    return metrics.values[i];
}

void metrics_render(struct textbuf *t)
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
    exposition_render(t, defs, METRICS_COUNT, value_of, NULL, metrics.histograms);
}
