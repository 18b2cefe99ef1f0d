#include "gateway/rebalance.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/metrics.h"

struct rebalance {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct event *timer;  /* NULL when off */
    struct event *soon;   /* a pass at the end of this loop pass */
    size_t outstanding;   /* views of the current pass not yet answered */
};

/* The views of one sale's buckets in one pass. Freed when the last one answers. */
struct rebalance_sale {
    struct rebalance *rb;
    int64_t id;
    int nbuckets;
    int waiting;
    bool failed;
    int64_t stock[BUCKET_MAX];
};

struct rebalance_view {
    struct rebalance_sale *sale;
    int bucket;
};

/* One transfer between two buckets, from its 'out' (or a view that found its record) to
 * its 'done'. Freed by the last callback. */
struct rebalance_move {
    struct rebalance *rb;
    int64_t id;
    int from, to;
    int64_t units;
    char xfer[BUCKET_TAG_LEN + 24];
};

bool rebalance_plan(const int64_t *stock, const bool *starved, int n, int *from, int *to, int64_t *units)
{
    if (n < 2)
        return false;
    int64_t total = 0;
    int src = 0, dst = -1;
    for (int b = 0; b < n; b++) {
        total += stock[b];
        if (stock[b] > stock[src])
            src = b;
    }
    /* A starved empty bucket first: someone is waiting there. */
    for (int b = 0; b < n && dst < 0; b++)
        if (starved[b] && stock[b] == 0 && b != src)
            dst = b;
    if (dst < 0) {
        dst = src == 0 ? 1 : 0;
        for (int b = 0; b < n; b++)
            if (b != src && stock[b] < stock[dst])
                dst = b;
    }
    int64_t diff = stock[src] - stock[dst];
    bool needy = stock[dst] * 2 * n <= total && diff >= 2;
    bool waiting = starved[dst] && stock[dst] == 0 && stock[src] >= 1;
    if (!needy && !waiting)
        return false;
    *from = src;
    *to = dst;
    *units = diff / 2 > 0 ? diff / 2 : 1;
    return true;
}

static const struct keys_set *bucket_keys(struct activity *a, int b)
{
    return b == 0 ? &a->keys : &a->buckets[b].keys;
}

/* The sale as cached now, or NULL when its buckets are no longer what the move knew. */
static struct activity *sale_of(struct rebalance *rb, int64_t id, int from, int to)
{
    struct activity *a = activity_cache_find(rb->activities, id);
    return a && from < a->nbuckets && to < a->nbuckets ? a : NULL;
}

/* 'out', 'in' and the views go with a WAIT behind them when redis.wait-replicas > 0
 * (redisconn_eval_replicated), and a transfer moves on only once a replica holds its last
 * step: delivered after an 'out' a replica missed, a failover to that replica would find
 * the units in both buckets; done after an 'in' it missed, in neither. A step short of
 * replicas stays where it is (the record in the source's transfer hash); a later pass
 * whose view is acknowledged resumes it. 'done' needs no WAIT: lost, it leaves a record
 * whose 'in' is idempotent. */
static bool replicated(const struct rebalance *rb, long long replicas)
{
    return replicas >= rb->cfg->redis_wait_replicas;
}

static void on_done(redisReply *reply, void *privdata)
{
    struct rebalance_move *mv = privdata;
    if (!reply || reply->type != REDIS_REPLY_INTEGER)
        LOG_WARN("activity %" PRId64 ": transfer %s arrived but its record stays (next pass drops it)",
                 mv->id, mv->xfer);
    free(mv);
}

static void on_in(redisReply *reply, long long replicas, void *privdata)
{
    struct rebalance_move *mv = privdata;
    struct activity *a = sale_of(mv->rb, mv->id, mv->from, mv->to);
    if (reply && reply->type == REDIS_REPLY_INTEGER && !replicated(mv->rb, replicas)) {
        metrics_inc(METRIC_REDIS_WAIT_SHORT);
        LOG_WARN("activity %" PRId64 ": transfer %s delivered, but %lld replica(s) acknowledged it: "
                 "its record stays until a pass finds it replicated", mv->id, mv->xfer, replicas);
        free(mv);
        return;
    }
    if (!a || !reply || reply->type != REDIS_REPLY_INTEGER) {
        LOG_WARN("activity %" PRId64 ": transfer %s of %" PRId64 " unit(s) in transit (next pass delivers "
                 "it)", mv->id, mv->xfer, mv->units);
        free(mv);
        return;
    }
    if (reply->integer == 1) {
        metrics_add(METRIC_REBALANCE_UNITS, (uint64_t)mv->units);
        a->buckets[mv->to].stock_left += mv->units;
        a->buckets[mv->to].starved = false;
        activity_sum_buckets(a);
        LOG_INFO("activity %" PRId64 ": moved %" PRId64 " unit(s) from bucket %d to bucket %d (%s)", mv->id,
                 mv->units, mv->from, mv->to, mv->xfer);
    }
    const struct keys_set *src = bucket_keys(a, mv->from);
    const char *argv[] = { src->name[KEYS_XFER_OUT], "done", mv->xfer };
    if (redisconn_eval(mv->rb->redis, LUASCRIPT_REBALANCE, 1, 2, argv, NULL, on_done, mv) != 0)
        free(mv);
}


