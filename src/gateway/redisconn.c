#include "gateway/redisconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/slotmap.h"
#include "gateway/redisnode.h"

#define REDISCONN_STACK_ARGS 32
/* Triggered reloads of the slot map (a MOVED, a lost node, a slot without a live master)
 * are at most this often; the MOVED itself has already fixed its slot. */
#define REDISCONN_REFRESH_MIN_US 100000
/* How often the connections of nodes that left the map are checked for pending work. */
#define REDISCONN_SWEEP_MS 50

struct redisconn_waitq;

/* One command from send until its caller's callback has run: the formatted bytes stay
 * here so a MOVED or ASK can resend them elsewhere. Freed once nothing refers to it any
 * more: its own reply chain and, while it waits, its node's wait queue (refs). */
struct redisconn_cmd {
    struct redisconn *rc;
    redisconn_cb cb;
    void *privdata;
    char *buf;
    size_t len;
    enum luascript_id script;
    int hops;
    int node;                        /* the node it was sent to last */
    /* redisconn_eval_wait and redisconn_eval_replicated only: */
    redisconn_wait_cb wait_cb;
    bool unwaited;                   /* no WAIT: wait_cb gets REDISCONN_UNWAITED */
    unsigned refs;
    struct redisconn_waitq *queue;   /* the node it was sent to last, until delivered */
    struct redisconn_cmd **wprev, *wnext;
    redisReply *held;                /* the final reply, copied, until a WAIT after it answers */
    bool replied;
    bool delivered;
};

/* The WAITs of one node's connection. A WAIT blocks its connection in Redis until it
 * answers, so one per call would make a late replica cost a wait timeout per call, back
 * to back. At most one is outstanding; it counts the replication offset of everything
 * the connection wrote before it, so it covers every waited call sent before it. */
struct redisconn_waitq {
    struct redisconn *rc;
    struct redisnode *node;          /* its peer's; NULL once that is closed */
    struct redisconn_cmd *covered;   /* sent before the WAIT in flight */
    struct redisconn_cmd *next;      /* sent after it: the next WAIT's */
    bool in_flight;
};

/* A CLUSTER SLOTS in flight, to the node at host:port. */
struct redisconn_slots {
    struct redisconn *rc;
    char host[SLOTMAP_HOST_LEN];
    int port;
};

/* The connection to one node of the map and its WAITs. Owned by redisconn: in peers[] at
 * its node's number while the node is in the map. When a reload drops the node (or gives
 * its number to another), it moves to the retired list, where the commands and WAITs
 * still out on it finish (each command's struct points at its waitq, which stays put);
 * the sweep timer frees it once nothing is pending, never inside one of its callbacks. */
struct redisconn_peer {
    struct redisnode *node;
    struct redisconn_waitq waitq;
    struct redisconn_peer *next_retired;
};

/* Ownership: redisconn owns its peers (one per slot map node: the single Redis, or every
 * node of the cluster's current map and seeds, plus the retired ones still draining), the
 * map and the timers. */
struct redisconn {
    struct event_base *base;
    const struct config *cfg;
    const struct luascript_set *scripts;
    bool cluster;
    bool map_loaded;        /* single: always; cluster: after the first CLUSTER SLOTS */
    bool refreshing;        /* a CLUSTER SLOTS is in flight */
    bool closing;
    int64_t refreshed_us;
    struct slotmap map;
    struct redisconn_peer *peers[SLOTMAP_MAX_NODES];  /* by node of map; NULL for a free number */
    struct redisconn_peer *retired;
    unsigned long retired_reconnects;  /* of the retired peers already freed */
    /* The node that last answered CLUSTERDOWN: asked for the map only when no other node
     * can be. A master cut off from the others (a minority) says CLUSTERDOWN once it
     * notices, yet its map still names itself: asked first, it would keep every gateway
     * on it for as long as the partition lasts, while the majority has promoted a replica. */
    struct slotmap_addr down;
    struct event *refresh_timer;
    struct event *sweep_timer;
    char *wait_buf;         /* WAIT redis.wait-replicas redis.wait-timeout-ms, formatted */
    int wait_len;
    redisconn_connect_cb on_connect;
    void *on_connect_arg;
};

static void refresh(struct redisconn *rc, bool triggered);

