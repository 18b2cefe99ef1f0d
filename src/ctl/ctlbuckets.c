#include "ctl/ctlbuckets.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"

struct ctlbuckets_route {
    struct ctlrun *ctl;
    struct redisroute *rr;
    char err[256];
};

/* The master of a tag's keys: the stock key stands for all of them (one slot). */
static int ctlbuckets_master_of(const char *tag, void *arg)
{
    struct ctlbuckets_route *r = arg;
    struct keys_set k;
    if (keys_set_build_tag(&k, &r->ctl->cfg, 0, tag) != 0) {
        snprintf(r->err, sizeof(r->err), "bucket tag %s: key too long", tag);
        return -1;
    }
    const char *key = k.name[KEYS_STOCK];
    return redisroute_master_of(r->rr, key, strlen(key), r->err, sizeof(r->err));
}

int ctlbuckets_choose(struct ctlrun *ctl, int64_t id, int count, struct bucket_list *list)
{
    struct ctlbuckets_route r = { ctl, ctlredis_conn(ctl), "" };
    if (!r.rr)
        return CTLRUN_FAIL;
    int masters = count > 1 ? redisroute_masters(r.rr, r.err, sizeof(r.err)) : 1;
    if (masters < 0 || bucket_choose(id, count, masters, ctlbuckets_master_of, &r, list) != 0)
        return ctlout_fail(ctl, "activity %" PRId64 ": cannot place %d buckets: %s", id, count,
                           r.err[0] ? r.err : "bad bucket count");
    return CTLRUN_OK;
}

int ctlbuckets_parse(struct ctlrun *ctl, int64_t id, const char *recorded, struct bucket_list *list)
{
    if (bucket_list_parse(recorded, id, list) != 0)
        return ctlout_fail(ctl, "activity %" PRId64 ": malformed bucket_tags '%s' in MySQL", id, recorded);
    return CTLRUN_OK;
}

int ctlbuckets_keys(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int b, struct keys_set *k)
{
    if (keys_set_build_tag(k, &ctl->cfg, id, list->tag[b]) != 0)
        return ctlout_fail(ctl, "activity %" PRId64 ": a configured key prefix makes its Redis keys "
                           "longer than %d bytes", id, KEYS_LEN - 1);
    return CTLRUN_OK;
}

int ctlbuckets_master(struct ctlrun *ctl, const struct keys_set *k, char *buf, size_t len)
{
    struct redisroute *rr = ctlredis_conn(ctl);
    if (!rr)
        return CTLRUN_FAIL;
    char err[256];
    const char *key = k->name[KEYS_STOCK];
    int node = redisroute_master_of(rr, key, strlen(key), err, sizeof(err));
    if (node < 0)
        return ctlout_fail(ctl, "%s", err);
    redisroute_node_name(rr, node, buf, len);
    return CTLRUN_OK;
}

/* Calls fn on each transfer record of every bucket: its source, destination, id, units. */
typedef int (*ctlbuckets_record_fn)(struct ctlrun *ctl, const struct keys_set *src,
                                    const struct keys_set *dst, const char *xfer, const char *units,
                                    int64_t *total);

static int ctlbuckets_each_record(struct ctlrun *ctl, int64_t id, const struct bucket_list *list,
                                  ctlbuckets_record_fn fn, int64_t *total)
{
    *total = 0;
    for (int b = 0; b < list->count && list->count > 1; b++) {
        struct keys_set src;
        if (ctlbuckets_keys(ctl, id, list, b, &src) != CTLRUN_OK)
            return CTLRUN_FAIL;
        const char *argv[] = { "HGETALL", src.name[KEYS_XFER_OUT] };
        redisReply *r = ctlredis_argv(ctl, 2, argv);
        if (!r)
            return CTLRUN_FAIL;
        int rc = CTLRUN_OK;
        for (size_t i = 0; rc == CTLRUN_OK && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
            const char *xfer = r->element[i]->str, *what = r->element[i + 1]->str;
            char *bar;
            long to = strtol(what ? what : "", &bar, 10);
            if (!xfer || !what || *bar != '|' || to < 0 || to >= list->count) {
                rc = ctlout_fail(ctl, "activity %" PRId64 ": malformed transfer record in bucket %d", id, b);
                break;
            }
            struct keys_set dst;
            if ((rc = ctlbuckets_keys(ctl, id, list, (int)to, &dst)) == CTLRUN_OK)
                rc = fn(ctl, &src, &dst, xfer, bar + 1, total);
        }
        freeReplyObject(r);
        if (rc != CTLRUN_OK)
            return rc;
    }
    return CTLRUN_OK;
}

