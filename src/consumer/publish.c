#include "consumer/publish.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/redeemevent.h"
#include "common/usercoupon.h"
#include "consumer/backend.h"
#include "consumer/reservation.h"
#include "consumer/consumer.h"
#include "consumer/persist.h"
#include "store/couponarchive.h"
#include "store/couponsync.h"

#define PUBLISH_TERMS_CACHE 64   /* coupons whose terms are kept between batches */

/* The terms of one coupon, as couponsync_load read them: they never change after the
 * coupon is created, so they are read once per coupon and kept. */
struct publish_terms {
    int64_t coupon_id;
    struct usercoupon tmpl;
};

/* Kept between batches, allocated at the first; freed by publish_free. */
struct publish_cache {
    struct usercoupon *records;   /* the records of the current batch */
    size_t *owners;               /* parallel to records: the accepted order it belongs to */
    size_t records_cap;
    struct publish_terms terms[PUBLISH_TERMS_CACHE];
    size_t terms_count;
    size_t terms_next;            /* the entry a new coupon replaces when full */
};

/* The terms of one coupon: from the cache, else from MySQL (and then kept). Returns the
 * template, or NULL: with *failed set when MySQL failed (retry), else when the coupon row
 * is missing or malformed, which no retry mends. */
static const struct usercoupon *terms_of(struct consumer *c, int64_t coupon_id, int *failed,
                                         char *err, size_t errlen)
{
    struct publish_cache *p = c->publish;
    *failed = 0;
    for (size_t i = 0; i < p->terms_count; i++)
        if (p->terms[i].coupon_id == coupon_id)
            return &p->terms[i].tmpl;
    if (backend_db(c, err, errlen) != 0) {
        *failed = 1;
        return NULL;
    }
    struct usercoupon tmpl;
    char why[256];
    int rc = couponsync_load(c->db, coupon_id, &tmpl, why, sizeof(why));
    if (rc == 0) {
        size_t slot = p->terms_count < PUBLISH_TERMS_CACHE ? p->terms_count++ : p->terms_next;
        if (p->terms_count == PUBLISH_TERMS_CACHE)
            p->terms_next = (slot + 1) % PUBLISH_TERMS_CACHE;
        p->terms[slot].coupon_id = coupon_id;
        p->terms[slot].tmpl = tmpl;
        return &p->terms[slot].tmpl;
    }
    unsigned int code = mysql_errno(c->db);
    if (rc < 0 && code != 0) {
        snprintf(err, errlen, "%s", why);
        if (persist_connection_lost(code))
            backend_db_drop(c);
        *failed = 1;
        return NULL;
    }
    LOG_ERROR("%s: its user coupons of this batch are not published to redis", why);
    return NULL;
}

/* Sets aside the orders of records [from, to): their master did not take them. */
static int park_records(struct consumer *c, const size_t *owners, size_t from, size_t to, const char *why)
{
    c->reservation_failure = RESERVATION_FAILURE_LINK;
    if (!reservation_may_park(c))
        return -1;
    for (size_t i = from; i < to; i++)
        if (reservation_park(c, owners[i]) != 0)
            return -1;
    LOG_WARN("user coupons of %zu orders not published, the orders set aside, the rest of the batch goes on: "
             "%s", to - from, why);
    return 0;
}

/* The records of one Redis master in one pipeline, master after master (one Redis: all of
 * them, in order). recs and owners are scratch and get reordered together. */
static int publish_routed(struct consumer *c, struct usercoupon *recs, size_t *owners, size_t n, char *err,
                          size_t errlen)
{
    redisContext **ctx = malloc(n * sizeof(*ctx));
    if (!ctx) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char key[64];
        usercoupon_key(key, sizeof(key), recs[i].user_id);
        ctx[i] = redisroute_for_key(c->redis, key, strlen(key), err, errlen);
        if (!ctx[i] && park_records(c, owners, i, i + 1, err) != 0)
            rc = -1;
    }
    for (size_t done = 0; done < n && rc == 0;) {
        redisContext *target = ctx[done];
        size_t k = done;
        for (size_t i = done; i < n; i++) {
            if (ctx[i] != target)
                continue;
            struct usercoupon r = recs[i];
            recs[i] = recs[k];
            recs[k] = r;
            size_t o = owners[i];
            owners[i] = owners[k];
            owners[k] = o;
            ctx[i] = ctx[k];
            ctx[k] = target;
            k++;
        }
        char why[256];
        if (target && couponsync_publish_many(target, recs + done, k - done, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "%s", why);
            /* a MOVED among the replies reloads the map; a broken connection is closed */
            redisroute_failed(c->redis, target);
            if (park_records(c, owners, done, k, why) != 0)
                rc = -1;
        }
        done = k;
    }
    free(ctx);
    return rc;
}

/* The used mark of every redemption MySQL holds (applied now or before), written again
 * where it is missing: Redis can lose it (a failover without redis.wait-replicas, a Redis
 * restarted from an AOF a second behind), and without it use.lua would let another
 * checkout redeem the same coupon. remark.lua writes it only where Redis has not moved on
 * since (a refund, a later use); a use this batch refunded again is not its coupon's
 * state. None for a coupon whose records have left Redis (couponarchive.h) or are about to. */