static void on_node_event(void *arg, struct redisnode *node, bool up)
{
    struct redisconn *rc = arg;
    if (rc->closing)
        return;
    for (struct redisconn_peer *p = rc->retired; p; p = p->next_retired)
        if (p->node == node)
            return;  /* no longer in the map: its coming and going tells nothing */
    if (rc->cluster)
        refresh(rc, true);  /* a lost master may be failing over; a back one may own slots */
    if (up && rc->map_loaded && rc->on_connect)
        rc->on_connect(rc->on_connect_arg);
}

/* The peer of node i of the map, created on first need (a node first heard of in a
 * CLUSTER SLOTS or a MOVED connects from then on). */
static struct redisconn_peer *peer_at(struct redisconn *rc, int i)
{
    if (!slotmap_known(&rc->map, i))
        return NULL;
    if (!rc->peers[i]) {
        struct redisconn_peer *p = calloc(1, sizeof(*p));
        if (!p)
            return NULL;
        p->node = redisnode_new(rc->base, rc->cfg, rc->scripts, rc->map.nodes[i].host, rc->map.nodes[i].port,
                                on_node_event, rc);
        if (!p->node) {
            free(p);
            return NULL;
        }
        p->waitq = (struct redisconn_waitq){ .rc = rc, .node = p->node };
        rc->peers[i] = p;
    }
    return rc->peers[i];
}

/* The connection of node i, NULL when it has none. */
static struct redisnode *node_of(const struct redisconn *rc, int i)
{
    return i >= 0 && i < SLOTMAP_MAX_NODES && rc->peers[i] ? rc->peers[i]->node : NULL;
}

static bool peer_idle(const struct redisconn_peer *p)
{
    return redisnode_pending(p->node) == 0 && !p->waitq.in_flight && !p->waitq.covered && !p->waitq.next;
}

static void peer_free(struct redisconn *rc, struct redisconn_peer *p)
{
    rc->retired_reconnects += redisnode_reconnects(p->node);
    redisnode_free(p->node);
    free(p);
}

static void on_sweep_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct redisconn *rc = arg;
    struct redisconn_peer **link = &rc->retired;
    while (*link) {
        struct redisconn_peer *p = *link;
        if (peer_idle(p)) {
            *link = p->next_retired;
            peer_free(rc, p);
        } else {
            link = &p->next_retired;
        }
    }
    if (!rc->retired)
        event_del(rc->sweep_timer);
}

/* Node i (at a) left the map: its connection is closed once nothing is pending on it. */
static void retire(struct redisconn *rc, int i, const struct slotmap_addr *a)
{
    struct redisconn_peer *p = rc->peers[i];
    rc->peers[i] = NULL;
    if (!p)
        return;
    bool idle = peer_idle(p);
    LOG_INFO("redis cluster: %s:%d left the slot map; closing its connection%s", a->host, a->port,
             idle ? "" : " once its commands are answered");
    p->next_retired = rc->retired;
    rc->retired = p;
    struct timeval tv = clock_timeval_ms(REDISCONN_SWEEP_MS);
    if (!evtimer_pending(rc->sweep_timer, NULL))
        event_add(rc->sweep_timer, &tv);
    if (idle)
        event_active(rc->sweep_timer, EV_TIMEOUT, 0);  /* at once, but outside this callback */
}

static void on_slots(redisReply *reply, void *privdata)
{
    struct redisconn_slots *q = privdata;
    struct redisconn *rc = q->rc;
    rc->refreshing = false;
    char err[160];
    if (!reply || rc->closing) {
        free(q);
        return;
    }
    struct slotmap_addr before[SLOTMAP_MAX_NODES];
    memcpy(before, rc->map.nodes, sizeof(before));
    slotmap_set dropped = 0;
    int loaded = slotmap_load(&rc->map, reply, q->host, &dropped, err, sizeof(err));
    if (loaded != 0) {
        free(q);
        LOG_WARN("redis cluster: %s", err);
        return;
    }
    if (strcmp(q->host, rc->down.host) != 0 || q->port != rc->down.port)
        rc->down = (struct slotmap_addr){ 0 };  /* another node's map: it answers again or is gone */
    free(q);
    for (int i = 0; i < SLOTMAP_MAX_NODES; i++)
        if (dropped & ((slotmap_set)1 << i))
            retire(rc, i, &before[i]);
    for (size_t i = 0; i < rc->map.count; i++)
        peer_at(rc, (int)i);
    size_t uncovered = slotmap_uncovered(&rc->map);
    if (uncovered)
        LOG_WARN("redis cluster: %zu slots have no master", uncovered);
    if (!rc->map_loaded) {
        rc->map_loaded = true;
        LOG_INFO("redis cluster: slot map loaded (%zu nodes known)", rc->map.count);
        if (rc->on_connect)
            rc->on_connect(rc->on_connect_arg);
    }
}

