#include "common/usercoupon.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

int usercoupon_key(char *buf, size_t len, int64_t user_id)
{
    int n = snprintf(buf, len, "seckill:ucoupon:{u%" PRId64 "}", user_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

char *usercoupon_encode(const struct usercoupon *uc)
{
    /* Printed by hand: cJSON prints numbers with 15 significant digits whenever its
     * tolerant comparison calls that close enough, which changes integers above ~2^52.
     * Only the name needs escaping, which cJSON does for a lone string. */
    cJSON *name = cJSON_CreateString(uc->name);
    char *quoted = name ? cJSON_PrintUnformatted(name) : NULL;
    cJSON_Delete(name);
    if (!quoted)
        return NULL;
    char *text = NULL, user[JSON_ID_LEN];
    for (int pass = 0, size = 0; pass < 2; pass++) {
        int n = snprintf(text, (size_t)size,
                         "{\"id\":%" PRId64 ",\"userId\":%s,\"couponId\":%" PRId64
                         ",\"type\":\"%s\",\"amount\":%" PRId64 ",\"rate\":%" PRId64
                         ",\"minOrder\":%" PRId64 ",\"maxDiscount\":%" PRId64 ",\"start\":%" PRId64
                         ",\"end\":%" PRId64 ",\"name\":%s}",
                         uc->id, json_id_text(user, uc->user_id), uc->coupon_id,
                         couponterms_type_name(uc->terms.type),
                         uc->terms.amount, uc->terms.rate, uc->terms.min_order, uc->terms.max_discount,
                         uc->start_ms, uc->end_ms, quoted);
        if (n < 0 || (pass == 0 && !(text = malloc((size_t)n + 1)))) {
            free(text);
            text = NULL;
            break;
        }
        size = n + 1;
    }
    cJSON_free(quoted);
    return text;
}

static int64_t get_number(const cJSON *j, const char *name, int *ok)
{
    int64_t v = 0;
    char err[64];
    if (json_get_int(j, name, 0, &v, err, sizeof(err)) != 0)
        *ok = 0;
    return v;
}

static int get_string(const cJSON *j, const char *name, char *out, size_t outlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsString(item) || strlen(item->valuestring) >= outlen)
        return -1;
    strcpy(out, item->valuestring);
    return 0;
}

int usercoupon_decode(const char *data, size_t len, struct usercoupon *uc)
{
    memset(uc, 0, sizeof(*uc));
    char err[64];
    cJSON *j = json_parse_object(data, len, err, sizeof(err));
    if (!j)
        return -1;
    int ok = 1;
    char type[16];
    uc->id = get_number(j, "id", &ok);
    if (json_get_id(j, "userId", 0, &uc->user_id, err, sizeof(err)) != 0)
        ok = 0;
    uc->coupon_id = get_number(j, "couponId", &ok);
    uc->terms.amount = get_number(j, "amount", &ok);
    uc->terms.rate = get_number(j, "rate", &ok);
    uc->terms.min_order = get_number(j, "minOrder", &ok);
    uc->terms.max_discount = get_number(j, "maxDiscount", &ok);
    uc->start_ms = get_number(j, "start", &ok);
    uc->end_ms = get_number(j, "end", &ok);
    if (get_string(j, "type", type, sizeof(type)) != 0 || couponterms_type_parse(type, &uc->terms.type) != 0)
        ok = 0;
    /* A record written before names were kept has none. */
    if (cJSON_HasObjectItem(j, "name") && get_string(j, "name", uc->name, sizeof(uc->name)) != 0)
        ok = 0;
    strcpy(uc->status, "UNUSED");
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

int usercoupon_decode_used(const char *data, struct usercoupon *uc)
{
    const char *bar = strchr(data, '|');
    if (!bar || (size_t)(bar - data) >= sizeof(uc->order_ref))
        return -1;
    long long discount, payable, used;
    char tail;
    if (sscanf(bar + 1, "%lld|%lld|%lld%c", &discount, &payable, &used, &tail) != 3 || discount < 0 ||
        payable < 0 || used < 0)
        return -1;
    memcpy(uc->order_ref, data, (size_t)(bar - data));
    uc->order_ref[bar - data] = '\0';
    if (!usercoupon_valid_ref(uc->order_ref))
        return -1;
    uc->discount = discount;
    uc->payable = payable;
    uc->used_ms = used;
    strcpy(uc->status, "USED");
    return 0;
}

const char *usercoupon_state_at(const struct usercoupon *uc, int64_t now_ms)
{
    if (strcmp(uc->status, "USED") == 0 || strcmp(uc->status, "REVOKED") == 0)
        return uc->status;
    return now_ms >= uc->end_ms ? "EXPIRED" : "UNUSED";
}

bool usercoupon_valid_ref(const char *ref)
{
    size_t n = 0;
    for (const char *p = ref; *p; p++, n++) {
        char c = *p;
        bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '.' || c == ':' || c == '-';
        if (!allowed || n >= USERCOUPON_REF_LEN - 1)
            return false;
    }
    return n > 0;
}
