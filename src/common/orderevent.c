#include "common/orderevent.h"

#include "common/holder.h"
#include "common/json.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int orderevent_encode(const struct orderevent *ev, char *buf, size_t len)
{
    /* The order number is generated digits and a dash: nothing to escape. */
    char user[JSON_ID_LEN], activity[JSON_ID_LEN], slot[24] = "";
    if (ev->slot < 0 || ev->slot > HOLDER_MAX_SLOT)
        return -1;
    if (ev->slot > 1)
        snprintf(slot, sizeof(slot), ",\"userSlot\":%d", ev->slot);
    int n = snprintf(buf, len,
                     "{\"orderNo\":\"%s\",\"userId\":%s,\"activityId\":%s"
                     ",\"couponId\":%" PRId64 ",\"createdAt\":%" PRId64 "%s%s%s%s}",
                     ev->order_no, json_id_text(user, ev->user_id), json_id_text(activity, ev->activity_id),
                     ev->coupon_id, ev->created_ms,
                     ev->bucket_tag[0] ? ",\"bucketTag\":\"" : "", ev->bucket_tag, ev->bucket_tag[0] ? "\""
                     : "", slot);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int orderevent_holder(const struct orderevent *ev, char *buf, size_t len)
{
    return holder_format(buf, len, ev->user_id, ev->slot > 1 ? ev->slot : 1);
}

int orderevent_decode(const char *data, size_t len, struct orderevent *ev, char *err, size_t errlen)
{
    memset(ev, 0, sizeof(*ev));
    cJSON *root = json_parse_object(data, len, err, errlen);
    if (!root)
        return -1;
    int rc = -1;
    const cJSON *order_no = cJSON_GetObjectItemCaseSensitive(root, "orderNo");
    if (!cJSON_IsString(order_no) || strlen(order_no->valuestring) >= sizeof(ev->order_no)) {
        snprintf(err, errlen, "orderNo: missing or not a string");
        goto out;
    }
    if (json_get_id(root, "userId", 1, &ev->user_id, err, errlen) != 0 ||
        json_get_id(root, "activityId", 1, &ev->activity_id, err, errlen) != 0 ||
        json_get_int(root, "couponId", 0, &ev->coupon_id, err, errlen) != 0 ||
        json_get_int(root, "createdAt", 0, &ev->created_ms, err, errlen) != 0)
        goto out;
    uint64_t id;
    int64_t order_activity;
    if (orderno_parse(order_no->valuestring, &id, &order_activity) != 0 ||
        order_activity != ev->activity_id) {
        snprintf(err, errlen, "orderNo: '%s' is not an order number of activity %" PRId64,
                 order_no->valuestring, ev->activity_id);
        goto out;
    }
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(root, "bucketTag");
    if (tag && (!cJSON_IsString(tag) || !bucket_tag_valid(tag->valuestring, ev->activity_id))) {
        snprintf(err, errlen, "bucketTag: not a bucket tag of activity %" PRId64, ev->activity_id);
        goto out;
    }
    ev->slot = 1;
    if (cJSON_GetObjectItemCaseSensitive(root, "userSlot")) {
        int64_t slot;
        if (json_get_int(root, "userSlot", 2, &slot, err, errlen) != 0)
            goto out;
        if (slot > HOLDER_MAX_SLOT) {
            snprintf(err, errlen, "userSlot: above %d", HOLDER_MAX_SLOT);
            goto out;
        }
        ev->slot = (int)slot;
    }
    /* Bucket 0's tag is the activity id: stored as "", like an event without the field. */
    if (tag && strchr(tag->valuestring, '.'))
        snprintf(ev->bucket_tag, sizeof(ev->bucket_tag), "%s", tag->valuestring);
    strcpy(ev->order_no, order_no->valuestring);
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}