static bool is_down(const struct redisconn *rc, int i)
{
    return rc->down.port != 0 && rc->map.nodes[i].port == rc->down.port &&
           strcmp(rc->map.nodes[i].host, rc->down.host) == 0;
}

/* CLUSTER SLOTS to a connected node, masters first (a replica answers too), the node
 * that said CLUSTERDOWN last of all. */
static void refresh(struct redisconn *rc, bool triggered)
{
    int64_t now = clock_mono_us();
    if (!rc->cluster || rc->refreshing || rc->closing ||
        (triggered && now - rc->refreshed_us < REDISCONN_REFRESH_MIN_US))
        return;
    static const char cmd[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < rc->map.count; i++) {
            struct redisnode *n = node_of(rc, (int)i);
            if (!n || !redisnode_ready(n) || (pass == 2) != is_down(rc, (int)i) ||
                (pass < 2 && (pass == 0) != slotmap_owns_any(&rc->map, (int)i)))
                continue;
            struct redisconn_slots *q = malloc(sizeof(*q));
            if (!q)
                return;
            q->rc = rc;
            q->port = rc->map.nodes[i].port;
            snprintf(q->host, sizeof(q->host), "%s", rc->map.nodes[i].host);
            if (redisnode_send(n, cmd, sizeof(cmd) - 1, LUASCRIPT_COUNT, false, on_slots, q) == 0) {
                rc->refreshing = true;
                rc->refreshed_us = now;
                return;
            }
            free(q);
        }
}

static void on_refresh_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    refresh(arg, false);
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
    rc->cluster = cfg->redis_nodes[0] != '\0';
    rc->wait_len = redisFormatCommand(&rc->wait_buf, "WAIT %lld %lld", (long long)cfg->redis_wait_replicas,
                                      (long long)cfg->redis_wait_timeout_ms);
    if (rc->wait_len < 0) {
        free(rc);
        return NULL;
    }
    rc->sweep_timer = event_new(base, -1, EV_PERSIST, on_sweep_timer, rc);
    if (!rc->sweep_timer) {
        redisFreeCommand(rc->wait_buf);
        free(rc);
        return NULL;
    }
    if (!rc->cluster) {
        slotmap_single(&rc->map, cfg->redis_host, (int)cfg->redis_port);
        rc->map_loaded = true;
        if (!peer_at(rc, 0)) {
            event_free(rc->sweep_timer);
            redisFreeCommand(rc->wait_buf);
            free(rc);
            return NULL;
        }
        return rc;
    }
    /* Every node of redis.nodes is connected: any of them can tell the map, and a replica
     * promoted in a failover is ready at once. Commands only go to masters. */
    slotmap_init(&rc->map);
    struct slotmap_addr seeds[SLOTMAP_MAX_NODES];
    char err[160];
    int n = slotmap_parse_nodes(cfg->redis_nodes, seeds, SLOTMAP_MAX_NODES, err, sizeof(err));
    for (int i = 0; i < n; i++)
        peer_at(rc, slotmap_seed(&rc->map, &seeds[i]));
    rc->refresh_timer = event_new(base, -1, EV_PERSIST, on_refresh_timer, rc);
    if (rc->refresh_timer) {
        struct timeval tv = clock_timeval_ms(cfg->redis_cluster_refresh_ms);
        event_add(rc->refresh_timer, &tv);
    }
    return rc;
}

