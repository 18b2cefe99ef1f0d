#include "consumer/counters.h"

#include <inttypes.h>
#include <stdlib.h>

#include "common/log.h"
#include "consumer/sqltx.h"

int counters_add(struct counters *c, int64_t id, uint64_t first, uint64_t second)
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

int counters_apply(struct sqltx *tx)
{
    uint64_t n;
    counters_coalesce(&tx->activities);
    counters_coalesce(&tx->coupons);
    for (size_t i = 0; i < tx->activities.count; i++) {
        const struct counters_delta *d = &tx->activities.v[i];
        sqltext_reset(&tx->sql);
        sqltext_printf(&tx->sql,
                       "UPDATE seckill_activity SET sold_count = sold_count + %" PRIu64
                       " WHERE id = %" PRId64,
                       d->first, d->id);
        if (sqltx_run(tx, "update seckill_activity", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("activity %" PRId64 " has no seckill_activity row: sold_count not kept",
                     d->id);
    }
    for (size_t i = 0; i < tx->coupons.count; i++) {
        const struct counters_delta *d = &tx->coupons.v[i];
        sqltext_reset(&tx->sql);
        sqltext_printf(&tx->sql,
                       "UPDATE coupon SET issued_count = issued_count + %" PRIu64
                       ", used_count = used_count + %" PRIu64 " WHERE id = %" PRId64,
                       d->first, d->second, d->id);
        if (sqltx_run(tx, "update coupon", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("coupon %" PRId64 " has no coupon row: issued_count / used_count not kept",
                     d->id);
    }
    return 0;
}
