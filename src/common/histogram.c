#include "common/histogram.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

/* Upper bounds: microseconds for SECONDS, a number of items for COUNT. */
static const int64_t seconds_bounds[] = { 100, 250, 500, 1000, 2500, 5000, 10000, 25000,
                                          50000, 100000, 250000, 500000, 1000000, 2500000,
                                          5000000, 10000000, 30000000 };
static const int64_t count_bounds[] = { 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000,
                                        10000, 100000 };

_Static_assert(sizeof(seconds_bounds) / sizeof(seconds_bounds[0]) <= HISTOGRAM_MAX_BOUNDS, "bounds");
_Static_assert(sizeof(count_bounds) / sizeof(count_bounds[0]) <= HISTOGRAM_MAX_BOUNDS, "bounds");

static const int64_t *histogram_bounds(enum histogram_unit unit, size_t *n)
{
    if (unit == HISTOGRAM_SECONDS) {
        *n = sizeof(seconds_bounds) / sizeof(seconds_bounds[0]);
        return seconds_bounds;
    }
    *n = sizeof(count_bounds) / sizeof(count_bounds[0]);
    return count_bounds;
}

void histogram_observe(struct histogram *h, int64_t value)
{
    size_t n;
    const int64_t *bounds = histogram_bounds(h->unit, &n);
    size_t i = 0;
    while (i < n && value > bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, value, memory_order_relaxed);
}

/* name{labels} or name{labels,extra} or name: the series of one sample. */
static void histogram_series(struct textbuf *t, const char *name, const char *suffix,
                             const char *labels, const char *extra)
{
    const char *sep = labels[0] && extra[0] ? "," : "";
    if (labels[0] || extra[0])
        textbuf_printf(t, "%s%s{%s%s%s} ", name, suffix, labels, sep, extra);
    else
        textbuf_printf(t, "%s%s ", name, suffix);
}

void histogram_render(struct histogram *h, struct textbuf *t, const char *name, const char *labels)
{
    size_t n;
    const int64_t *bounds = histogram_bounds(h->unit, &n);
    uint64_t cumulative = 0;
    char le[48];
    for (size_t i = 0; i <= n; i++) {
        cumulative += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        if (i == n)
            snprintf(le, sizeof(le), "le=\"+Inf\"");
        else if (h->unit == HISTOGRAM_SECONDS)
            snprintf(le, sizeof(le), "le=\"%g\"", (double)bounds[i] / 1e6);
        else
            snprintf(le, sizeof(le), "le=\"%" PRId64 "\"", bounds[i]);
        histogram_series(t, name, "_bucket", labels, le);
        textbuf_printf(t, "%" PRIu64 "\n", cumulative);
    }
    int64_t sum = atomic_load_explicit(&h->sum, memory_order_relaxed);
    histogram_series(t, name, "_sum", labels, "");
    if (h->unit == HISTOGRAM_SECONDS)
        textbuf_printf(t, "%.6f\n", (double)sum / 1e6);
    else
        textbuf_printf(t, "%" PRId64 "\n", sum);
    histogram_series(t, name, "_count", labels, "");
    textbuf_printf(t, "%" PRIu64 "\n", cumulative);
}
