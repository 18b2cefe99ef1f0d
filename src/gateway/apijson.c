#include "gateway/apijson.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/couponterms.h"
#include "common/timeparse.h"

void apijson_money(cJSON *j, const char *name, int64_t cents)
{
    char text[32];
    couponterms_format_cents(cents, text, sizeof(text));
    cJSON_AddStringToObject(j, name, text);
}

void apijson_time(cJSON *j, const char *name, int64_t ms)
{
    char text[40];
    timeparse_format(ms, text, sizeof(text));
    cJSON_AddStringToObject(j, name, text);
}

void apijson_terms(cJSON *j, const struct usercoupon *uc)
{
    if (uc->name[0])
        cJSON_AddStringToObject(j, "name", uc->name);
    else
        cJSON_AddNullToObject(j, "name");  /* a record written before names were kept */
    cJSON_AddStringToObject(j, "type", couponterms_type_name(uc->terms.type));
    if (uc->terms.type == COUPON_CASH)
        apijson_money(j, "amount", uc->terms.amount);
    if (uc->terms.type == COUPON_DISCOUNT) {
        char rate[32];
        snprintf(rate, sizeof(rate), "%" PRId64 ".%04" PRId64, uc->terms.rate / COUPON_RATE_ONE,
                 uc->terms.rate % COUPON_RATE_ONE);
        cJSON_AddStringToObject(j, "rate", rate);
        apijson_money(j, "maxDiscount", uc->terms.max_discount);
    }
    apijson_money(j, "minOrder", uc->terms.min_order);
    apijson_time(j, "validFrom", uc->start_ms);
    apijson_time(j, "validUntil", uc->end_ms);
}