void redisconn_free(struct redisconn *rc)
{
    if (!rc)
        return;
    rc->closing = true;
    if (rc->refresh_timer)
        event_free(rc->refresh_timer);
    event_free(rc->sweep_timer);
    /* Out of the table before its connection is closed: the NULL replies that closing
     * gives to the commands on it run callbacks that may try to send again. The peers
     * are freed after every connection is, as a command's struct may point at the wait
     * queue of another. */
    struct redisconn_peer *all = rc->retired;
    for (size_t i = 0; i < SLOTMAP_MAX_NODES; i++)
        if (rc->peers[i]) {
            rc->peers[i]->next_retired = all;
            all = rc->peers[i];
            rc->peers[i] = NULL;
        }
    rc->retired = NULL;
    for (struct redisconn_peer *p = all; p; p = p->next_retired) {
        redisnode_free(p->node);
        p->node = NULL;
        p->waitq.node = NULL;
    }
    while (all) {
        struct redisconn_peer *p = all;
        all = p->next_retired;
        free(p);
    }
    redisFreeCommand(rc->wait_buf);
    free(rc);
}

void redisconn_on_connect(struct redisconn *rc, redisconn_connect_cb cb, void *arg)
{
    rc->on_connect = cb;
    rc->on_connect_arg = arg;
}

bool redisconn_ready(const struct redisconn *rc)
{
    if (!rc->map_loaded)
        return false;
    for (size_t i = 0; i < rc->map.count; i++)
        if (node_of(rc, (int)i) && redisnode_ready(node_of(rc, (int)i)) && slotmap_owns_any(&rc->map, (int)i))
            return true;
    return false;
}

static unsigned long sum_nodes(const struct redisconn *rc, unsigned long (*count)(const struct redisnode *))
{
    unsigned long n = 0;
    for (size_t i = 0; i < SLOTMAP_MAX_NODES; i++)
        if (rc->peers[i])
            n += count(rc->peers[i]->node);
    for (const struct redisconn_peer *p = rc->retired; p; p = p->next_retired)
        n += count(p->node);
    return n;
}

unsigned long redisconn_pending(const struct redisconn *rc) { return sum_nodes(rc, redisnode_pending); }

unsigned long redisconn_reconnects(const struct redisconn *rc)
{
    return rc->retired_reconnects + sum_nodes(rc, redisnode_reconnects);
}

static void cmd_unref(struct redisconn_cmd *cmd)
{
    if (--cmd->refs > 0)
        return;
    if (cmd->held)
        freeReplyObject(cmd->held);
    redisFreeCommand(cmd->buf);
    free(cmd);
}

/* hiredis frees a reply when its callback returns; the script's must outlive that until
 * the WAIT behind it answers. Allocated as hiredis does, so freeReplyObject frees it. */
static redisReply *reply_copy(const redisReply *r)
{
    redisReply *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->type = r->type;
    c->integer = r->integer;
    if (r->str) {
        c->str = malloc(r->len + 1);
        if (!c->str)
            goto fail;
        memcpy(c->str, r->str, r->len);
        c->str[r->len] = '\0';
        c->len = r->len;
    }
    if (r->element && r->elements > 0) {
        c->element = calloc(r->elements, sizeof(*c->element));
        if (!c->element)
            goto fail;
        c->elements = r->elements;
        for (size_t i = 0; i < r->elements; i++)
            if (r->element[i] && !(c->element[i] = reply_copy(r->element[i])))
                goto fail;
    }
    return c;
fail:
    freeReplyObject(c);
    return NULL;
}

static void wait_deliver(struct redisconn_cmd *cmd, long long replicas)
{
    if (cmd->delivered)
        return;
    cmd->delivered = true;
    cmd->wait_cb(cmd->held, replicas, cmd->privdata);
}

static void list_push(struct redisconn_cmd **head, struct redisconn_cmd *cmd)
{
    cmd->wnext = *head;
    if (*head)
        (*head)->wprev = &cmd->wnext;
    cmd->wprev = head;
    *head = cmd;
}

static void list_unlink(struct redisconn_cmd *cmd)
{
    *cmd->wprev = cmd->wnext;
    if (cmd->wnext)
        cmd->wnext->wprev = cmd->wprev;
    cmd->wprev = NULL;
    cmd->wnext = NULL;
}

/* Out of its queue (may free cmd). */
static void queue_leave(struct redisconn_cmd *cmd)
{
    if (!cmd->queue)
        return;
    list_unlink(cmd);
    cmd->queue = NULL;
    cmd_unref(cmd);
}

static void on_wait(redisReply *reply, void *privdata);
static void on_reply(redisReply *reply, void *privdata);

