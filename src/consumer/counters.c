#include "consumer/counters.h"

#include <inttypes.h>
#include <stdlib.h>

int counters_add(struct counters *c, int64_t id, int64_t first, int64_t second)
{
    if (first == 0 && second == 0)
        return 0;
    if (c->count == c->cap) {
        size_t n = c->cap ? c->cap * 2 : 16;
        struct counters_delta *v = realloc(c->v, n * sizeof(*v));
        if (!v)
            return -1;
        c->v = v;
        c->cap = n;
    }
    c->v[c->count++] = (struct counters_delta){ id, first, second };
    return 0;
}

static int delta_cmp(const void *pa, const void *pb)
{
    const struct counters_delta *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

void counters_coalesce(struct counters *c)
{
    if (c->count < 2)
        return;
    qsort(c->v, c->count, sizeof(*c->v), delta_cmp);
    size_t kept = 1;
    for (size_t i = 1; i < c->count; i++) {
        if (c->v[i].id == c->v[kept - 1].id) {
            c->v[kept - 1].first += c->v[i].first;
            c->v[kept - 1].second += c->v[i].second;
        } else {
            c->v[kept++] = c->v[i];
        }
    }
    c->count = kept;
}

void counters_free(struct counters *c)
{
    free(c->v);
    c->v = NULL;
    c->count = c->cap = 0;
}
