#include "gateway/reaper.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/metrics.h"

#define REAPER_BATCH "500"

struct reaper {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct event *timer;
};

/* One release.lua call; freed by its callback. */
struct reaper_call {
    struct activity_cache *activities;
    int64_t activity_id;
};

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

static void reap(struct reaper *reaper)
{
    if (!redisconn_ready(reaper->redis))
        return;
    int64_t now_ms = clock_wall_ms();
    char cutoff[24];
    snprintf(cutoff, sizeof(cutoff), "%" PRId64, now_ms - reaper->cfg->pre_reduce_timeout * 1000);
    size_t n = activity_cache_count(reaper->activities);
    for (size_t i = 0; i < n; i++) {
        struct activity *a = activity_cache_at(reaper->activities, i);
        if (!a->loaded)
            continue;
        struct reaper_call *call = malloc(sizeof(*call));
        if (!call)
            return;
        call->activities = reaper->activities;
        call->activity_id = a->id;
        const char *argv[] = { a->keys.name[KEYS_STOCK], a->keys.name[KEYS_USERS], a->keys.name[KEYS_ORDERS],
                               a->keys.name[KEYS_RESERVED], "older", cutoff, REAPER_BATCH };
        if (redisconn_eval(reaper->redis, LUASCRIPT_RELEASE, 4, 3, argv, NULL, on_reaped, call) != 0) {
            free(call);
            return;
        }
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    reap(arg);
}

struct reaper *reaper_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                          struct activity_cache *activities)
{
    struct reaper *reaper = calloc(1, sizeof(*reaper));
    if (!reaper)
        return NULL;
    reaper->cfg = cfg;
    reaper->redis = redis;
    reaper->activities = activities;
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