/* Steps 2 and 3 of a transfer whose 'out' has happened. Takes mv. */
static void deliver(struct rebalance_move *mv)
{
    struct activity *a = sale_of(mv->rb, mv->id, mv->from, mv->to);
    if (!a) {
        free(mv);
        return;
    }
    const struct keys_set *dst = bucket_keys(a, mv->to);
    char units[24];
    snprintf(units, sizeof(units), "%" PRId64, mv->units);
    const char *argv[] = { dst->name[KEYS_STOCK], dst->name[KEYS_XFER_IN], "in", mv->xfer, units };
    if (redisconn_eval_replicated(mv->rb->redis, LUASCRIPT_REBALANCE, 2, 3, argv, NULL, on_in, mv) != 0)
        free(mv);
}

static void on_out(redisReply *reply, long long replicas, void *privdata)
{
    struct rebalance_move *mv = privdata;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING || reply->element[1]->type != REDIS_REPLY_INTEGER ||
        strlen(reply->element[0]->str) >= sizeof(mv->xfer)) {
        free(mv);  /* nothing taken (no stock left there, cancelled, or Redis away) */
        return;
    }
    snprintf(mv->xfer, sizeof(mv->xfer), "%s", reply->element[0]->str);
    mv->units = reply->element[1]->integer;
    struct activity *a = sale_of(mv->rb, mv->id, mv->from, mv->to);
    if (a) {
        a->buckets[mv->from].stock_left -= mv->units;
        if (a->buckets[mv->from].stock_left < 0)
            a->buckets[mv->from].stock_left = 0;
    }
    if (!replicated(mv->rb, replicas)) {
        metrics_inc(METRIC_REDIS_WAIT_SHORT);
        LOG_WARN("activity %" PRId64 ": transfer %s of %" PRId64 " unit(s) left bucket %d, but %lld "
                 "replica(s) acknowledged it: not delivered until a pass finds it replicated", mv->id,
                 mv->xfer, mv->units, mv->from, replicas);
        free(mv);
        return;
    }
    deliver(mv);
}


static struct rebalance_move *move_new(struct rebalance *rb, int64_t id, int from, int to, int64_t units)
{
    struct rebalance_move *mv = calloc(1, sizeof(*mv));
    if (mv)
        *mv = (struct rebalance_move){ .rb = rb, .id = id, .from = from, .to = to, .units = units };
    return mv;
}

static void plan_sale(struct rebalance_sale *sale)
{
    struct activity *a = activity_cache_find(sale->rb->activities, sale->id);
    if (!a || a->nbuckets != sale->nbuckets || sale->failed ||
        activity_status_at(a, clock_wall_ms()) != ACTIVITY_ACTIVE)
        return;
    bool starved[BUCKET_MAX];
    for (int b = 0; b < a->nbuckets; b++) {
        starved[b] = a->buckets[b].starved;
        a->buckets[b].starved = false;
    }
    int from, to;
    int64_t units;
    if (!rebalance_plan(sale->stock, starved, a->nbuckets, &from, &to, &units))
        return;
    struct rebalance_move *mv = move_new(sale->rb, a->id, from, to, units);
    if (!mv)
        return;
    const struct keys_set *src = bucket_keys(a, from);
    char s_to[8], s_units[24];
    snprintf(s_to, sizeof(s_to), "%d", to);
    snprintf(s_units, sizeof(s_units), "%" PRId64, units);
    const char *argv[] = { src->name[KEYS_ACTIVITY], src->name[KEYS_STOCK], src->name[KEYS_XFER_OUT],
                           "out", s_to, s_units, src->tag };
    if (redisconn_eval_replicated(sale->rb->redis, LUASCRIPT_REBALANCE, 3, 4, argv, NULL, on_out, mv) != 0)
        free(mv);
}

/* A record "to|units" found by a view: deliver it (again: 'in' is idempotent). */
static void resume_transfer(struct rebalance *rb, struct activity *a, int from, const char *id,
                            const char *what)
{
    char *bar;
    long to = strtol(what, &bar, 10);
    long long units = *bar == '|' ? strtoll(bar + 1, NULL, 10) : 0;
    if (to < 0 || to >= a->nbuckets || to == from || units <= 0 || strlen(id) >= BUCKET_TAG_LEN + 24) {
        LOG_WARN("activity %" PRId64 ": malformed transfer record %s = %s in bucket %d", a->id, id, what,
                 from);
        return;
    }
    struct rebalance_move *mv = move_new(rb, a->id, from, (int)to, units);
    if (!mv)
        return;
    snprintf(mv->xfer, sizeof(mv->xfer), "%s", id);
    deliver(mv);
}

