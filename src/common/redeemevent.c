#include "common/redeemevent.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

#define USEEVENT_TYPE "coupon.used"

int redeemevent_encode(const struct redeemevent *ev, char *buf, size_t len)
{
    /* The order reference is limited to [A-Za-z0-9_.:-]: nothing to escape. */
    char user[JSON_ID_LEN];
    int n = snprintf(buf, len,
                     "{\"type\":\"" USEEVENT_TYPE "\",\"userCouponId\":%" PRId64 ",\"userId\":%s"
                     ",\"orderRef\":\"%s\","
                     "\"discount\":%" PRId64 ",\"payable\":%" PRId64 ",\"usedAt\":%" PRId64 "}",
                     ev->user_coupon_id, json_id_text(user, ev->user_id), ev->order_ref, ev->discount,
                     ev->payable, ev->used_ms);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

bool redeemevent_is(const char *data, size_t len)
{
    static const char marker[] = "\"type\":\"" USEEVENT_TYPE "\"";
    size_t m = sizeof(marker) - 1;
    for (size_t i = 0; i + m <= len; i++)
        if (memcmp(data + i, marker, m) == 0)
            return true;
    return false;
}

int redeemevent_decode(const char *data, size_t len, struct redeemevent *ev, char *err, size_t errlen)
{
    memset(ev, 0, sizeof(*ev));
    cJSON *j = json_parse_object(data, len, err, errlen);
    if (!j)
        return -1;
    int rc = -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(j, "orderRef");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, USEEVENT_TYPE) != 0) {
        snprintf(err, errlen, "type: not %s", USEEVENT_TYPE);
        goto out;
    }
    if (!cJSON_IsString(ref) || !usercoupon_valid_ref(ref->valuestring)) {
        snprintf(err, errlen, "orderRef: missing or malformed");
        goto out;
    }
    if (json_get_int(j, "userCouponId", 1, &ev->user_coupon_id, err, errlen) != 0 ||
        json_get_id(j, "userId", 1, &ev->user_id, err, errlen) != 0 ||
        json_get_int(j, "discount", 0, &ev->discount, err, errlen) != 0 ||
        json_get_int(j, "payable", 0, &ev->payable, err, errlen) != 0 ||
        json_get_int(j, "usedAt", 0, &ev->used_ms, err, errlen) != 0)
        goto out;
    strcpy(ev->order_ref, ref->valuestring);
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}
