#include "gateway/redisnode.h"

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/metrics.h"

/* One command in flight. Owned by redisnode from send until its hiredis callback has
 * run; linked in send order so the head is always the oldest. buf belongs to the sender. */
struct redisnode_cmd {
    struct redisnode_cmd *prev, *next;
    struct redisnode *n;
    redisnode_cb cb;
    void *privdata;
    int64_t sent_us;
    int64_t deadline_us;
    const char *buf;
    size_t len;
    enum luascript_id script;
    bool asking;
    bool retried;
};

struct redisnode {
    struct event_base *base;
    const struct config *cfg;
    const struct luascript_set *scripts;
    char host[64];
    int port;
    redisAsyncContext *ac;         /* NULL while disconnected */
    bool connected;
    int64_t connect_us;            /* when the connect in progress (ac, !connected) began */
    struct event *reconnect_timer;
    struct event *deadline_timer;
    int64_t tick_us;               /* the deadline timer's period */
    int64_t last_check_us;         /* when it last ran */
    int64_t backoff_ms;
    struct redisnode_cmd head;     /* sentinel of the in-flight list */
    unsigned long pending;
    unsigned long reconnects;
    redisnode_event_cb on_event;
    void *on_event_arg;
};

static void redisnode_connect(struct redisnode *n);

static void cmd_link(struct redisnode *n, struct redisnode_cmd *cmd)
{
    cmd->prev = n->head.prev;
    cmd->next = &n->head;
    n->head.prev->next = cmd;
    n->head.prev = cmd;
    n->pending++;
}

static void cmd_unlink(struct redisnode *n, struct redisnode_cmd *cmd)
{
    cmd->prev->next = cmd->next;
    cmd->next->prev = cmd->prev;
    n->pending--;
}

static void schedule_reconnect(struct redisnode *n)
{
    struct timeval tv = clock_timeval_ms(n->backoff_ms);
    evtimer_add(n->reconnect_timer, &tv);
    LOG_WARN("redis %s:%d unavailable, reconnecting in %lld ms", n->host, n->port, (long long)n->backoff_ms);
    n->backoff_ms *= 2;
    if (n->backoff_ms > n->cfg->redis_reconnect_max_ms)
        n->backoff_ms = n->cfg->redis_reconnect_max_ms;
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    redisnode_connect(arg);
}

static void command_done(redisAsyncContext *ac, void *r, void *privdata);

static int send_cmd(struct redisnode *n, struct redisnode_cmd *cmd)
{
    /* Fire and forget: ASKING holds for the next command on this connection only. */
    if (cmd->asking && redisAsyncCommand(n->ac, NULL, NULL, "ASKING") != REDIS_OK)
        return -1;
    if (redisAsyncFormattedCommand(n->ac, command_done, cmd, cmd->buf, cmd->len) != REDIS_OK)
        return -1;
    cmd->sent_us = clock_mono_us();
    cmd->deadline_us = cmd->sent_us + n->cfg->redis_timeout_ms * 1000;
    cmd_link(n, cmd);
    return 0;
}

static void load_scripts(struct redisnode *n)
{
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        const struct luascript *s = &n->scripts->scripts[i];
        /* Fire and forget: the EVALSHAs queued behind it on this context see its effect. */
        redisAsyncCommand(n->ac, NULL, NULL, "SCRIPT LOAD %b", s->body, s->body_len);
    }
}

static void command_done(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    struct redisnode_cmd *cmd = privdata;
    struct redisnode *n = cmd->n;
    redisReply *reply = r;
    cmd_unlink(n, cmd);
    if (reply)
        metrics_observe(METRIC_REDIS_ROUNDTRIP, clock_mono_us() - cmd->sent_us);
    if (reply && cmd->script != LUASCRIPT_COUNT && !cmd->retried && luascript_is_noscript(reply) &&
        n->connected) {
        const struct luascript *s = &n->scripts->scripts[cmd->script];
        LOG_WARN("redis %s:%d forgot script %s, loading it again", n->host, n->port, s->name);
        redisAsyncCommand(n->ac, NULL, NULL, "SCRIPT LOAD %b", s->body, s->body_len);
        cmd->retried = true;
        if (send_cmd(n, cmd) == 0)
            return;
        reply = NULL;
    }
    cmd->cb(reply, cmd->privdata);
    free(cmd);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct redisnode *n = ac->data;
    if (status != REDIS_OK) {
        LOG_WARN("redis %s:%d connect failed: %s", n->host, n->port, ac->errstr);
        n->ac = NULL;  /* hiredis frees the context after this callback */
        schedule_reconnect(n);
        return;
    }
    n->connected = true;
    n->backoff_ms = n->cfg->redis_reconnect_min_ms;
    LOG_INFO("redis %s:%d connected", n->host, n->port);
    load_scripts(n);
    if (n->on_event)
        n->on_event(n->on_event_arg, n, true);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct redisnode *n = ac->data;
    if (status != REDIS_OK)
        LOG_WARN("redis %s:%d connection lost: %s", n->host, n->port, ac->errstr[0] ? ac->errstr : "closed");
    n->connected = false;
    n->ac = NULL;
    n->reconnects++;
    schedule_reconnect(n);
    if (n->on_event)
        n->on_event(n->on_event_arg, n, false);
}

