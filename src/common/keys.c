#include "common/keys.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int keys_activity(char *buf, size_t len, const struct config *cfg, enum keys_kind kind,
                  int64_t activity_id)
{
    const char *prefix = "seckill:activity";
    switch (kind) {
    case KEYS_ACTIVITY: prefix = "seckill:activity"; break;
    case KEYS_STOCK: prefix = cfg->stock_prefix; break;
    case KEYS_USERS: prefix = cfg->user_prefix; break;
    case KEYS_ORDERS: prefix = "seckill:order"; break;
    case KEYS_RESERVED: prefix = "seckill:resv"; break;
    case KEYS_QUEUED: prefix = "seckill:queued"; break;
    case KEYS_CLAIMED: prefix = "seckill:claimed"; break;
    case KEYS_FAILED: prefix = "seckill:failed"; break;
    case KEYS_KIND_COUNT: return -1;
    }
    int n = snprintf(buf, len, "%s:{%" PRId64 "}", prefix, activity_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int keys_coupon(char *buf, size_t len, int64_t coupon_id)
{
    int n = snprintf(buf, len, "seckill:coupon:{c%" PRId64 "}", coupon_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int keys_set_build(struct keys_set *set, const struct config *cfg, int64_t activity_id)
{
    set->activity_id = activity_id;
    for (int kind = 0; kind < KEYS_KIND_COUNT; kind++)
        if (keys_activity(set->name[kind], sizeof(set->name[kind]), cfg, (enum keys_kind)kind, activity_id) < 0)
            return -1;
    return 0;
}

int keys_subject_prefix(char *buf, size_t len, enum keys_subject_kind kind, int64_t activity_id)
{
    const char *what = "rl:user";
    switch (kind) {
    case KEYS_RATE_USER: what = "rl:user"; break;
    case KEYS_RATE_IP: what = "rl:ip"; break;
    case KEYS_BRUSH: what = "brush"; break;
    case KEYS_BAN: what = "ban"; break;
    case KEYS_TOKEN: what = "token"; break;
    }
    int n = snprintf(buf, len, "seckill:%s:{%" PRId64 "}:", what, activity_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int keys_subject(char *buf, size_t len, enum keys_subject_kind kind, int64_t activity_id,
                 const char *subject)
{
    int n = keys_subject_prefix(buf, len, kind, activity_id);
    if (n < 0)
        return -1;
    size_t rest = strlen(subject);
    if ((size_t)n + rest >= len)
        return -1;
    memcpy(buf + n, subject, rest + 1);
    return n + (int)rest;
}
