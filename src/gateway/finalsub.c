#include "gateway/finalsub.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bucket.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/slotmap.h"

#define CHANNEL_PREFIX "seckill:final:"
#define CHANNEL_LEN (BUCKET_TAG_LEN + 24)
#define TICK_MS 100
#define RETRY_MIN_MS 100
#define RETRY_MAX_MS 2000

enum chan_state {
    CHAN_OFF,            /* not subscribed anywhere */
    CHAN_SUBSCRIBING,    /* SSUBSCRIBE sent to `node`, not acknowledged yet */
    CHAN_ON,             /* acknowledged by `node`: messages arrive */
    CHAN_UNSUBSCRIBING,  /* SUNSUBSCRIBE sent to `node` */
};

/* One channel somebody holds or held within the grace period. Owned by the list
 * fs->chans; freed by the tick once OFF and unheld. */
struct chan {
    struct chan *next;
    char tag[BUCKET_TAG_LEN];
    char name[CHANNEL_LEN];
    size_t holders;
    int64_t idle_since_us;   /* when holders last fell to 0 */
    enum chan_state state;
    int node;                /* not CHAN_OFF: the node it was sent to */
    int64_t sent_us;         /* CHAN_SUBSCRIBING: when */
    int64_t retry_at_us;     /* CHAN_OFF: not before (after a failure) */
    int64_t backoff_ms;
    bool was_on;             /* an acknowledgement came before: the next one is a resubscribe */
};

/* A command sent on a connection and not answered yet; answers come in order. */
struct expect {
    struct expect *next;
    bool subscribe;
    char name[CHANNEL_LEN];
};

/* The subscriber connection to one node (index of fs->map). Owned by fs->conns. */
struct conn {
    struct finalsub *fs;
    int node;
    struct bufferevent *bev;   /* NULL while closed */
    redisReader *reader;
    bool connected;
    struct expect *head, *tail;
    int64_t retry_at_us;
    int64_t backoff_ms;
};

/* A CLUSTER SLOTS in flight; fs is cleared when fs goes first. */
struct slots_query {
    struct finalsub *fs;
};

struct finalsub {
    struct event_base *base;
    const struct config *cfg;
    struct redisconn *redis;
    finalsub_final_fn on_final;
    finalsub_subscribed_fn on_subscribed;
    void *arg;
    bool cluster;
    bool map_loaded;
    struct slots_query *loading;  /* a CLUSTER SLOTS in flight */
    bool reload;                /* the map is stale: reload before the next subscribe */
    bool map_failing;           /* the last CLUSTER SLOTS was refused or unusable (logged once) */
    char seed_host[SLOTMAP_HOST_LEN];
    struct slotmap map;
    struct conn *conns[SLOTMAP_MAX_NODES];
    struct chan *chans;
    struct event *tick;
    size_t on;
    unsigned long resubscribes;
};

static void reconcile(struct finalsub *fs);

