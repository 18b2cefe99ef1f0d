#ifndef SK_EXPOSITION_H
#define SK_EXPOSITION_H

#include <stddef.h>
#include <stdint.h>

#include "common/histogram.h"
#include "common/textbuf.h"

/* Prometheus's text exposition of a list of metrics, in the one shape every binary declares
 * its own in: X(id, kind, name, labels, help). Entries of one family (the same name) are
 * adjacent and differ by their labels (`key="value",...` or ""); HELP and TYPE are written
 * once per family, from its first entry. Kinds: COUNTER, GAUGE, SECONDS (a histogram of
 * durations observed in microseconds), COUNT (a histogram of sizes). */

enum exposition_kind { EXPOSITION_COUNTER, EXPOSITION_GAUGE, EXPOSITION_SECONDS, EXPOSITION_COUNT };

struct exposition_def {
    enum exposition_kind kind;
    const char *name;
    const char *labels;
    const char *help;
};

/* An initializer of struct exposition_def from a list entry. */
#define EXPOSITION_DEF(id, kind, name, labels, help) { EXPOSITION_##kind, name, labels, help },
/* An initializer of the histogram of a list entry, by its index: its unit. */
#define EXPOSITION_HISTOGRAM(index, kind) \
    [index] = { .unit = EXPOSITION_##kind == EXPOSITION_COUNT ? HISTOGRAM_COUNT : HISTOGRAM_SECONDS },

/* Appends defs[0..n) to t: value(i, arg) for counters and gauges, histograms[i] for the two
 * histogram kinds (histograms has n entries; those of counters and gauges are unused). */
void exposition_render(struct textbuf *t, const struct exposition_def *defs, size_t n,
                       uint64_t (*value)(size_t i, void *arg), void *arg, struct histogram *histograms);

#endif
