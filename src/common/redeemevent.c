#include "common/redeemevent.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"

static const char *const type_names[] = {
    [REDEEMEVENT_USED] = "coupon.used",
    [REDEEMEVENT_REFUNDED] = "coupon.refunded",
};

const char *redeemevent_type(enum redeemevent_kind kind)
{
    return type_names[kind];
}

int redeemevent_encode(const struct redeemevent *ev, char *buf, size_t len)
{
    /* The order reference is limited to [A-Za-z0-9_.:-]: nothing to escape. */
    char user[JSON_ID_LEN];
    int n;
    if (ev->kind == REDEEMEVENT_REFUNDED)
        n = snprintf(buf, len,
                     "{\"type\":\"%s\",\"userCouponId\":%" PRId64 ",\"userId\":%s,\"orderRef\":\"%s\","
                     "\"refundedAt\":%" PRId64 ",\"seq\":%" PRId64 "}",
                     type_names[ev->kind], ev->user_coupon_id, json_id_text(user, ev->user_id),
                     ev->order_ref, ev->used_ms, ev->seq);
    else
        n = snprintf(buf, len,
                     "{\"type\":\"%s\",\"userCouponId\":%" PRId64 ",\"userId\":%s,\"orderRef\":\"%s\","
                     "\"discount\":%" PRId64 ",\"payable\":%" PRId64 ",\"usedAt\":%" PRId64
                     ",\"seq\":%" PRId64 "}",
                     type_names[ev->kind], ev->user_coupon_id, json_id_text(user, ev->user_id),
                     ev->order_ref, ev->discount, ev->payable, ev->used_ms, ev->seq);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

static bool holds(const char *data, size_t len, const char *marker)
{
    size_t m = strlen(marker);
    for (size_t i = 0; i + m <= len; i++)
        if (memcmp(data + i, marker, m) == 0)
            return true;
    return false;
}

bool redeemevent_is(const char *data, size_t len)
{
    /* Both types begin with "coupon.": one look finds either. */
    return holds(data, len, "\"type\":\"coupon.");
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
    if (cJSON_IsString(type) && strcmp(type->valuestring, type_names[REDEEMEVENT_REFUNDED]) == 0) {
        ev->kind = REDEEMEVENT_REFUNDED;
    } else if (!cJSON_IsString(type) || strcmp(type->valuestring, type_names[REDEEMEVENT_USED]) != 0) {
        snprintf(err, errlen, "type: neither %s nor %s", type_names[REDEEMEVENT_USED],
                 type_names[REDEEMEVENT_REFUNDED]);
        goto out;
    }
    if (!cJSON_IsString(ref) || !usercoupon_valid_ref(ref->valuestring)) {
        snprintf(err, errlen, "orderRef: missing or malformed");
        goto out;
    }
    bool used = ev->kind == REDEEMEVENT_USED;
    if (json_get_int(j, "userCouponId", 1, &ev->user_coupon_id, err, errlen) != 0 ||
        json_get_id(j, "userId", 1, &ev->user_id, err, errlen) != 0 ||
        (used && json_get_int(j, "discount", 0, &ev->discount, err, errlen) != 0) ||
        (used && json_get_int(j, "payable", 0, &ev->payable, err, errlen) != 0) ||
        json_get_int(j, used ? "usedAt" : "refundedAt", 0, &ev->used_ms, err, errlen) != 0)
        goto out;
    /* Required of a refund; a coupon.used from before seq existed has none. */
    if ((!used || cJSON_HasObjectItem(j, "seq")) && json_get_int(j, "seq", used ? 0 : 1, &ev->seq, err,
                                                                 errlen) != 0)
        goto out;
    strcpy(ev->order_ref, ref->valuestring);
    rc = 0;
out:
    cJSON_Delete(j);
    return rc;
}
