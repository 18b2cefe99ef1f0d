#include "common/exposition.h"

#include <inttypes.h>
#include <string.h>

void exposition_render(struct textbuf *t, const struct exposition_def *defs, size_t n,
                       uint64_t (*value)(size_t i, void *arg), void *arg, struct histogram *histograms)
{
    static const char *const types[] = {
        [EXPOSITION_COUNTER] = "counter", [EXPOSITION_GAUGE] = "gauge",
        [EXPOSITION_SECONDS] = "histogram", [EXPOSITION_COUNT] = "histogram",
    };
    for (size_t i = 0; i < n; i++) {
        const struct exposition_def *d = &defs[i];
        if (i == 0 || strcmp(d->name, defs[i - 1].name) != 0)
            textbuf_printf(t, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name, types[d->kind]);
        if (d->kind == EXPOSITION_SECONDS || d->kind == EXPOSITION_COUNT) {
            histogram_render(&histograms[i], t, d->name, d->labels);
            continue;
        }
        uint64_t v = value(i, arg);
        if (d->labels[0])
            textbuf_printf(t, "%s{%s} %" PRIu64 "\n", d->name, d->labels, v);
        else
            textbuf_printf(t, "%s %" PRIu64 "\n", d->name, v);
    }
}
