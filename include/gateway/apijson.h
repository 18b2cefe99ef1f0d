#ifndef SK_APIJSON_H
#define SK_APIJSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/usercoupon.h"

/* How the API writes values that need more than a number: money as yuan strings
 * ("12.34"), rates as the share paid ("0.8500"), times as ISO-8601 in UTC, and a coupon's
 * terms, the same fields in GET /coupons (a user's coupons) and GET /seckill/activities
 * (what a sale gives). */

/* Adds name (null when the record has none), type, amount (CASH), rate and maxDiscount
 * (DISCOUNT), minOrder, validFrom and validUntil to j. */
void apijson_terms(cJSON *j, const struct usercoupon *uc);
/* Adds cents as a yuan string. */
void apijson_money(cJSON *j, const char *name, int64_t cents);
/* Adds epoch milliseconds as ISO-8601. */
void apijson_time(cJSON *j, const char *name, int64_t ms);

#endif