static struct chan *chan_find(struct finalsub *fs, const char *name, size_t len)
{
    for (struct chan *c = fs->chans; c; c = c->next)
        if (strlen(c->name) == len && memcmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

static struct chan *chan_of_tag(struct finalsub *fs, const char *tag)
{
    for (struct chan *c = fs->chans; c; c = c->next)
        if (strcmp(c->tag, tag) == 0)
            return c;
    return NULL;
}

static void chan_retry_later(struct chan *c, int64_t now)
{
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : RETRY_MIN_MS;
    if (c->backoff_ms > RETRY_MAX_MS)
        c->backoff_ms = RETRY_MAX_MS;
    c->retry_at_us = now + c->backoff_ms * 1000;
}

static void chan_off(struct finalsub *fs, struct chan *c)
{
    if (c->state == CHAN_ON)
        fs->on--;
    c->state = CHAN_OFF;
    c->node = -1;
}

static void arm_tick(struct finalsub *fs)
{
    if (fs->chans && !evtimer_pending(fs->tick, NULL)) {
        struct timeval tv = clock_timeval_ms(TICK_MS);
        evtimer_add(fs->tick, &tv);
    }
}

static void conn_close(struct conn *k, const char *why)
{
    struct finalsub *fs = k->fs;
    if (k->bev) {
        if (why)
            LOG_WARN("redis %s:%d subscriber connection lost (%s); resubscribing",
                     fs->map.nodes[k->node].host, fs->map.nodes[k->node].port, why);
        bufferevent_free(k->bev);
        k->bev = NULL;
    }
    if (k->reader) {
        redisReaderFree(k->reader);
        k->reader = NULL;
    }
    k->connected = false;
    while (k->head) {
        struct expect *e = k->head;
        k->head = e->next;
        free(e);
    }
    k->tail = NULL;
    int64_t now = clock_mono_us();
    k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : RETRY_MIN_MS;
    if (k->backoff_ms > (int64_t)fs->cfg->redis_reconnect_max_ms)
        k->backoff_ms = fs->cfg->redis_reconnect_max_ms;
    k->retry_at_us = now + k->backoff_ms * 1000;
    for (struct chan *c = fs->chans; c; c = c->next)
        if (c->state != CHAN_OFF && c->node == k->node) {
            chan_off(fs, c);
            c->retry_at_us = now;  /* the connection's own backoff paces it */
        }
    if (fs->cluster)
        fs->reload = true;  /* the node may be failing over */
}

static int conn_send(struct conn *k, bool subscribe, const char *name)
{
    struct expect *e = calloc(1, sizeof(*e));
    char *cmd = NULL;
    const char *argv[] = { subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE", name };
    int len = e ? redisFormatCommandArgv(&cmd, 2, argv, NULL) : -1;
    if (len < 0 || bufferevent_write(k->bev, cmd, (size_t)len) != 0) {
        free(e);
        if (len >= 0)
            redisFreeCommand(cmd);
        return -1;
    }
    redisFreeCommand(cmd);
    e->subscribe = subscribe;
    snprintf(e->name, sizeof(e->name), "%s", name);
    if (k->tail)
        k->tail->next = e;
    else
        k->head = e;
    k->tail = e;
    return 0;
}

static bool is_str(const redisReply *r, const char *s)
{
    return r->type == REDIS_REPLY_STRING && strlen(s) == r->len && strncasecmp(r->str, s, r->len) == 0;
}

static struct expect *pop_expect(struct conn *k)
{
    struct expect *e = k->head;
    if (e) {
        k->head = e->next;
        if (!k->head)
            k->tail = NULL;
    }
    return e;
}

/* "<STATUS> <orderNo> <orderNo> ...": one call per order. */
static void deliver(struct finalsub *fs, struct chan *c, char *payload)
{
    char *save = NULL;
    char *status = strtok_r(payload, " ", &save);
    if (!status || (strcmp(status, "SUCCESS") != 0 && strcmp(status, "FAILED") != 0))
        return;
    for (char *o = strtok_r(NULL, " ", &save); o; o = strtok_r(NULL, " ", &save))
        fs->on_final(fs->arg, c->tag, status, o);
}

static void on_acknowledged(struct finalsub *fs, struct conn *k, struct chan *c)
{
    if (c->state != CHAN_SUBSCRIBING || c->node != k->node)
        return;
    c->state = CHAN_ON;
    c->backoff_ms = 0;
    fs->on++;
    if (c->was_on)
        fs->resubscribes++;
    c->was_on = true;
    fs->on_subscribed(fs->arg, c->tag);
}

static void on_error_reply(struct finalsub *fs, struct conn *k, const redisReply *r)
{
    struct expect *e = pop_expect(k);
    if (!e)
        return;
    struct chan *c = chan_find(fs, e->name, strlen(e->name));
    int64_t now = clock_mono_us();
    if (c && c->node == k->node && (c->state == CHAN_SUBSCRIBING || c->state == CHAN_UNSUBSCRIBING)) {
        struct slotmap_redirect rd;
        chan_off(fs, c);
        if (slotmap_redirect(r, &rd) == SLOTMAP_MOVED && slotmap_follow(&fs->map, &rd) >= 0) {
            c->retry_at_us = now;  /* the map says where now */
        } else {
            LOG_WARN("redis %s:%d refused %s %s: %.*s", fs->map.nodes[k->node].host,
                     fs->map.nodes[k->node].port, e->subscribe ? "SSUBSCRIBE" : "SUNSUBSCRIBE", e->name,
                     (int)r->len, r->str);
            chan_retry_later(c, now);
            fs->reload = fs->cluster;
        }
    }
    free(e);
}

static void on_reply(struct finalsub *fs, struct conn *k, redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR) {
        on_error_reply(fs, k, r);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[1]->type != REDIS_REPLY_STRING)
        return;
    const redisReply *kind = r->element[0];
    struct chan *c = chan_find(fs, r->element[1]->str, r->element[1]->len);
    if (is_str(kind, "smessage")) {
        if (c && r->element[2]->type == REDIS_REPLY_STRING)
            deliver(fs, c, r->element[2]->str);
    } else if (is_str(kind, "ssubscribe")) {
        free(pop_expect(k));
        if (c)
            on_acknowledged(fs, k, c);
    } else if (is_str(kind, "sunsubscribe")) {
        struct expect *e = k->head;
        bool asked = e && !e->subscribe && strlen(e->name) == r->element[1]->len &&
                     memcmp(e->name, r->element[1]->str, r->element[1]->len) == 0;
        if (asked)
            free(pop_expect(k));
        if (c && c->node == k->node && c->state != CHAN_OFF && (asked || c->state == CHAN_ON)) {
            /* Unasked: the slot left this node (resharding, failover); find its new home. */
            if (!asked) {
                LOG_INFO("redis %s:%d dropped subscription %s; resubscribing", fs->map.nodes[k->node].host,
                         fs->map.nodes[k->node].port, c->name);
                fs->reload = fs->cluster;
            }
            chan_off(fs, c);
            c->retry_at_us = clock_mono_us();
        }
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct conn *k = arg;
    struct finalsub *fs = k->fs;
    struct evbuffer *in = bufferevent_get_input(bev);
    char buf[16384];
    int n;
    while ((n = evbuffer_remove(in, buf, sizeof(buf))) > 0)
        if (redisReaderFeed(k->reader, buf, (size_t)n) != REDIS_OK)
            break;
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(k->reader, &r) != REDIS_OK) {
            conn_close(k, "unreadable reply");
            return;
        }
        if (!r)
            break;
        on_reply(fs, k, r);
        freeReplyObject(r);
    }
    reconcile(fs);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct conn *k = arg;
    if (what & BEV_EVENT_CONNECTED) {
        k->connected = true;
        k->backoff_ms = 0;
        reconcile(k->fs);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        conn_close(k, what & BEV_EVENT_EOF ? "closed by the server" : "socket error");
        arm_tick(k->fs);
    }
}

/* The connection to node, opening it when it is closed and its backoff has passed;
 * NULL until it is connected. */
static struct conn *conn_ready(struct finalsub *fs, int node, int64_t now)
{
    if (node < 0 || node >= SLOTMAP_MAX_NODES)
        return NULL;
    struct conn *k = fs->conns[node];
    if (!k) {
        k = calloc(1, sizeof(*k));
        if (!k)
            return NULL;
        k->fs = fs;
        k->node = node;
        fs->conns[node] = k;
    }
    if (k->connected)
        return k;
    if (k->bev || now < k->retry_at_us)
        return NULL;
    k->reader = redisReaderCreate();
    k->bev = bufferevent_socket_new(fs->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!k->reader || !k->bev) {
        conn_close(k, NULL);
        return NULL;
    }
    bufferevent_setcb(k->bev, on_read, NULL, on_event, k);
    bufferevent_enable(k->bev, EV_READ | EV_WRITE);
    /* Resolves like hiredis's connect does (the configured hosts are addresses). */
    if (bufferevent_socket_connect_hostname(k->bev, NULL, AF_UNSPEC, fs->map.nodes[node].host,
                                            fs->map.nodes[node].port) != 0)
        conn_close(k, "connect failed");
    return NULL;
}

static void on_slots(redisReply *reply, void *privdata)
{
    struct slots_query *q = privdata;
    struct finalsub *fs = q->fs;
    free(q);
    if (!fs)
        return;
    fs->loading = NULL;
    char err[160];
    slotmap_set dropped = 0;
    if (!reply || slotmap_load(&fs->map, reply, fs->seed_host, &dropped, err, sizeof(err)) != 0) {
        /* Subscriptions wait for a map: say why once, or a stalled long poll has no trace. */
        if (!fs->map_failing)
            LOG_WARN("redis cluster: the subscriber's slot map was not loaded (%s); retrying",
                     reply ? err : "no reply");
        fs->map_failing = true;
        fs->reload = true;
        return;
    }
    /* A node that left the map serves none of the channels: its subscriptions move to
     * the slots' new masters, and its number may name another node from now on. */
    for (int i = 0; i < SLOTMAP_MAX_NODES; i++)
        if ((dropped & ((slotmap_set)1 << i)) && fs->conns[i]) {
            conn_close(fs->conns[i], NULL);
            free(fs->conns[i]);
            fs->conns[i] = NULL;
        }
    if (fs->map_failing)
        LOG_INFO("redis cluster: the subscriber's slot map loaded again");
    fs->map_failing = false;
    fs->map_loaded = true;
    fs->reload = false;
    reconcile(fs);
}

static void load_map(struct finalsub *fs)
{
    if (fs->loading)
        return;
    struct slots_query *q = malloc(sizeof(*q));
    if (!q)
        return;
    q->fs = fs;
    const char *argv[] = { "CLUSTER", "SLOTS" };
    if (redisconn_command_argv(fs->redis, 2, argv, NULL, on_slots, q) != 0) {
        free(q);
        return;
    }
    fs->loading = q;
}

static void reconcile(struct finalsub *fs)
{
    int64_t now = clock_mono_us();
    if (fs->cluster && (fs->reload || !fs->map_loaded))
        load_map(fs);
    struct chan **link = &fs->chans;
    while (*link) {
        struct chan *c = *link;
        struct conn *k = c->node >= 0 ? fs->conns[c->node] : NULL;
        if (c->holders == 0 && c->state == CHAN_OFF) {
            *link = c->next;
            free(c);
            continue;
        }
        link = &c->next;
        if (c->holders == 0 && c->state == CHAN_ON && now - c->idle_since_us >= FINALSUB_GRACE_MS * 1000LL) {
            if (k && k->connected && conn_send(k, false, c->name) == 0)
                c->state = CHAN_UNSUBSCRIBING;
        } else if (c->state == CHAN_SUBSCRIBING && now - c->sent_us > fs->cfg->redis_timeout_ms * 1000LL) {
            /* A frozen node: as redisnode does, give the connection up. */
            if (k)
                conn_close(k, "no answer to SSUBSCRIBE within redis.timeout-ms");
        } else if (c->holders > 0 && c->state == CHAN_OFF && now >= c->retry_at_us &&
                   (!fs->cluster || (fs->map_loaded && !fs->loading))) {
            int node = slotmap_owner_of_key(&fs->map, c->name, strlen(c->name));
            struct conn *to = node >= 0 ? conn_ready(fs, node, now) : NULL;
            if (node < 0)
                fs->reload = fs->cluster;
            if (to && conn_send(to, true, c->name) == 0) {
                c->state = CHAN_SUBSCRIBING;
                c->node = node;
                c->sent_us = now;
            }
        }
    }
    arm_tick(fs);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    reconcile(arg);
}

struct finalsub *finalsub_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                              finalsub_final_fn on_final, finalsub_subscribed_fn on_subscribed, void *arg)
{
    struct finalsub *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return NULL;
    fs->base = base;
    fs->cfg = cfg;
    fs->redis = redis;
    fs->on_final = on_final;
    fs->on_subscribed = on_subscribed;
    fs->arg = arg;
    fs->cluster = cfg->redis_nodes[0] != '\0';
    if (fs->cluster) {
        struct slotmap_addr seeds[SLOTMAP_MAX_NODES];
        char err[160];
        slotmap_init(&fs->map);
        if (slotmap_parse_nodes(cfg->redis_nodes, seeds, SLOTMAP_MAX_NODES, err, sizeof(err)) > 0)
            snprintf(fs->seed_host, sizeof(fs->seed_host), "%s", seeds[0].host);
    } else {
        slotmap_single(&fs->map, cfg->redis_host, (int)cfg->redis_port);
        fs->map_loaded = true;
    }
    fs->tick = evtimer_new(base, on_tick, fs);
    if (!fs->tick) {
        free(fs);
        return NULL;
    }
    return fs;
}

