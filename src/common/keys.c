#include "common/keys.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int keys_of_tag(char *buf, size_t len, const struct config *cfg, enum keys_kind kind, const char *tag)
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
    case KEYS_XFER_OUT: prefix = "seckill:xfer:out"; break;
    case KEYS_XFER_IN: prefix = "seckill:xfer:in"; break;
    case KEYS_FAILED_USERS: prefix = "seckill:failedusers"; break;
    case KEYS_KIND_COUNT: return -1;
    }
    int n = snprintf(buf, len, "%s:{%s}", prefix, tag);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int keys_coupon(char *buf, size_t len, int64_t coupon_id)
{
    int n = snprintf(buf, len, "seckill:coupon:{c%" PRId64 "}", coupon_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int keys_activity(char *buf, size_t len, const struct config *cfg, enum keys_kind kind,
                  int64_t activity_id)
{
    char tag[BUCKET_TAG_LEN];
    if (bucket_tag(tag, sizeof(tag), activity_id, 0, 0) != 0)
        return -1;
    return keys_of_tag(buf, len, cfg, kind, tag);
}

int keys_set_build_tag(struct keys_set *set, const struct config *cfg, int64_t activity_id,
                       const char *tag)
{
    set->activity_id = activity_id;
    size_t taglen = strlen(tag);
    if (taglen >= sizeof(set->tag))
        return -1;
    memcpy(set->tag, tag, taglen + 1);
    for (int kind = 0; kind < KEYS_KIND_COUNT; kind++)
        if (keys_of_tag(set->name[kind], sizeof(set->name[kind]), cfg, (enum keys_kind)kind, tag) < 0)
            return -1;
    return 0;
}

int keys_set_build(struct keys_set *set, const struct config *cfg, int64_t activity_id)
{
    char tag[BUCKET_TAG_LEN];
    if (bucket_tag(tag, sizeof(tag), activity_id, 0, 0) != 0)
        return -1;
    return keys_set_build_tag(set, cfg, activity_id, tag);
}

int keys_subject_prefix_tag(char *buf, size_t len, enum keys_subject_kind kind, const char *tag)
{
    const char *what = "rl:user";
    switch (kind) {
    case KEYS_RATE_USER: what = "rl:user"; break;
    case KEYS_RATE_IP: what = "rl:ip"; break;
    case KEYS_BRUSH: what = "brush"; break;
    case KEYS_BAN: what = "ban"; break;
    case KEYS_TOKEN: what = "token"; break;
    }
    int n = snprintf(buf, len, "seckill:%s:{%s}:", what, tag);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int keys_subject_prefix(char *buf, size_t len, enum keys_subject_kind kind, int64_t activity_id)
{
    char tag[BUCKET_TAG_LEN];
    if (bucket_tag(tag, sizeof(tag), activity_id, 0, 0) != 0)
        return -1;
    return keys_subject_prefix_tag(buf, len, kind, tag);
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
