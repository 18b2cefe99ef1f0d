#include "gateway/redisconn.h"

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/metrics.h"

#define REDISCONN_STACK_ARGS 32

/* One command in flight. Owned by redisconn from send until its hiredis callback has
 * run; linked in send order so the head is always the oldest. */
struct redisconn_cmd {
    struct redisconn_cmd *prev, *next;
    struct redisconn *rc;
    redisconn_cb cb;
    void *privdata;
    int64_t deadline_us;
    char *formatted;        /* kept for a NOSCRIPT retry; NULL for plain commands */
    size_t formatted_len;
    enum luascript_id script;
    bool retried;
};

struct redisconn {
    struct event_base *base;
    const struct config *cfg;
    const struct luascript_set *scripts;
    redisAsyncContext *ac;         /* NULL while disconnected */
    bool connected;
    struct event *reconnect_timer;
    struct event *deadline_timer;
    int64_t backoff_ms;
    struct redisconn_cmd head;     /* sentinel of the in-flight list */
    unsigned long pending;
    unsigned long reconnects;
    redisconn_connect_cb on_connect;
    void *on_connect_arg;
};

static void redisconn_connect(struct redisconn *rc);
static int eval_formatted(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                          const char *const *argv, const size_t *argvlen, const char **full, size_t *lens,
                          redisconn_cb cb, void *privdata);

static void cmd_link(struct redisconn *rc, struct redisconn_cmd *cmd)
{
    cmd->prev = rc->head.prev;
    cmd->next = &rc->head;
    rc->head.prev->next = cmd;
    rc->head.prev = cmd;
    rc->pending++;
}

static void cmd_unlink(struct redisconn *rc, struct redisconn_cmd *cmd)
{
    cmd->prev->next = cmd->next;
    cmd->next->prev = cmd->prev;
    rc->pending--;
}

static void schedule_reconnect(struct redisconn *rc)
{
    struct timeval tv = clock_timeval_ms(rc->backoff_ms);
    evtimer_add(rc->reconnect_timer, &tv);
    LOG_WARN("redis %s:%lld unavailable, reconnecting in %lld ms", rc->cfg->redis_host,
             (long long)rc->cfg->redis_port, (long long)rc->backoff_ms);
    rc->backoff_ms *= 2;
    if (rc->backoff_ms > rc->cfg->redis_reconnect_max_ms)
        rc->backoff_ms = rc->cfg->redis_reconnect_max_ms;
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    redisconn_connect(arg);
}

static void command_done(redisAsyncContext *ac, void *r, void *privdata);

static int send_formatted(struct redisconn *rc, struct redisconn_cmd *cmd, const char *buf, size_t len)
{
    if (redisAsyncFormattedCommand(rc->ac, command_done, cmd, buf, len) != REDIS_OK)
        return -1;
    cmd->deadline_us = clock_mono_us() + rc->cfg->redis_timeout_ms * 1000;
    cmd_link(rc, cmd);
    return 0;
}

static void load_scripts(struct redisconn *rc)
{
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        const struct luascript *s = &rc->scripts->scripts[i];
        /* Fire and forget: the EVALSHAs queued behind it on this context see its effect. */
        redisAsyncCommand(rc->ac, NULL, NULL, "SCRIPT LOAD %b", s->body, s->body_len);
    }
}