static int ctlbuckets_count(struct ctlrun *ctl, const struct keys_set *src, const struct keys_set *dst,
                            const char *xfer, const char *units, int64_t *total)
{
    (void)src;
    const char *argv[] = { "SISMEMBER", dst->name[KEYS_XFER_IN], xfer };
    redisReply *r = ctlredis_argv(ctl, 3, argv);
    if (!r)
        return CTLRUN_FAIL;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        *total += strtoll(units, NULL, 10);
    freeReplyObject(r);
    return CTLRUN_OK;
}

int ctlbuckets_in_transit(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int64_t *units)
{
    return ctlbuckets_each_record(ctl, id, list, ctlbuckets_count, units);
}

static int ctlbuckets_deliver(struct ctlrun *ctl, const struct keys_set *src, const struct keys_set *dst,
                              const char *xfer, const char *units, int64_t *total)
{
    const char *in_keys[] = { dst->name[KEYS_STOCK], dst->name[KEYS_XFER_IN] };
    const char *in_args[] = { "in", xfer, units };
    redisReply *r = ctlredis_script(ctl, LUASCRIPT_REBALANCE, 2, in_keys, 3, in_args);
    if (!r)
        return CTLRUN_FAIL;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        *total += strtoll(units, NULL, 10);
    freeReplyObject(r);
    const char *done_keys[] = { src->name[KEYS_XFER_OUT] };
    const char *done_args[] = { "done", xfer };
    r = ctlredis_script(ctl, LUASCRIPT_REBALANCE, 1, done_keys, 2, done_args);
    if (!r)
        return CTLRUN_FAIL;
    freeReplyObject(r);
    return CTLRUN_OK;
}

int ctlbuckets_finish(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int64_t *units)
{
    return ctlbuckets_each_record(ctl, id, list, ctlbuckets_deliver, units);
}

int ctlbuckets_gather(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int64_t want,
                      int64_t *moved)
{
    *moved = 0;
    struct keys_set dst;
    if (ctlbuckets_keys(ctl, id, list, 0, &dst) != CTLRUN_OK)
        return CTLRUN_FAIL;
    for (int b = 1; b < list->count && *moved < want; b++) {
        struct keys_set src;
        if (ctlbuckets_keys(ctl, id, list, b, &src) != CTLRUN_OK)
            return CTLRUN_FAIL;
        char units[24];
        snprintf(units, sizeof(units), "%" PRId64, want - *moved);
        const char *keys[] = { src.name[KEYS_ACTIVITY], src.name[KEYS_STOCK], src.name[KEYS_XFER_OUT] };
        const char *args[] = { "out", "0", units, list->tag[b] };
        redisReply *r = ctlredis_script(ctl, LUASCRIPT_REBALANCE, 3, keys, 4, args);
        if (!r)
            return CTLRUN_FAIL;
        char xfer[BUCKET_TAG_LEN + 32] = "";
        int64_t taken = 0;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_STRING &&
            r->element[1]->type == REDIS_REPLY_INTEGER && strlen(r->element[0]->str) < sizeof(xfer)) {
            snprintf(xfer, sizeof(xfer), "%s", r->element[0]->str);
            taken = r->element[1]->integer;
        }
        freeReplyObject(r);
        if (taken <= 0)
            continue;
        snprintf(units, sizeof(units), "%" PRId64, taken);
        int64_t arrived = 0;
        if (ctlbuckets_deliver(ctl, &src, &dst, xfer, units, &arrived) != CTLRUN_OK)
            return CTLRUN_FAIL;
        *moved += arrived;
    }
    return CTLRUN_OK;
}