static int publish_uses(struct consumer *c, int64_t now_ms, char *err, size_t errlen)
{
    const struct batch *b = &c->batch;
    for (size_t i = 0; i < b->use_count; i++) {
        enum batch_use_verdict v = b->use_results[i].verdict;
        const struct redeemevent *ev = &b->uses[i];
        if (ev->kind != REDEEMEVENT_USED || !(v == BATCH_USE_REPEATED ||
                                              (v == BATCH_USE_APPLIED && b->use_results[i].last)))
            continue;
        int failed = 0;
        int64_t coupon_id = b->use_results[i].coupon_id;
        /* the terms only tell the coupon's end, which matters only with an archive schedule */
        bool ends = coupon_id > 0 && c->cfg.consumer_coupon_archive_after_ms > 0;
        const struct usercoupon *tmpl = ends ? terms_of(c, coupon_id, &failed, err, errlen) : NULL;
        if (failed)
            return -1;
        if (tmpl && couponarchive_past(tmpl->end_ms, c->cfg.consumer_coupon_archive_after_ms, now_ms)) {
            LOG_INFO("user coupon %" PRId64 " order '%s': its coupon %" PRId64 " is due for its archive, "
                     "the used mark stays out of Redis", ev->user_coupon_id, ev->order_ref, coupon_id);
            continue;
        }
        char key[64], id[24], mark[USERCOUPON_REF_LEN + 80], seq[24];
        usercoupon_key(key, sizeof(key), ev->user_id);
        snprintf(id, sizeof(id), "%" PRId64, ev->user_coupon_id);
        snprintf(mark, sizeof(mark), "%s|%" PRId64 "|%" PRId64 "|%" PRId64, ev->order_ref, ev->discount,
                 ev->payable, ev->used_ms);
        snprintf(seq, sizeof(seq), "%" PRId64, ev->seq);
        const char *keys[] = { key }, *args[] = { id, mark, seq };
        redisReply *r = redisroute_script(c->redis, &c->scripts.scripts[LUASCRIPT_REMARK], 1, keys, 3, args,
                                          err, errlen);
        if (!r)
            return -1;
        bool ok = r->type == REDIS_REPLY_INTEGER;
        if (ok && r->integer == 1)
            LOG_WARN("user coupon %" PRId64 " order '%s': its used mark was missing in Redis; written again",
                     ev->user_coupon_id, ev->order_ref);
        if (!ok)
            snprintf(err, errlen, "remark.lua %s: %s", key, r->type == REDIS_REPLY_ERROR ? r->str
                     : "unexpected reply");
        freeReplyObject(r);
        if (!ok)
            return -1;
    }
    return 0;
}

int publish_coupons(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->accepted_count == 0 && b->use_count == 0)
        return 0;
    if (!c->publish && !(c->publish = calloc(1, sizeof(*c->publish)))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct publish_cache *p = c->publish;
    if (backend_redis(c, err, errlen) != 0)
        return -1;
    int64_t now_ms = clock_wall_ms();
    if (publish_uses(c, now_ms, err, errlen) != 0)
        return -1;
    if (b->accepted_count == 0)
        return 0;
    if (b->accepted_count > p->records_cap) {
        struct usercoupon *grown = realloc(p->records, b->accepted_count * sizeof(*grown));
        if (grown)
            p->records = grown;
        size_t *owners = realloc(p->owners, b->accepted_count * sizeof(*owners));
        if (owners)
            p->owners = owners;
        if (!grown || !owners) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        p->records_cap = b->accepted_count;
    }
    size_t n = 0, archived = 0;
    const struct usercoupon *tmpl = NULL;
    int64_t looked_up = 0;
    for (size_t i = 0; i < b->accepted_count; i++) {
        const struct batch_coupon *bc = &b->coupons[i];
        if (!b->in_db[i] || b->parked[i] || bc->id <= 0)
            continue;
        if (bc->coupon_id != looked_up) {
            int failed;
            tmpl = terms_of(c, bc->coupon_id, &failed, err, errlen);
            if (failed)
                return -1;
            looked_up = bc->coupon_id;
        }
        if (!tmpl)
            continue;
        if (couponarchive_past(tmpl->end_ms, c->cfg.consumer_coupon_archive_after_ms, now_ms)) {
            archived++;
            continue;
        }
        p->owners[n] = i;
        struct usercoupon *uc = &p->records[n++];
        *uc = *tmpl;
        uc->id = bc->id;
        uc->user_id = b->accepted[i].user_id;
    }
    if (archived > 0)
        LOG_INFO("%zu user coupons of coupons due for their archive not written to Redis (MySQL has them)",
                 archived);
    return n > 0 ? publish_routed(c, p->records, p->owners, n, err, errlen) : 0;
}

void publish_free(struct publish_cache *p)
{
    if (!p)
        return;
    free(p->records);
    free(p->owners);
    free(p);
}
