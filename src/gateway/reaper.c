#include "gateway/reaper.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/orderno.h"
#include "gateway/metrics.h"

#define REAPER_BATCH "500"
#define NODES REAPER_NODES

struct reaper {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct nodelease *lease;
    struct redeliver *redeliver;  /* NULL with reply-after-ack: stale reservations expire */
    const struct queuedmarks *marks;
    bool held;                    /* the last pass was held back by late queued marks */
    struct event *timer;
    int64_t grace_ms;
    unsigned long reconnects_seen;
    int64_t connected_since_ms;   /* monotonic */
    int64_t dead_since_ms[NODES]; /* monotonic, when first seen without a lease; 0: live */
    bool querying;                /* a "live" query is in flight */
    char keep[REAPER_KEEP_LEN];          /* ",a,b," the nodes whose reservations are not ours to reap */
};

/* One release.lua call; freed by its callback. */
struct reaper_call {
    struct activity_cache *activities;
    int64_t activity_id;
};

int64_t reaper_cutoff_ms(int64_t now_ms, int64_t pre_reduce_ms, int64_t oldest_mark_ms)
{
    int64_t cutoff = now_ms - pre_reduce_ms;
    if (oldest_mark_ms != INT64_MAX && oldest_mark_ms - REAPER_MARK_SLACK_MS < cutoff)
        cutoff = oldest_mark_ms - REAPER_MARK_SLACK_MS;
    return cutoff;
}

int64_t reaper_grace_ms(const struct config *cfg)
{
    return cfg->node_lease_ms + cfg->redis_reconnect_max_ms + cfg->http_request_timeout_ms;
}

static void on_reaped(redisReply *reply, void *privdata)
{
    struct reaper_call *call = privdata;
    if (reply && reply->type == REDIS_REPLY_INTEGER && reply->integer > 0) {
        metrics_add(METRIC_RESERVATIONS_EXPIRED, (uint64_t)reply->integer);
        LOG_WARN("activity %" PRId64 ": expired %lld reservations that never reached Kafka",
                 call->activity_id, reply->integer);
        struct activity *a = activity_cache_find(call->activities, call->activity_id);
        if (a)
            a->sold_out = false;  /* stock came back */
    }
    free(call);
}

/* On every loaded activity, for the reservations of the nodes that `mode` ("own" NODE or
 * "except" ",a,b,") leaves to this gateway: release.lua, or where a client may have been
 * told 200 before Kafka had the order (reply-after-ack off), redeliver.h. */
static void release_all(struct reaper *reaper, const char *mode, const char *nodes)
{
    int64_t now_ms = clock_wall_ms();
    int64_t oldest = reaper->marks ? queuedmarks_oldest_ms(reaper->marks) : INT64_MAX;
    int64_t cutoff_ms = reaper_cutoff_ms(now_ms, reaper->cfg->pre_reduce_timeout * 1000, oldest);
    bool held = cutoff_ms < now_ms - reaper->cfg->pre_reduce_timeout * 1000;
    if (held && !reaper->held)
        LOG_WARN("reaper: queued marks unwritten since %" PRId64 " ms ago; reservations from then on wait "
                 "for them", now_ms - oldest);
    reaper->held = held;
    char cutoff[24];
    snprintf(cutoff, sizeof(cutoff), "%" PRId64, cutoff_ms);
    size_t n = activity_cache_count(reaper->activities);
    for (size_t i = 0; i < n; i++) {
        struct activity *a = activity_cache_at(reaper->activities, i);
        if (!a->loaded || !a->listed)
            continue;
        /* Every bucket of a bucketed sale holds reservations of its own users. */
        for (int b = 0; b < a->nbuckets; b++) {
            const struct keys_set *k = b == 0 ? &a->keys : &a->buckets[b].keys;
            if (reaper->redeliver) {
                redeliver_stale(reaper->redeliver, a->id, b, k, cutoff, REAPER_BATCH, mode, nodes);
                continue;
            }
            struct reaper_call *call = malloc(sizeof(*call));
            if (!call)
                return;
            call->activities = reaper->activities;
            call->activity_id = a->id;
            const char *argv[] = { k->name[KEYS_STOCK], k->name[KEYS_USERS], k->name[KEYS_ORDERS],
                                   k->name[KEYS_RESERVED], k->name[KEYS_FAILED], k->name[KEYS_ACTIVITY],
                                   k->name[KEYS_FAILED_USERS], "older", cutoff, REAPER_BATCH, mode, nodes };
            if (redisconn_eval(reaper->redis, LUASCRIPT_RELEASE, 7, 5, argv, NULL, on_reaped, call) != 0) {
                free(call);
                return;
            }
        }
    }
}