/* A WAIT for the calls sent since the last one, unless one is in flight (its answer
 * sends the next). Calls that have their reply and can get no WAIT fail. */
static void queue_kick(struct redisconn_waitq *q)
{
    struct redisconn *rc = q->rc;
    if (q->in_flight || !q->next)
        return;
    struct redisnode *n = q->node;
    if (!rc->closing && n && redisnode_send(n, rc->wait_buf, (size_t)rc->wait_len, LUASCRIPT_COUNT, false,
                                            on_wait, q) == 0) {
        q->in_flight = true;
        q->covered = q->next;
        q->covered->wprev = &q->covered;
        q->next = NULL;
        return;
    }
    /* Not connected (or closing): the calls still without a reply get their NULL from
     * redisnode. */
    struct redisconn_cmd *cmd = q->next;
    while (cmd) {
        struct redisconn_cmd *following = cmd->wnext;
        if (cmd->replied) {
            wait_deliver(cmd, -1);
            queue_leave(cmd);
        }
        cmd = following;
    }
}

/* A WAIT answers for the calls sent before it whose reply has come. One without its
 * reply yet was overtaken: redisnode's NOSCRIPT retry queued SCRIPT LOAD and the script
 * again behind this WAIT, so it covered nothing of it and the next WAIT must. */
static void on_wait(redisReply *reply, void *privdata)
{
    struct redisconn_waitq *q = privdata;
    q->in_flight = false;
    long long replicas = reply && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (reply && reply->type == REDIS_REPLY_ERROR)
        LOG_WARN("redis: WAIT failed: %s", reply->str);
    /* Taken off the queue first: a caller's callback may send another waited call to this
     * node, whose queue_kick sends the next WAIT and makes q->next the new q->covered. */
    struct redisconn_cmd *covered = q->covered;
    q->covered = NULL;
    if (covered)
        covered->wprev = &covered;
    while (covered) {
        struct redisconn_cmd *cmd = covered;
        if (cmd->replied) {
            wait_deliver(cmd, replicas);
            queue_leave(cmd);
        } else {
            list_unlink(cmd);
            list_push(&q->next, cmd);
        }
    }
    queue_kick(q);
}

/* The bytes to node i; a waited command joins that node's wait queue (leaving the one of
 * the node that redirected it, whose WAIT covers nothing of it). */
static int send_to(struct redisconn_cmd *cmd, int i, bool asking)
{
    struct redisconn_peer *p = peer_at(cmd->rc, i);
    if (!p || redisnode_send(p->node, cmd->buf, cmd->len, cmd->script, asking, on_reply, cmd) != 0)
        return -1;
    cmd->node = i;
    if (cmd->wait_cb && !cmd->unwaited) {
        queue_leave(cmd);
        struct redisconn_waitq *q = &p->waitq;
        cmd->refs++;
        cmd->queue = q;
        list_push(&q->next, cmd);
        queue_kick(q);
    }
    return 0;
}

/* The final reply of a waited command: held until a WAIT sent after it answers. */
static void wait_replied(struct redisconn_cmd *cmd, redisReply *reply)
{
    cmd->replied = true;
    if (reply && !cmd->rc->closing && cmd->queue) {
        cmd->held = reply_copy(reply);
        if (cmd->held) {
            queue_kick(cmd->queue);  /* no WAIT went out for it yet when the last failed */
            return;
        }
        LOG_WARN("redis: out of memory keeping a reply until its WAIT");
    }
    wait_deliver(cmd, -1);
    queue_leave(cmd);
}

/* A redirect is followed on the loop: the bytes go to the node it names (a MOVED also
 * updates the map and asks for a reload); anything else is the caller's answer. */