static void redisnode_connect(struct redisnode *n)
{
    redisAsyncContext *ac = redisAsyncConnect(n->host, n->port);
    if (!ac) {
        schedule_reconnect(n);
        return;
    }
    if (ac->err) {
        LOG_WARN("redis %s:%d connect failed: %s", n->host, n->port, ac->errstr);
        redisAsyncFree(ac);
        schedule_reconnect(n);
        return;
    }
    ac->data = n;
    n->ac = ac;
    n->connect_us = clock_mono_us();
    redisLibeventAttach(ac, n->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

/* A check that runs a tick or more late means this process did not run meanwhile (the
 * kernel gave the cores to others, or one loop iteration took that long). That time is
 * not Redis's: the commands may not even have been written, and replies that came are
 * still unread. Every pending deadline moves by it. */
static void forgive_own_stall(struct redisnode *n, int64_t now)
{
    int64_t late = now - n->last_check_us - n->tick_us;
    n->last_check_us = now;
    if (late < n->tick_us)
        return;
    for (struct redisnode_cmd *c = n->head.next; c != &n->head; c = c->next)
        c->deadline_us += late;
}

/* A connect that got no answer within redis.timeout-ms starts again. hiredis 0.14 has no
 * connect timeout of its own: across a partition (packets dropped, nothing refused) the
 * kernel retransmits the SYN after 1, 3, 7, 15, 31 ... s, so a node cut off for 10 s was
 * reached again only with the SYN of second 15, one cut off for a minute after two. */
static void connect_timed_out(struct redisnode *n, int64_t now)
{
    redisAsyncContext *ac = n->ac;
    LOG_WARN("redis %s:%d: no answer to connect within %lld ms, connecting again", n->host, n->port,
             (long long)((now - n->connect_us) / 1000));
    /* Never connected: no callback of its own to run, and none of on_disconnect's. */
    ac->onDisconnect = NULL;
    n->ac = NULL;
    redisAsyncFree(ac);
    schedule_reconnect(n);
}

/* The oldest command is the first to miss its deadline; dropping the connection fails
 * it and everything queued behind it, which would only wait longer. */
static void on_deadline_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redisnode *n = arg;
    int64_t now = clock_mono_us();
    forgive_own_stall(n, now);
    if (n->ac && !n->connected) {
        if (now - n->connect_us > n->cfg->redis_timeout_ms * 1000)
            connect_timed_out(n, now);
        return;
    }
    if (!n->ac || n->head.next == &n->head)
        return;
    if (n->head.next->deadline_us > now)
        return;
    metrics_inc(METRIC_REDIS_TIMEOUTS);
    LOG_WARN("redis did not answer within %lld ms (%lu commands pending, the oldest sent %lld ms ago), "
             "dropping the connection to %s:%d", (long long)n->cfg->redis_timeout_ms, n->pending,
             (long long)((now - n->head.next->sent_us) / 1000), n->host, n->port);
    redisAsyncContext *ac = n->ac;
    n->connected = false;
    /* Calls every pending callback with NULL and then on_disconnect, which schedules
     * the reconnect. */
    redisAsyncFree(ac);
    if (n->ac == ac) {
        /* on_disconnect only runs for a connection that was established */
        n->ac = NULL;
        schedule_reconnect(n);
    }
}

struct redisnode *redisnode_new(struct event_base *base, const struct config *cfg,
                                const struct luascript_set *scripts, const char *host, int port,
                                redisnode_event_cb on_event, void *arg)
{
    struct redisnode *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->base = base;
    n->cfg = cfg;
    n->scripts = scripts;
    snprintf(n->host, sizeof(n->host), "%s", host);
    n->port = port;
    n->on_event = on_event;
    n->on_event_arg = arg;
    n->head.next = n->head.prev = &n->head;
    n->backoff_ms = cfg->redis_reconnect_min_ms;
    n->reconnect_timer = evtimer_new(base, on_reconnect_timer, n);
    n->deadline_timer = event_new(base, -1, EV_PERSIST, on_deadline_timer, n);
    if (!n->reconnect_timer || !n->deadline_timer) {
        if (n->reconnect_timer)
            event_free(n->reconnect_timer);
        if (n->deadline_timer)
            event_free(n->deadline_timer);
        free(n);
        return NULL;
    }
    int64_t tick_ms = cfg->redis_timeout_ms / 4;
    if (tick_ms < 5)
        tick_ms = 5;
    struct timeval tick = clock_timeval_ms(tick_ms);
    n->tick_us = tick_ms * 1000;
    n->last_check_us = clock_mono_us();
    evtimer_add(n->deadline_timer, &tick);
    redisnode_connect(n);
    return n;
}

void redisnode_free(struct redisnode *n)
{
    if (!n)
        return;
    event_free(n->reconnect_timer);
    event_free(n->deadline_timer);
    if (n->ac) {
        redisAsyncContext *ac = n->ac;
        n->connected = false;
        ac->onDisconnect = NULL;
        redisAsyncFree(ac);
        n->ac = NULL;
    }
    free(n);
}

bool redisnode_ready(const struct redisnode *n) { return n->connected; }
unsigned long redisnode_pending(const struct redisnode *n) { return n->pending; }
unsigned long redisnode_reconnects(const struct redisnode *n) { return n->reconnects; }

int redisnode_send(struct redisnode *n, const char *buf, size_t len, enum luascript_id script,
                   bool asking, redisnode_cb cb, void *privdata)
{
    if (!n->connected)
        return -1;
    struct redisnode_cmd *cmd = calloc(1, sizeof(*cmd));
    if (!cmd)
        return -1;
    cmd->n = n;
    cmd->cb = cb;
    cmd->privdata = privdata;
    cmd->buf = buf;
    cmd->len = len;
    cmd->script = script;
    cmd->asking = asking;
    if (send_cmd(n, cmd) != 0) {
        free(cmd);
        return -1;
    }
    return 0;
}