void finalsub_free(struct finalsub *fs)
{
    if (!fs)
        return;
    if (fs->loading)
        fs->loading->fs = NULL;
    for (int i = 0; i < SLOTMAP_MAX_NODES; i++)
        if (fs->conns[i]) {
            conn_close(fs->conns[i], NULL);
            free(fs->conns[i]);
        }
    while (fs->chans) {
        struct chan *c = fs->chans;
        fs->chans = c->next;
        free(c);
    }
    event_free(fs->tick);
    free(fs);
}

int finalsub_hold(struct finalsub *fs, const char *tag)
{
    struct chan *c = chan_of_tag(fs, tag);
    if (!c) {
        c = calloc(1, sizeof(*c));
        if (!c)
            return -1;
        snprintf(c->tag, sizeof(c->tag), "%s", tag);
        snprintf(c->name, sizeof(c->name), CHANNEL_PREFIX "{%s}", tag);
        c->node = -1;
        c->next = fs->chans;
        fs->chans = c;
    }
    c->holders++;
    if (c->state == CHAN_ON)
        return 1;
    if (c->state == CHAN_OFF)
        reconcile(fs);
    return 0;
}

void finalsub_release(struct finalsub *fs, const char *tag)
{
    struct chan *c = chan_of_tag(fs, tag);
    if (!c || c->holders == 0)
        return;
    if (--c->holders == 0)
        c->idle_since_us = clock_mono_us();
}

size_t finalsub_subscribed(const struct finalsub *fs) { return fs->on; }

unsigned long finalsub_resubscribes(const struct finalsub *fs) { return fs->resubscribes; }
