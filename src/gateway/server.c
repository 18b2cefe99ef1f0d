/* seckill-server: the flash-sale gateway. One libevent loop serves HTTP, talks to Redis
 * and Kafka through callbacks and timers, and never blocks. */
#include <event2/event.h>
#include <event2/util.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "gateway/activity.h"
#include "common/config.h"
#include "common/keys.h"
#include "gateway/gateway.h"
#include "gateway/execute.h"
#include "gateway/executebatch.h"
#include "gateway/http.h"
#include "gateway/iplimit.h"
#include "gateway/kafkaprod.h"
#include "common/log.h"
#include "common/orderno.h"
#include "gateway/queuedmarks.h"
#include "gateway/reaper.h"
#include "gateway/redisconn.h"

extern char **environ;

/* Order numbers need a node id of their own: drawn from a Redis counter at the first
 * connect that answers, so that gateways sharing a Redis never share one. */
static void on_node_id(redisReply *reply, void *privdata)
{
    struct gateway *gw = privdata;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        LOG_WARN("could not draw an order-number node id; retrying on the next connect");
        return;
    }
    orderno_init(&gw->orderno, (uint32_t)(reply->integer % (ORDERNO_MAX_NODE + 1)));
    gw->node_ready = true;
    LOG_INFO("order-number node id %u", gw->orderno.node);
}

/* After every Redis (re)connect: the node id if there is none yet, a cache refresh. */
static void on_redis_connect(void *arg)
{
    struct gateway *gw = arg;
    if (!gw->node_ready) {
        const char *argv[] = { "INCR", KEYS_NODE_SEQ };
        redisconn_command_argv(gw->redis, 2, argv, NULL, on_node_id, gw);
    }
    activity_cache_refresh(gw->activities);
}

/* Shutdown: stop accepting, let in-flight requests finish (their Kafka delivery reports
 * included), write the last queued marks, then leave the loop. */
struct server_drain {
    struct gateway *gw;
    struct http *http;
    struct event *timer;
    int64_t deadline_us;
};

static void on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server_drain *d = arg;
    struct gateway *gw = d->gw;
    if (queuedmarks_pending(gw->marks) > 0)
        queuedmarks_flush(gw->marks);
    bool idle = gw->in_flight == 0 && queuedmarks_pending(gw->marks) == 0 && redisconn_pending(gw->redis) == 0;
    if (idle || clock_mono_us() > d->deadline_us) {
        if (!idle)
            LOG_WARN("drain deadline passed with %lu requests and %zu marks outstanding", gw->in_flight,
                     queuedmarks_pending(gw->marks));
        event_base_loopbreak(gw->base);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct server_drain *d = arg;
    if (d->gw->draining)
        return;
    LOG_INFO("signal %d: draining %lu in-flight requests", (int)sig, d->gw->in_flight);
    d->gw->draining = true;
    http_stop_accepting(d->http);
    d->deadline_us = clock_mono_us() + (d->gw->cfg->http_request_timeout_ms + 2000) * 1000;
    struct timeval tick = { 0, 10 * 1000 };
    event_add(d->timer, &tick);
}

int main(int argc, char **argv)
{
    log_set_name("seckill-server");
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN + 256];
    if (config_from_args(&cfg, argc, argv, environ, err, sizeof(err)) < 0) {
        fprintf(stderr, "seckill-server: %s\n", err);
        config_free(&cfg);
        return 2;
    }
    enum log_level level;
    log_parse_level(cfg.log_level, &level);
    log_set_level(level);
    signal(SIGPIPE, SIG_IGN);

    struct gateway gw;
    memset(&gw, 0, sizeof(gw));
    gw.cfg = &cfg;
    int status = 1;
    if (luascript_load_all(&gw.scripts, cfg.lua_dir, err, sizeof(err)) != 0) {
        LOG_ERROR("%s", err);
        config_free(&cfg);
        return 1;
    }
    gw.base = event_base_new();
    /* Purchase-token nonces start at a random point so that a restarted gateway, or a
     * second one with the same secret, does not hand out nonces already spent. */
    evutil_secure_rng_get_bytes(&gw.token_nonce, sizeof(gw.token_nonce));
    tokenbucket_init(&gw.bucket, cfg.permits_per_second, cfg.burst_capacity, clock_mono_us());
    gw.iplimit = iplimit_from_config(&cfg);
    if (!gw.iplimit && cfg.per_ip_local_permits_per_second > 0) {
        LOG_ERROR("out of memory");
        goto out;
    }
    gw.kafka = kafkaprod_new(gw.base, &cfg, err, sizeof(err));
    if (!gw.kafka) {
        LOG_ERROR("%s", err);
        goto out;
    }
    gw.redis = redisconn_new(gw.base, &cfg, &gw.scripts);
    gw.activities = activity_cache_new(gw.base, &cfg, gw.redis);
    gw.marks = queuedmarks_new(gw.base, &cfg, gw.redis, gw.activities);
    gw.batch = executebatch_new(gw.base, &cfg, gw.redis, gw.activities);
    if (!gw.batch) {
        LOG_ERROR("out of memory");
        goto out;
    }
    redisconn_on_connect(gw.redis, on_redis_connect, &gw);
    struct reaper *reaper = reaper_new(gw.base, &cfg, gw.redis, gw.activities);
    struct http *http = http_new(&gw, err, sizeof(err));
    if (!http) {
        LOG_ERROR("%s", err);
        reaper_free(reaper);
        goto out;
    }
    struct server_drain drain = { &gw, http, NULL, 0 };
    drain.timer = event_new(gw.base, -1, EV_PERSIST, on_drain_tick, &drain);
    struct event *sigterm = evsignal_new(gw.base, SIGTERM, on_signal, &drain);
    struct event *sigint = evsignal_new(gw.base, SIGINT, on_signal, &drain);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);

    event_base_dispatch(gw.base);

    /* A loopbreak can leave a flush unrun: its requests are answered 503 while their
     * HTTP requests still exist. */
    executebatch_free(gw.batch);
    gw.batch = NULL;

    /* Every request has its delivery report by now unless the drain deadline passed;
     * flushing serves any stragglers (they roll back if Kafka cannot take them). */
    if (kafkaprod_flush(gw.kafka, 5000) != 0)
        LOG_WARN("kafka flush timed out; undelivered orders expire through the reaper");
    http_free(http);
    reaper_free(reaper);
    event_free(drain.timer);
    event_free(sigterm);
    event_free(sigint);
    status = 0;
    LOG_INFO("stopped");
out:
    executebatch_free(gw.batch);
    redisconn_free(gw.redis);  /* pending callbacks still see the cache and marks */
    queuedmarks_free(gw.marks);
    activity_cache_free(gw.activities);
    kafkaprod_free(gw.kafka);
    execute_free_spares(&gw);  /* last: the callbacks above may still finish orders */
    event_base_free(gw.base);
    luascript_free_all(&gw.scripts);
    iplimit_free(gw.iplimit);
    config_free(&cfg);
    return status;
}
