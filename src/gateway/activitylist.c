#include "gateway/activitylist.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/json.h"
#include "gateway/activity.h"
#include "gateway/apijson.h"
#include "gateway/reply.h"

static int by_start(const void *x, const void *y)
{
    const struct activity *a = *(const struct activity *const *)x;
    const struct activity *b = *(const struct activity *const *)y;
    if (a->start_ms != b->start_ms)
        return a->start_ms < b->start_ms ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

void activitylist_sale(cJSON *j, int64_t id, const struct activity *a, int64_t stock_left, int64_t now_ms)
{
    json_add_int(j, "activityId", id);
    cJSON_AddStringToObject(j, "name", a->name);
    json_add_int(j, "couponId", a->coupon_id);
    cJSON_AddStringToObject(j, "status", activity_shown_status(a, now_ms));
    apijson_time(j, "startTime", a->start_ms);
    apijson_time(j, "endTime", a->end_ms);
    json_add_int(j, "stock", a->stock);
    json_add_int(j, "stockLeft", stock_left);
    json_add_int(j, "perUser", a->per_user > 1 ? a->per_user : 1);
    if (a->has_coupon)
        apijson_terms(cJSON_AddObjectToObject(j, "coupon"), &a->coupon);
    else
        cJSON_AddNullToObject(j, "coupon");  /* warmed before the hash kept the coupon's terms */
}

void activitylist_serve(struct gateway *gw, struct evhttp_request *req)
{
    int64_t now_ms = clock_wall_ms();
    size_t count = activity_cache_count(gw->activities);
    const struct activity **shown = malloc((count ? count : 1) * sizeof(*shown));
    if (!shown) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const struct activity *a = activity_cache_at(gw->activities, i);
        /* An archived or unwarmed sale is not listed; an ended or cancelled one is over. */
        if (!a->loaded || !a->listed)
            continue;
        enum activity_status status = activity_status_at(a, now_ms);
        if (status == ACTIVITY_PENDING || status == ACTIVITY_ACTIVE)
            shown[n++] = a;
    }
    qsort(shown, n, sizeof(*shown), by_start);
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    apijson_time(json, "serverTime", now_ms);
    json_add_int(json, "serverTimeMs", now_ms);
    cJSON *list = cJSON_AddArrayToObject(json, "activities");
    for (size_t i = 0; i < n && i < ACTIVITYLIST_MAX; i++) {
        const struct activity *a = shown[i];
        cJSON *sale = cJSON_CreateObject();
        activitylist_sale(sale, a->id, a, a->stock_left > 0 ? a->stock_left : 0, now_ms);
        cJSON_AddItemToArray(list, sale);
    }
    cJSON_AddBoolToObject(json, "truncated", n > ACTIVITYLIST_MAX);
    free(shown);
    reply_json(req, 200, json);
}