static void on_reply(redisReply *reply, void *privdata)
{
    struct redisconn_cmd *cmd = privdata;
    struct redisconn *rc = cmd->rc;
    struct slotmap_redirect rd;
    if (reply && !rc->closing && cmd->hops < SLOTMAP_MAX_REDIRECTS &&
        slotmap_redirect(reply, &rd) != SLOTMAP_DONE) {
        cmd->hops++;
        LOG_INFO("redis: %s, following it", reply->str);
        int node = slotmap_follow(&rc->map, &rd);
        if (rd.verdict == SLOTMAP_MOVED)
            refresh(rc, true);
        if (send_to(cmd, node, rd.verdict == SLOTMAP_ASK) == 0)
            return;
        reply = NULL;
    }
    if (reply && reply->type == REDIS_REPLY_ERROR && rc->cluster && !rc->closing &&
        strncmp(reply->str, "CLUSTERDOWN", 11) == 0 && cmd->node >= 0 &&
        (size_t)cmd->node < rc->map.count) {
        /* The answer stays a failure (503); the map may have moved on without this node. */
        rc->down = rc->map.nodes[cmd->node];
        refresh(rc, true);
    }
    if (cmd->wait_cb && cmd->unwaited)
        cmd->wait_cb(reply, REDISCONN_UNWAITED, cmd->privdata);
    else if (cmd->wait_cb)
        wait_replied(cmd, reply);
    else
        cmd->cb(reply, cmd->privdata);
    cmd_unref(cmd);
}

/* Sends the formatted bytes (taken over) to the master of key's slot (key NULL: any). */
static int route(struct redisconn *rc, const char *key, size_t keylen, char *buf, size_t len,
                 enum luascript_id script, redisconn_cb cb, redisconn_wait_cb wait_cb, bool unwaited,
                 void *privdata)
{
    int node = -1;
    if (rc->map_loaded)
        node = key ? slotmap_owner_of_key(&rc->map, key, keylen) : rc->map.owner[0];
    struct redisnode *n = node_of(rc, node);
    if (!n || !redisnode_ready(n)) {
        /* its master is gone or unknown: only this slot's commands fail (503) */
        refresh(rc, true);
        redisFreeCommand(buf);
        return -1;
    }
    struct redisconn_cmd *cmd = calloc(1, sizeof(*cmd));
    if (!cmd) {
        redisFreeCommand(buf);
        return -1;
    }
    *cmd = (struct redisconn_cmd){ .rc = rc, .cb = cb, .privdata = privdata, .buf = buf, .len = len,
                                   .script = script, .wait_cb = wait_cb, .unwaited = unwaited, .refs = 1 };
    if (send_to(cmd, node, false) != 0) {
        cmd_unref(cmd);
        return -1;
    }
    return 0;
}

static int eval_routed(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                       const char *const *argv, const size_t *argvlen, redisconn_cb cb,
                       redisconn_wait_cb wait_cb, bool unwaited, void *privdata)
{
    /* Small calls (every request) gather their arguments on the stack; batches (marks,
     * confirms) on the heap. */
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
    char *buf;
    int len = redisFormatCommandArgv(&buf, argc, full, lens);
    int sent = -1;
    if (len >= 0)
        sent = route(rc, nkeys > 0 ? full[3] : NULL, nkeys > 0 ? lens[3] : 0, buf, (size_t)len, script, cb,
                     wait_cb, unwaited, privdata);
    if (full != stack_args) {
        free(full);
        free(lens);
    }
    return sent;
}

int redisconn_eval(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                   const char *const *argv, const size_t *argvlen, redisconn_cb cb, void *privdata)
{
    return eval_routed(rc, script, nkeys, nargs, argv, argvlen, cb, NULL, false, privdata);
}

int redisconn_eval_wait(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                        const char *const *argv, const size_t *argvlen, redisconn_wait_cb cb,
                        void *privdata)
{
    return eval_routed(rc, script, nkeys, nargs, argv, argvlen, NULL, cb, false, privdata);
}

int redisconn_eval_replicated(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                              const char *const *argv, const size_t *argvlen, redisconn_wait_cb cb,
                              void *privdata)
{
    return eval_routed(rc, script, nkeys, nargs, argv, argvlen, NULL, cb, rc->cfg->redis_wait_replicas <= 0,
                       privdata);
}

int redisconn_command_argv(struct redisconn *rc, int argc, const char *const *argv,
                           const size_t *argvlen, redisconn_cb cb, void *privdata)
{
    char *buf;
    int len = redisFormatCommandArgv(&buf, argc, (const char **)argv, argvlen);
    if (len < 0)
        return -1;
    const char *key = argc > 1 ? argv[1] : NULL;
    size_t keylen = key ? (argvlen ? argvlen[1] : strlen(key)) : 0;
    return route(rc, key, keylen, buf, (size_t)len, LUASCRIPT_COUNT, cb, NULL, false, privdata);
}
