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
#include "gateway/adminfwd.h"
#include "gateway/archive.h"
#include "gateway/bans.h"
#include "common/config.h"
#include "common/exposure.h"
#include "common/keys.h"
#include "gateway/rebalance.h"
#include "gateway/gateway.h"
#include "gateway/execute.h"
#include "gateway/executebatch.h"
#include "gateway/http.h"
#include "gateway/iplimit.h"
#include "gateway/kafkaprod.h"
#include "gateway/longpoll.h"
#include "common/log.h"
#include "common/orderno.h"
#include "gateway/nodelease.h"
#include "gateway/pending.h"
#include "gateway/queuedmarks.h"
#include "gateway/reaper.h"
#include "gateway/redeliver.h"
#include "gateway/refusals.h"
#include "gateway/salestats.h"
#include "gateway/redisconn.h"

extern char **environ;

/* After every Redis (re)connect: an order-number node lease if none is held, a cache
 * refresh. */
static void on_redis_connect(void *arg)
{
    struct gateway *gw = arg;
    nodelease_on_connect(gw->lease);
    activity_cache_refresh(gw->activities);
    bans_refresh(gw->bans);
}

/* Shutdown: stop accepting, let in-flight requests finish (their Kafka delivery reports
 * included), write the last queued marks, then leave the loop; server_stop does the rest.
 * The deadline leaves room for every request's own bound: its request timeout, and for
 * an execute past it the rollback that decides its answer (redis.timeout-ms). */
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
    bool idle = gw->in_flight == 0 && queuedmarks_pending(gw->marks) == 0 &&
    redisconn_pending(gw->redis) == 0;
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
    /* No order number is made from here on (execute answers 503 while draining). */
    nodelease_release(d->gw->lease);
    http_stop_accepting(d->http);
    size_t held = longpoll_close(d->gw->longpoll);  /* their waits may be longer than the drain */
    if (held)
        LOG_INFO("answered %zu held requests with their current status", held);
    const struct config *cfg = d->gw->cfg;
    int64_t margin_ms = cfg->redis_timeout_ms + 1000 > 2000 ? cfg->redis_timeout_ms + 1000 : 2000;
    d->deadline_us = clock_mono_us() + (cfg->http_request_timeout_ms + margin_ms) * 1000;
    struct timeval tick = { 0, 10 * 1000 };
    event_add(d->timer, &tick);
}

/* Runs the loop again until done(gw) or timeout_ms: the last answers and Redis writes
 * need it after the drain has left it. */
struct server_settle {
    struct gateway *gw;
    bool (*done)(const struct gateway *gw);
    int64_t until_us;
};

static void on_settle_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct server_settle *s = arg;
    if ((s->done && s->done(s->gw)) || clock_mono_us() >= s->until_us)
        event_base_loopbreak(s->gw->base);
}

static void run_loop_until(struct gateway *gw, bool (*done)(const struct gateway *gw), int64_t timeout_ms)
{
    struct server_settle s = { gw, done, clock_mono_us() + timeout_ms * 1000 };
    struct event *tick = event_new(gw->base, -1, EV_PERSIST, on_settle_tick, &s);
    if (!tick)
        return;
    struct timeval tv = { 0, 10 * 1000 };
    event_add(tick, &tv);
    event_base_dispatch(gw->base);
    event_free(tick);
}

static bool redis_settled(const struct gateway *gw)
{
    return redisconn_pending(gw->redis) == 0 && queuedmarks_pending(gw->marks) == 0;
}

/* After the drain, in the order of ownership. Requests still waiting are answered 503 and
 * detached (pending.h), so no late callback can reply on a request evhttp frees; the
 * HTTP side goes first, then the producer (its last reports roll back through Redis and
 * add marks), then the loop runs until those reach Redis, bounded by redis.timeout-ms.
 * main frees Redis next (its callbacks still see marks and cache), then marks and cache. */
static void server_stop(struct gateway *gw, struct http *http)
{
    size_t cut = pending_close(gw->pending) + pending_close(gw->delivery_cut) + longpoll_close(gw->longpoll);
    if (cut) {
        LOG_WARN("drain deadline: %zu requests still waiting answered 503", cut);
        run_loop_until(gw, NULL, 200);  /* lets the 503s reach their sockets */
    }
    http_free(http);
    executebatch_free(gw->batch);  /* a flush left unrun: its verdicts fail, nobody to answer */
    gw->batch = NULL;
    if (kafkaprod_flush(gw->kafka, 5000) != 0)
        LOG_WARN("kafka flush timed out; undelivered orders are rolled back");
    kafkaprod_free(gw->kafka);
    gw->kafka = NULL;
    queuedmarks_flush(gw->marks);
    if (!redis_settled(gw))
        run_loop_until(gw, redis_settled, gw->cfg->redis_timeout_ms + 500);
}

/* evhttp disables a connection's read event while a request is served and enables it
 * again with the reply, and arms and clears the write event around every reply: with
 * the changelist an epoll_ctl is made only for what differs at the end of a loop pass,
 * not for every such toggle. The changelist's one hazard, several fds dup()ed from one
 * file, does not arise here. */
static struct event_base *event_base_with_changelist(void)
{
    struct event_config *ecfg = event_config_new();
    if (!ecfg)
        return NULL;
    event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(ecfg);
    event_config_free(ecfg);
    return base;
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
    enum logline_format format;
    if (logline_parse_format(cfg.log_format, &format) == 0)
        log_set_format(format);
    exposure_warn_gateway(&cfg);
    signal(SIGPIPE, SIG_IGN);