void reaper_keep_list(const bool live[REAPER_NODES], int64_t dead_since_ms[REAPER_NODES], int own,
                      int64_t now_ms, int64_t grace_ms, char out[REAPER_KEEP_LEN])
{
    size_t used = 0;
    out[used++] = ',';
    out[used] = '\0';
    for (int node = 0; node < REAPER_NODES; node++) {
        if (live[node])
            dead_since_ms[node] = 0;
        else if (dead_since_ms[node] == 0)
            dead_since_ms[node] = now_ms;
        bool in_grace = dead_since_ms[node] != 0 && now_ms - dead_since_ms[node] < grace_ms;
        if (node != own && (live[node] || in_grace))
            used += (size_t)snprintf(out + used, REAPER_KEEP_LEN - used, "%d,", node);
    }
}

static void on_live(redisReply *reply, void *privdata)
{
    struct reaper *reaper = privdata;
    reaper->querying = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;  /* without the leases, nobody's reservations are known to be ours */
    bool live[NODES] = { false };
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        if (e->type == REDIS_REPLY_INTEGER && e->integer >= 0 && e->integer < NODES)
            live[e->integer] = true;
    }
    int64_t now = clock_mono_ms();
    int own = nodelease_node(reaper->lease);
    reaper_keep_list(live, reaper->dead_since_ms, own, now, reaper->grace_ms, reaper->keep);
    if (now - reaper->connected_since_ms >= reaper->grace_ms) {
        release_all(reaper, "except", reaper->keep);
    } else if (own >= 0) {
        char node_text[12];
        snprintf(node_text, sizeof(node_text), "%d", own);
        release_all(reaper, "own", node_text);
    }
}

static void reap(struct reaper *reaper)
{
    if (!redisconn_ready(reaper->redis) || reaper->querying)
        return;
    unsigned long reconnects = redisconn_reconnects(reaper->redis);
    if (reconnects != reaper->reconnects_seen) {
        /* Whatever was seen before the outage says nothing about who is alive now. */
        reaper->reconnects_seen = reconnects;
        reaper->connected_since_ms = clock_mono_ms();
        memset(reaper->dead_since_ms, 0, sizeof(reaper->dead_since_ms));
    }
    if (nodelease_query_live(reaper->lease, on_live, reaper) == 0)
        reaper->querying = true;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    reap(arg);
}

struct reaper *reaper_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                          struct activity_cache *activities, struct nodelease *lease,
                          struct redeliver *redeliver, const struct queuedmarks *marks)
{
    struct reaper *reaper = calloc(1, sizeof(*reaper));
    if (!reaper)
        return NULL;
    reaper->cfg = cfg;
    reaper->redis = redis;
    reaper->activities = activities;
    reaper->lease = lease;
    reaper->redeliver = redeliver;
    reaper->marks = marks;
    reaper->grace_ms = reaper_grace_ms(cfg);
    reaper->connected_since_ms = clock_mono_ms();
    reaper->reconnects_seen = redisconn_reconnects(redis);
    reaper->timer = event_new(base, -1, EV_PERSIST, on_timer, reaper);
    struct timeval tv = clock_timeval_ms(cfg->reaper_interval_ms);
    event_add(reaper->timer, &tv);
    return reaper;
}

void reaper_free(struct reaper *reaper)
{
    if (!reaper)
        return;
    event_free(reaper->timer);
    free(reaper);
}
