#include "ucoupon.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

int ucoupon_key(char *buf, size_t len, int64_t user_id)
{
    int n = snprintf(buf, len, "seckill:ucoupon:{u%" PRId64 "}", user_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

char *ucoupon_encode(const struct ucoupon *uc)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON_AddNumberToObject(j, "id", (double)uc->id);
    cJSON_AddNumberToObject(j, "userId", (double)uc->user_id);
    cJSON_AddNumberToObject(j, "couponId", (double)uc->coupon_id);
    cJSON_AddStringToObject(j, "type", coupon_type_name(uc->terms.type));
    cJSON_AddNumberToObject(j, "amount", (double)uc->terms.amount);
    cJSON_AddNumberToObject(j, "rate", (double)uc->terms.rate);
    cJSON_AddNumberToObject(j, "minOrder", (double)uc->terms.min_order);
    cJSON_AddNumberToObject(j, "maxDiscount", (double)uc->terms.max_discount);
    cJSON_AddNumberToObject(j, "start", (double)uc->start_ms);
    cJSON_AddNumberToObject(j, "end", (double)uc->end_ms);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

static int64_t get_number(const cJSON *j, const char *name, int *ok)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble > JSON_MAX_EXACT_INT) {
        *ok = 0;
        return 0;
    }
    return (int64_t)item->valuedouble;
}

static int get_string(const cJSON *j, const char *name, char *out, size_t outlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsString(item) || strlen(item->valuestring) >= outlen)
        return -1;
    strcpy(out, item->valuestring);
    return 0;
}

int ucoupon_decode(const char *data, size_t len, struct ucoupon *uc)
{
    memset(uc, 0, sizeof(*uc));
    char err[64];
    cJSON *j = json_parse_object(data, len, err, sizeof(err));
    if (!j)
        return -1;
    int ok = 1;
    char type[16];
    uc->id = get_number(j, "id", &ok);
    uc->user_id = get_number(j, "userId", &ok);
    uc->coupon_id = get_number(j, "couponId", &ok);
    uc->terms.amount = get_number(j, "amount", &ok);
    uc->terms.rate = get_number(j, "rate", &ok);
    uc->terms.min_order = get_number(j, "minOrder", &ok);
    uc->terms.max_discount = get_number(j, "maxDiscount", &ok);
    uc->start_ms = get_number(j, "start", &ok);
    uc->end_ms = get_number(j, "end", &ok);
    if (get_string(j, "type", type, sizeof(type)) != 0 || coupon_type_parse(type, &uc->terms.type) != 0)
        ok = 0;
    strcpy(uc->status, "UNUSED");
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

int ucoupon_decode_used(const char *data, struct ucoupon *uc)
{
    const char *bar = strchr(data, '|');
    if (!bar || (size_t)(bar - data) >= sizeof(uc->order_ref))
        return -1;
    long long discount, payable, used;
    char tail;
    if (sscanf(bar + 1, "%lld|%lld|%lld%c", &discount, &payable, &used, &tail) != 3)
        return -1;
    memcpy(uc->order_ref, data, (size_t)(bar - data));
    uc->order_ref[bar - data] = '\0';
    uc->discount = discount;
    uc->payable = payable;
    uc->used_ms = used;
    strcpy(uc->status, "USED");
    return 0;
}

const char *ucoupon_state_at(const struct ucoupon *uc, int64_t now_ms)
{
    if (strcmp(uc->status, "USED") == 0)
        return "USED";
    return now_ms >= uc->end_ms ? "EXPIRED" : "UNUSED";
}

bool ucoupon_valid_ref(const char *ref)
{
    size_t n = 0;
    for (const char *p = ref; *p; p++, n++) {
        char c = *p;
        bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '.' || c == ':' || c == '-';
        if (!allowed || n >= UCOUPON_REF_LEN - 1)
            return false;
    }
    return n > 0;
}
