#ifndef SK_HISTOGRAM_H
#define SK_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/textbuf.h"

/* One Prometheus histogram type for both metrics pages. Relaxed C11 atomics: the
 * consumer's page is rendered by its own thread while the consumer observes; on the
 * single-threaded gateway an uncontended atomic add costs a few cycles.
 *
 * Buckets are not cumulative (summed when rendered); the last one is +Inf, and the count
 * is the sum of the buckets, so _count always equals the +Inf bucket. Static storage
 * zero-initialises a histogram; only its unit has to be set. */

enum histogram_unit {
    HISTOGRAM_SECONDS = 0,  /* observed in microseconds, 0.1 ms to 30 s, rendered in seconds */
    HISTOGRAM_COUNT,    /* observed and rendered as a count, 1 to 100,000 */
};

#define HISTOGRAM_MAX_BOUNDS 17

struct histogram {
    enum histogram_unit unit;
    atomic_uint_least64_t buckets[HISTOGRAM_MAX_BOUNDS + 1];
    atomic_int_least64_t sum;
};

void histogram_observe(struct histogram *h, int64_t value);
/* name_bucket{labels,le=...}, name_sum{labels}, name_count{labels}; labels is "" or
 * `key="value",...`. The HELP and TYPE lines are the caller's (one per family). */
void histogram_render(struct histogram *h, struct textbuf *t, const char *name, const char *labels);

#endif