static void on_view(redisReply *reply, long long replicas, void *privdata)
{
    struct rebalance_view *view = privdata;
    struct rebalance_sale *sale = view->sale;
    struct rebalance *rb = sale->rb;
    struct activity *a = activity_cache_find(rb->activities, sale->id);
    int b = view->bucket;
    free(view);
    int64_t stock;
    /* A view no replica acknowledged plans nothing and resumes nothing: what it read may
     * be what a failover loses. */
    if (!a || a->nbuckets != sale->nbuckets || !reply || reply->type != REDIS_REPLY_ARRAY ||
        reply->elements < 1 || reply->element[0]->type != REDIS_REPLY_STRING || !replicated(rb, replicas)) {
        sale->failed = true;
    } else {
        stock = strtoll(reply->element[0]->str, NULL, 10);
        sale->stock[b] = stock;
        a->buckets[b].stock_left = stock;
        int64_t transit = 0;
        for (size_t i = 1; i + 1 < reply->elements; i += 2) {
            const redisReply *id = reply->element[i], *what = reply->element[i + 1];
            if (id->type != REDIS_REPLY_STRING || what->type != REDIS_REPLY_STRING)
                continue;
            const char *bar = strchr(what->str, '|');
            transit += bar ? strtoll(bar + 1, NULL, 10) : 0;
            resume_transfer(rb, a, b, id->str, what->str);
        }
        a->buckets[b].in_transit = transit;
    }
    rb->outstanding--;
    if (--sale->waiting > 0)
        return;
    if (a && !sale->failed && a->nbuckets == sale->nbuckets) {
        activity_sum_buckets(a);
        /* One view reads the buckets one after another, so a transfer that does its 'in'
         * and 'done' between the reads of its destination and of its source is missed:
         * its units sit in the destination by the next view (views never overlap), so
         * two all-out views in a row are needed to call the sale sold out. */
        a->all_out_views = a->sold_out ? a->all_out_views + 1 : 0;
        a->view_all_out = a->all_out_views >= 2;
    }
    plan_sale(sale);
    free(sale);
}


static void view_sale(struct rebalance *rb, struct activity *a)
{
    struct rebalance_sale *sale = calloc(1, sizeof(*sale));
    if (!sale)
        return;
    sale->rb = rb;
    sale->id = a->id;
    sale->nbuckets = a->nbuckets;
    sale->waiting = 1;  /* held by this loop until every view is sent */
    for (int b = 0; b < a->nbuckets; b++) {
        struct rebalance_view *view = malloc(sizeof(*view));
        if (!view)
            break;
        view->sale = sale;
        view->bucket = b;
        const struct keys_set *k = bucket_keys(a, b);
        const char *argv[] = { k->name[KEYS_STOCK], k->name[KEYS_XFER_OUT], "view" };
        if (redisconn_eval_replicated(rb->redis, LUASCRIPT_REBALANCE, 2, 1, argv, NULL, on_view, view) != 0) {
            free(view);
            sale->failed = true;
            break;
        }
        sale->waiting++;
        rb->outstanding++;
    }
    if (--sale->waiting == 0)
        free(sale);  /* nothing was sent */
}

static void pass(struct rebalance *rb)
{
    /* A pass still unanswered means Redis is slow: do not pile more on it. */
    if (rb->outstanding > 0 || !redisconn_ready(rb->redis))
        return;
    int64_t now_ms = clock_wall_ms();
    size_t n = activity_cache_count(rb->activities);
    for (size_t i = 0; i < n; i++) {
        struct activity *a = activity_cache_at(rb->activities, i);
        /* Transfers still in transit are finished after the sale too (cancel, end). */
        if (a->loaded && a->listed && a->nbuckets > 1 && activity_status_at(a, now_ms) != ACTIVITY_PENDING)
            view_sale(rb, a);
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pass(arg);
}

void rebalance_soon(struct rebalance *rb)
{
    if (rb && rb->soon && rb->outstanding == 0 && !event_pending(rb->soon, EV_TIMEOUT, NULL))
        event_active(rb->soon, EV_TIMEOUT, 0);
}

struct rebalance *rebalance_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                                struct activity_cache *activities)
{
    struct rebalance *rb = calloc(1, sizeof(*rb));
    if (!rb)
        return NULL;
    rb->cfg = cfg;
    rb->redis = redis;
    rb->activities = activities;
    if (cfg->rebalance_interval_ms > 0) {
        rb->timer = event_new(base, -1, EV_PERSIST, on_timer, rb);
        rb->soon = event_new(base, -1, 0, on_timer, rb);
        if (!rb->timer || !rb->soon) {
            rebalance_free(rb);
            return NULL;
        }
        struct timeval tv = clock_timeval_ms(cfg->rebalance_interval_ms);
        event_add(rb->timer, &tv);
    }
    return rb;
}

void rebalance_free(struct rebalance *rb)
{
    if (!rb)
        return;
    if (rb->timer)
        event_free(rb->timer);
    if (rb->soon)
        event_free(rb->soon);
    free(rb);
}
