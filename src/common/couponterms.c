#include "common/couponterms.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* order x rate / 10000, rounded half up, without the 128-bit product: split the order
 * into whole ten-thousands and the rest so that neither partial product can overflow. */
static int64_t scale_half_up(int64_t order, int64_t rate)
{
    int64_t high = order / COUPON_RATE_ONE;
    int64_t low = order % COUPON_RATE_ONE;
    return high * rate + (low * rate + COUPON_RATE_ONE / 2) / COUPON_RATE_ONE;
}

enum coupon_verdict couponterms_apply(const struct coupon_terms *terms, int64_t order,
                                 int64_t *discount, int64_t *payable)
{
    if (order < 0 || terms->min_order < 0)
        return COUPON_BAD_INPUT;
    if (order < terms->min_order)
        return COUPON_BELOW_MIN_ORDER;
    int64_t off = 0;
    switch (terms->type) {
    case COUPON_CASH:
        if (terms->amount < 0)
            return COUPON_BAD_INPUT;
        off = terms->amount < order ? terms->amount : order;
        break;
    case COUPON_DISCOUNT:
        if (terms->rate < 1 || terms->rate > COUPON_RATE_ONE || terms->max_discount < 0)
            return COUPON_BAD_INPUT;
        off = order - scale_half_up(order, terms->rate);
        if (terms->max_discount > 0 && off > terms->max_discount)
            off = terms->max_discount;
        break;
    case COUPON_GIFT:
        off = 0;
        break;
    default:
        return COUPON_BAD_INPUT;
    }
    *discount = off;
    *payable = order - off;
    return COUPON_APPLIED;
}

static const char *const type_names[] = { "CASH", "DISCOUNT", "GIFT" };

const char *couponterms_type_name(enum coupon_type type)
{
    return (unsigned)type < sizeof(type_names) / sizeof(type_names[0]) ? type_names[type] : "UNKNOWN";
}

int couponterms_type_parse(const char *name, enum coupon_type *out)
{
    for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
        if (strcmp(name, type_names[i]) == 0) {
            *out = (enum coupon_type)i;
            return 0;
        }
    }
    return -1;
}

int couponterms_format_cents(int64_t cents, char *buf, size_t len)
{
    const char *sign = cents < 0 ? "-" : "";
    uint64_t magnitude = cents < 0 ? (uint64_t)0 - (uint64_t)cents : (uint64_t)cents;
    int n = snprintf(buf, len, "%s%" PRIu64 ".%02" PRIu64, sign, magnitude / 100, magnitude % 100);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}
