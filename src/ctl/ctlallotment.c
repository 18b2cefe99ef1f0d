#include "ctl/ctlallotment.h"

#include <inttypes.h>
#include <stdlib.h>

#include "ctl/ctlout.h"
#include "common/timeparse.h"

int64_t ctlallotment_holds(const struct ctlactivity_row *row, int64_t now_ms,
                           const struct ctlactivity_redis *rd)
{
    /* Archived: every order was final and in MySQL, and nothing can be sold any more. */
    if (row->archived)
        return 0;
    int64_t unsold = row->stock - row->sold_count;
    if (unsold < 0)
        unsold = 0;
    bool cancelled = ctlactivity_is_cancelled(row);
    if (cancelled && rd->warmed && !rd->cancelled)
        return unsold;
    if (!cancelled && now_ms < row->end_ms + CTLALLOTMENT_END_GRACE_MS)
        return unsold;
    /* Over. Without a stock key no order can be claimed any more (confirm.lua's lost-order
     * path needs stock), so nothing is in flight. */
    if (!rd->has_stock)
        return 0;
    int64_t in_flight = unsold - (rd->stock_left > 0 ? rd->stock_left : 0) - rd->returned;
    return in_flight > 0 ? in_flight : 0;
}

int64_t ctlallotment_remaining(const struct ctlallotment_count *c)
{
    int64_t left = c->total - c->issued - c->held;
    return left > 0 ? left : 0;
}

bool ctlallotment_fits(const struct ctlallotment_count *c, int64_t n)
{
    return n <= ctlallotment_remaining(c);
}

int ctlallotment_held(struct ctlrun *ctl, int64_t coupon_id, int64_t now_ms, bool lock, int64_t *held)
{
    struct ctlactivity_row *rows;
    size_t n;
    if (ctlactivity_list(ctl, coupon_id, lock, &rows, &n) != CTLRUN_OK)
        return CTLRUN_FAIL;
    /* Redis is read after the rows are locked: sold_count cannot move meanwhile (the
     * consumer's UPDATE waits for our COMMIT). Stock key + returned of an ended or
     * cancelled sale only grow afterwards (releases), which makes in-flight smaller, so
     * the sum read here is never too small. The one exception is confirm.lua's lost-order
     * path (Redis lost an order that Kafka still holds), which takes a unit from a
     * positive stock key even of an ended or cancelled sale; it only runs after Redis
     * lost writes. */
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        struct ctlactivity_redis rd;
        if (rows[i].archived)
            continue;   /* holds nothing, and its Redis side is gone */
        if (ctlactivity_read_redis(ctl, &rows[i], &rd) != CTLRUN_OK) {
            free(rows);
            return CTLRUN_FAIL;
        }
        sum += ctlallotment_holds(&rows[i], now_ms, &rd);
    }
    free(rows);
    *held = sum;
    return CTLRUN_OK;
}

int ctlallotment_read(struct ctlrun *ctl, int64_t coupon_id, int64_t now_ms, bool lock,
                      struct ctlallotment *out)
{
    /* Activities first, then the coupon: the consumer's order (sold_count, then
     * issued_count), so a grant and a batch commit never wait on each other in a cycle. */
    int64_t held;
    if (ctlallotment_held(ctl, coupon_id, now_ms, lock, &held) != CTLRUN_OK ||
        ctlcoupon_load(ctl, coupon_id, lock, &out->coupon) != CTLRUN_OK)
        return CTLRUN_FAIL;
    out->count.total = out->coupon.total;
    out->count.issued = out->coupon.issued;
    out->count.held = held;
    out->remaining = ctlallotment_remaining(&out->count);
    return CTLRUN_OK;
}

int ctlallotment_within_validity(struct ctlrun *ctl, const struct ctlallotment *al, int64_t start_ms,
                                 int64_t end_ms)
{
    const struct ctlcoupon_row *cp = &al->coupon;
    if (start_ms >= cp->start_ms && end_ms <= cp->end_ms)
        return CTLRUN_OK;
    char a[40], b[40], c[40], d[40];
    timeparse_format(start_ms, a, sizeof(a));
    timeparse_format(end_ms, b, sizeof(b));
    timeparse_format(cp->start_ms, c, sizeof(c));
    timeparse_format(cp->end_ms, d, sizeof(d));
    return ctlout_fail(ctl, "window %s .. %s is not inside coupon %" PRId64 "'s validity %s .. %s", a, b,
                       cp->id, c, d);
}
