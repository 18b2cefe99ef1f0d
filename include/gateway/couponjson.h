#ifndef SK_COUPONJSON_H
#define SK_COUPONJSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/usercoupon.h"

/* How the read API shows a coupon's terms: the same fields in GET /coupons (a user's
 * coupons) and GET /seckill/activities (what a sale gives). Money as yuan strings
 * ("12.34"), rates as the share paid ("0.8500"), times as ISO-8601 in UTC. */

/* Adds name (null when the record has none), type, amount (CASH), rate and maxDiscount
 * (DISCOUNT), minOrder, validFrom and validUntil to j. */
void couponjson_terms(cJSON *j, const struct usercoupon *uc);
/* Adds cents as a yuan string. */
void couponjson_money(cJSON *j, const char *name, int64_t cents);
/* Adds epoch milliseconds as ISO-8601. */
void couponjson_time(cJSON *j, const char *name, int64_t ms);

#endif