static void command_done(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    struct redisconn_cmd *cmd = privdata;
    struct redisconn *rc = cmd->rc;
    redisReply *reply = r;
    cmd_unlink(rc, cmd);
    if (reply)
        metrics_observe_us(METRIC_REDIS_ROUNDTRIP, clock_mono_us() - (cmd->deadline_us - rc->cfg->redis_timeout_ms * 1000));
    if (reply && cmd->formatted && !cmd->retried && luascript_is_noscript(reply) && rc->connected) {
        const struct luascript *s = &rc->scripts->scripts[cmd->script];
        LOG_WARN("redis forgot script %s, loading it again", s->name);
        redisAsyncCommand(rc->ac, NULL, NULL, "SCRIPT LOAD %b", s->body, s->body_len);
        cmd->retried = true;
        if (send_formatted(rc, cmd, cmd->formatted, cmd->formatted_len) == 0)
            return;
        reply = NULL;
    }
    cmd->cb(reply, cmd->privdata);
    if (cmd->formatted)
        redisFreeCommand(cmd->formatted);
    free(cmd);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct redisconn *rc = ac->data;
    if (status != REDIS_OK) {
        LOG_WARN("redis connect failed: %s", ac->errstr);
        rc->ac = NULL;  /* hiredis frees the context after this callback */
        schedule_reconnect(rc);
        return;
    }
    rc->connected = true;
    rc->backoff_ms = rc->cfg->redis_reconnect_min_ms;
    LOG_INFO("redis %s:%lld connected", rc->cfg->redis_host, (long long)rc->cfg->redis_port);
    load_scripts(rc);
    if (rc->on_connect)
        rc->on_connect(rc->on_connect_arg);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct redisconn *rc = ac->data;
    if (status != REDIS_OK)
        LOG_WARN("redis connection lost: %s", ac->errstr[0] ? ac->errstr : "closed");
    rc->connected = false;
    rc->ac = NULL;
    rc->reconnects++;
    schedule_reconnect(rc);
}