    struct gateway gw;
    memset(&gw, 0, sizeof(gw));
    gw.cfg = &cfg;
    int status = 1;
    struct reaper *reaper = NULL;
    struct redeliver *redeliver = NULL;
    if (luascript_load_all(&gw.scripts, cfg.lua_dir, err, sizeof(err)) != 0) {
        LOG_ERROR("%s", err);
        config_free(&cfg);
        return 1;
    }
    gw.base = event_base_with_changelist();
    gw.pending = pending_set_new(gw.base, cfg.http_request_timeout_ms, "http.request-timeout-ms", NULL);
    /* config.c keeps the request timeout above redis.timeout-ms */
    gw.delivery_cut = pending_set_new(gw.base, cfg.http_request_timeout_ms - cfg.redis_timeout_ms,
                                      "the delivery cut (request timeout - redis.timeout-ms)", NULL);
    if (!gw.pending || !gw.delivery_cut || execute_start(&gw) != 0) {
        LOG_ERROR("out of memory");
        goto out;
    }
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
    gw.lease = nodelease_new(&gw);
    if (!gw.lease) {
        LOG_ERROR("out of memory");
        goto out;
    }
    gw.longpoll = longpoll_new(gw.base, &cfg, gw.redis);
    if (!gw.longpoll) {
        LOG_ERROR("out of memory");
        goto out;
    }
    gw.archive = archive_new(gw.redis, &cfg);
    gw.admin = adminfwd_new(gw.base, &cfg, err, sizeof(err));
    if (!gw.archive || !gw.admin) {
        LOG_ERROR("%s", gw.admin ? "out of memory" : err);
        goto out;
    }
    gw.activities = activity_cache_new(gw.base, &cfg, gw.redis);
    activity_cache_set_archive(gw.activities, gw.archive);
    gw.bans = bans_new(gw.base, &cfg, gw.redis);
    if (!gw.bans) {
        LOG_ERROR("out of memory");
        goto out;
    }
    gw.marks = queuedmarks_new(gw.base, &cfg, gw.redis, gw.activities);
    gw.batch = executebatch_new(gw.base, &cfg, gw.redis, gw.activities);
    if (!gw.batch) {
        LOG_ERROR("out of memory");
        goto out;
    }
    redisconn_on_connect(gw.redis, on_redis_connect, &gw);
    if (!cfg.reply_after_ack &&
        !(redeliver = redeliver_new(&cfg, gw.redis, gw.kafka, gw.marks, gw.activities))) {
        LOG_ERROR("out of memory");
        goto out;
    }
    reaper = reaper_new(gw.base, &cfg, gw.redis, gw.activities, gw.lease, redeliver, gw.marks);
    if (!reaper) {
        LOG_ERROR("out of memory");
        goto out;
    }
    gw.sales = salestats_new(gw.base, &cfg, gw.redis, gw.activities);
    gw.refusals = refusals_new(gw.base, &cfg, gw.redis, gw.activities);
    gw.rebalance = rebalance_new(gw.base, &cfg, gw.redis, gw.activities);
    if (!gw.sales || !gw.refusals || !gw.rebalance) {
        LOG_ERROR("out of memory");
        goto out;
    }
    struct http *http = http_new(&gw, err, sizeof(err));
    if (!http) {
        LOG_ERROR("%s", err);
        goto out;
    }
    struct server_drain drain = { &gw, http, NULL, 0 };
    drain.timer = event_new(gw.base, -1, EV_PERSIST, on_drain_tick, &drain);
    struct event *sigterm = evsignal_new(gw.base, SIGTERM, on_signal, &drain);
    struct event *sigint = evsignal_new(gw.base, SIGINT, on_signal, &drain);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);

    event_base_dispatch(gw.base);
    event_del(drain.timer);  /* its loopbreak would cut server_stop's loops short */
    server_stop(&gw, http);
    event_free(drain.timer);
    event_free(sigterm);
    event_free(sigint);
    status = 0;
    LOG_INFO("stopped");
out:
    executebatch_free(gw.batch);
    kafkaprod_free(gw.kafka);  /* before Redis: leftover reports roll back through it */
    execute_stop(&gw);
    adminfwd_close(gw.admin);  /* before Redis: a read answered by Redis now forwards nothing */
    /* pending callbacks still see the cache, marks, reaper, lease, sale stats and rebalance */
    redisconn_free(gw.redis);
    adminfwd_free(gw.admin);
    archive_free(gw.archive);  /* after Redis: its last lookups have run */
    longpoll_free(gw.longpoll);  /* after Redis: its last reads have run */
    reaper_free(reaper);
    redeliver_free(redeliver);  /* after the producer and Redis: their last callbacks have run */
    salestats_free(gw.sales);
    refusals_free(gw.refusals);
    rebalance_free(gw.rebalance);
    nodelease_free(gw.lease);
    queuedmarks_free(gw.marks);
    activity_cache_free(gw.activities);
    bans_free(gw.bans);  /* after Redis: its last read has run */
    pending_set_free(gw.pending);  /* every context has ended by now */
    pending_set_free(gw.delivery_cut);
    execute_free(&gw);  /* last: the callbacks above may still finish orders */
    event_base_free(gw.base);
    luascript_free_all(&gw.scripts);
    iplimit_free(gw.iplimit);
    config_free(&cfg);
    return status;
}