static void redisconn_connect(struct redisconn *rc)
{
    redisAsyncContext *ac = redisAsyncConnect(rc->cfg->redis_host, (int)rc->cfg->redis_port);
    if (!ac) {
        schedule_reconnect(rc);
        return;
    }
    if (ac->err) {
        LOG_WARN("redis connect failed: %s", ac->errstr);
        redisAsyncFree(ac);
        schedule_reconnect(rc);
        return;
    }
    ac->data = rc;
    rc->ac = ac;
    redisLibeventAttach(ac, rc->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

/* The oldest command is the first to miss its deadline; dropping the connection fails
 * it and everything queued behind it, which would only wait longer. */
static void on_deadline_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redisconn *rc = arg;
    if (!rc->ac || rc->head.next == &rc->head)
        return;
    if (rc->head.next->deadline_us > clock_mono_us())
        return;
    metrics_inc(METRIC_REDIS_TIMEOUTS);
    LOG_WARN("redis did not answer within %lld ms (%lu commands pending), dropping the connection",
             (long long)rc->cfg->redis_timeout_ms, rc->pending);
    redisAsyncContext *ac = rc->ac;
    rc->connected = false;
    /* Calls every pending callback with NULL and then on_disconnect, which schedules
     * the reconnect. */
    redisAsyncFree(ac);
    if (rc->ac == ac) {
        /* on_disconnect only runs for a connection that was established */
        rc->ac = NULL;
        schedule_reconnect(rc);
    }
}

struct redisconn *redisconn_new(struct event_base *base, const struct config *cfg,
                                const struct luascript_set *scripts)
{
    struct redisconn *rc = calloc(1, sizeof(*rc));
    if (!rc)
        return NULL;
    rc->base = base;
    rc->cfg = cfg;
    rc->scripts = scripts;
    rc->head.next = rc->head.prev = &rc->head;
    rc->backoff_ms = cfg->redis_reconnect_min_ms;
    rc->reconnect_timer = evtimer_new(base, on_reconnect_timer, rc);
    rc->deadline_timer = event_new(base, -1, EV_PERSIST, on_deadline_timer, rc);
    int64_t tick_ms = cfg->redis_timeout_ms / 4;
    if (tick_ms < 5)
        tick_ms = 5;
    struct timeval tick = clock_timeval_ms(tick_ms);
    evtimer_add(rc->deadline_timer, &tick);
    redisconn_connect(rc);
    return rc;
}

void redisconn_free(struct redisconn *rc)
{
    if (!rc)
        return;
    event_free(rc->reconnect_timer);
    event_free(rc->deadline_timer);
    if (rc->ac) {
        redisAsyncContext *ac = rc->ac;
        rc->connected = false;
        ac->onDisconnect = NULL;
        redisAsyncFree(ac);
        rc->ac = NULL;
    }
    free(rc);
}

void redisconn_on_connect(struct redisconn *rc, redisconn_connect_cb cb, void *arg)
{
    rc->on_connect = cb;
    rc->on_connect_arg = arg;
}

bool redisconn_ready(const struct redisconn *rc) { return rc->connected; }
unsigned long redisconn_pending(const struct redisconn *rc) { return rc->pending; }
unsigned long redisconn_reconnects(const struct redisconn *rc) { return rc->reconnects; }

int redisconn_eval(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                   const char *const *argv, const size_t *argvlen, redisconn_cb cb, void *privdata)
{
    if (!rc->connected)
        return -1;
    /* Small calls (every request) format from the stack; batches (marks, confirms) from
     * the heap. */
    int argc = 3 + nkeys + nargs;
    const char *stack_args[REDISCONN_STACK_ARGS];
    size_t stack_lens[REDISCONN_STACK_ARGS];
    const char **full = stack_args;
    size_t *lens = stack_lens;
    if (argc > REDISCONN_STACK_ARGS) {
        full = malloc(sizeof(*full) * (size_t)argc);
        lens = malloc(sizeof(*lens) * (size_t)argc);
        if (!full || !lens) {
            free(full);
            free(lens);
            return -1;
        }
    }
    int rc_send = eval_formatted(rc, script, nkeys, nargs, argv, argvlen, full, lens, cb, privdata);
    if (full != stack_args) {
        free(full);
        free(lens);
    }
    return rc_send;
}

static int eval_formatted(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                          const char *const *argv, const size_t *argvlen, const char **full, size_t *lens,
                          redisconn_cb cb, void *privdata)
{
    char numkeys[12];
    int numkeys_len = snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    full[0] = "EVALSHA";
    lens[0] = 7;
    full[1] = rc->scripts->scripts[script].sha;
    lens[1] = 40;
    full[2] = numkeys;
    lens[2] = (size_t)numkeys_len;
    for (int i = 0; i < nkeys + nargs; i++) {
        full[3 + i] = argv[i];
        lens[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
    struct redisconn_cmd *cmd = calloc(1, sizeof(*cmd));
    if (!cmd)
        return -1;
    int len = redisFormatCommandArgv(&cmd->formatted, 3 + nkeys + nargs, full, lens);
    if (len < 0) {
        free(cmd);
        return -1;
    }
    cmd->formatted_len = (size_t)len;
    cmd->rc = rc;
    cmd->cb = cb;
    cmd->privdata = privdata;
    cmd->script = script;
    if (send_formatted(rc, cmd, cmd->formatted, cmd->formatted_len) != 0) {
        redisFreeCommand(cmd->formatted);
        free(cmd);
        return -1;
    }
    return 0;
}

int redisconn_command_argv(struct redisconn *rc, int argc, const char *const *argv,
                           const size_t *argvlen, redisconn_cb cb, void *privdata)
{
    if (!rc->connected)
        return -1;
    struct redisconn_cmd *cmd = calloc(1, sizeof(*cmd));
    if (!cmd)
        return -1;
    cmd->rc = rc;
    cmd->cb = cb;
    cmd->privdata = privdata;
    char *buf;
    int len = redisFormatCommandArgv(&buf, argc, (const char **)argv, argvlen);
    if (len < 0) {
        free(cmd);
        return -1;
    }
    int rc_send = send_formatted(rc, cmd, buf, (size_t)len);
    /* hiredis copied the bytes into its output buffer */
    redisFreeCommand(buf);
    if (rc_send != 0) {
        free(cmd);
        return -1;
    }
    return 0;
}
