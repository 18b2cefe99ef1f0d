#include "gateway/nodelease.h"

#include <event2/event.h>
#include <event2/util.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/orderno.h"
#include "gateway/gateway.h"
#include "gateway/redisconn.h"

struct nodelease {
    struct gateway *gw;
    struct event *timer;
    char token[33];
    char ttl_text[24];
    int64_t ttl_ms;
    int64_t margin_ms;
    int node;                /* -1: none held */
    char node_text[12];
    int64_t valid_until_ms;  /* monotonic; never later than the key's expiry in Redis */
    int64_t sent_ms;         /* when the request in flight left */
    bool pending;            /* an acquire or renew is in flight */
    bool released;           /* shutdown: never again */
    bool exhausted;          /* the last acquire found every id held (logged once) */
};

static void acquire(struct nodelease *lease);

/* No WAIT behind the leases: while the master of seckill:{nodes} has no replica that
 * acknowledges (one resyncing after a failover), no gateway could take or keep an id, and
 * every sale would answer 503. A lease a failover loses is met by the renewal (which then
 * takes another id); two gateways making one number meanwhile are refused by execute.lua
 * (one number per orders hash) and by the consumer (a row is only its own user's). */
static void on_acquire(redisReply *reply, void *privdata)
{
    struct nodelease *lease = privdata;
    lease->pending = false;
    if (lease->released)
        return;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        LOG_WARN("order-number node lease: acquire failed (%s); orders wait, retrying",
                 reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "Redis unreachable");
        return;
    }
    if (reply->integer < 0) {
        if (!lease->exhausted)
            LOG_ERROR("order-number node lease: all %d node ids are held by live gateways; "
                      "this gateway answers execute with 503 until one comes free", ORDERNO_MAX_NODE + 1);
        lease->exhausted = true;
        return;
    }
    lease->exhausted = false;
    lease->node = (int)reply->integer;
    snprintf(lease->node_text, sizeof(lease->node_text), "%d", lease->node);
    lease->valid_until_ms = lease->sent_ms + lease->ttl_ms - lease->margin_ms;
    orderno_init(&lease->gw->orderno, (uint32_t)lease->node);
    LOG_INFO("order-number node id %d (leased for %" PRId64 " ms, renewed every %" PRId64 " ms)",
             lease->node, lease->ttl_ms, lease->ttl_ms / 3);
}

static void on_renew(redisReply *reply, void *privdata)
{
    struct nodelease *lease = privdata;
    lease->pending = false;
    if (lease->released || lease->node < 0)
        return;
    if (!reply || reply->type != REDIS_REPLY_INTEGER) {
        /* Still ours until valid_until_ms; the next tick tries again. */
        LOG_WARN("order-number node lease %d: renew failed (%s)", lease->node,
                 reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "Redis unreachable");
        return;
    }
    if (reply->integer == 1) {
        lease->valid_until_ms = lease->sent_ms + lease->ttl_ms - lease->margin_ms;
        return;
    }
    LOG_ERROR("order-number node lease %d: another gateway holds it now, or Redis lost it; seeking another "
              "id", lease->node);
    lease->node = -1;
    acquire(lease);
}

static void acquire(struct nodelease *lease)
{
    if (lease->pending || lease->released)
        return;
    char nodes[16];
    snprintf(nodes, sizeof(nodes), "%d", ORDERNO_MAX_NODE + 1);
    const char *argv[] = { KEYS_NODES, KEYS_NODE_SEQ, "acquire", lease->token, lease->ttl_text, nodes };
    lease->sent_ms = clock_mono_ms();
    if (redisconn_eval(lease->gw->redis, LUASCRIPT_NODELEASE, 2, 4, argv, NULL, on_acquire, lease) == 0)
        lease->pending = true;
}

static void renew(struct nodelease *lease)
{
    if (lease->pending || lease->released)
        return;
    const char *argv[] = { KEYS_NODES, KEYS_NODE_SEQ, "renew", lease->token, lease->ttl_text,
                           lease->node_text };
    lease->sent_ms = clock_mono_ms();
    if (redisconn_eval(lease->gw->redis, LUASCRIPT_NODELEASE, 2, 4, argv, NULL, on_renew, lease) == 0)
        lease->pending = true;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct nodelease *lease = arg;
    if (lease->node < 0)
        acquire(lease);
    else
        renew(lease);
}

/* While the master of seckill:{nodes} is down no renew gets through. The last good one
 * may have been sent a renew interval before the kill, so the lease outlives a failover
 * only if two thirds of it, less the margin, cover cluster-node-timeout plus the
 * election (up to about 2 s with two replicas); otherwise every sale answers 503 from the
 * lease's end until the promotion. */
static void warn_if_shorter_than_failover(const struct config *cfg, int64_t ttl_ms, int64_t margin_ms)
{
    if (cfg->redis_nodes[0] == '\0')
        return;
    int64_t failover_ms = cfg->redis_cluster_node_timeout_ms + 2000;
    int64_t outlives_ms = ttl_ms - ttl_ms / 3 - margin_ms;
    if (outlives_ms <= failover_ms)
        LOG_WARN("seckill.node-lease-ms = %" PRId64 " lasts %" PRId64 " ms without a renew, a failover of "
                 "the master holding it takes up to %" PRId64 " ms (redis.cluster-node-timeout-ms + 2 s): "
                 "every sale would answer 503 meanwhile; use at least %" PRId64,
                 ttl_ms, outlives_ms, failover_ms, (failover_ms + 1000) * 3 / 2 + 1);
}

struct nodelease *nodelease_new(struct gateway *gw)
{
    struct nodelease *lease = calloc(1, sizeof(*lease));
    if (!lease)
        return NULL;
    lease->gw = gw;
    lease->node = -1;
    lease->ttl_ms = gw->cfg->node_lease_ms;
    /* Covers the renew's own round trip and timer lateness on a busy loop. */
    lease->margin_ms = lease->ttl_ms / 10 < 1000 ? lease->ttl_ms / 10 : 1000;
    snprintf(lease->ttl_text, sizeof(lease->ttl_text), "%" PRId64, lease->ttl_ms);
    warn_if_shorter_than_failover(gw->cfg, lease->ttl_ms, lease->margin_ms);
    unsigned char random[16];
    evutil_secure_rng_get_bytes(random, sizeof(random));
    for (size_t i = 0; i < sizeof(random); i++)
        snprintf(lease->token + 2 * i, 3, "%02x", random[i]);
    lease->timer = event_new(gw->base, -1, EV_PERSIST, on_tick, lease);
    if (!lease->timer) {
        free(lease);
        return NULL;
    }
    struct timeval every = { (time_t)(lease->ttl_ms / 3 / 1000),
                             (suseconds_t)(lease->ttl_ms / 3 % 1000 * 1000) };
    event_add(lease->timer, &every);
    return lease;
}

void nodelease_free(struct nodelease *lease)
{
    if (!lease)
        return;
    event_free(lease->timer);
    free(lease);
}

/* Back from a partition or an outage longer than the lease, at once: the next tick may be a
 * renew interval away, and every sale answers 503 until then. */
void nodelease_on_connect(struct nodelease *lease)
{
    if (lease->node < 0)
        acquire(lease);
    else if (!nodelease_valid(lease))
        renew(lease);
}

bool nodelease_valid(const struct nodelease *lease)
{
    return lease->node >= 0 && !lease->released && clock_mono_ms() < lease->valid_until_ms;
}

int nodelease_node(const struct nodelease *lease)
{
    return lease->node;
}

static void on_release(redisReply *reply, void *privdata)
{
    (void)privdata;
    if (!reply || reply->type != REDIS_REPLY_INTEGER)
        LOG_WARN("order-number node lease: release failed; the id comes free when it expires");
}

void nodelease_release(struct nodelease *lease)
{
    if (lease->released)
        return;
    lease->released = true;
    event_del(lease->timer);
    if (lease->node < 0)
        return;
    const char *argv[] = { KEYS_NODES, KEYS_NODE_SEQ, "release", lease->token, lease->node_text };
    if (redisconn_eval(lease->gw->redis, LUASCRIPT_NODELEASE, 2, 3, argv, NULL, on_release, NULL) == 0)
        LOG_INFO("order-number node id %d released", lease->node);
}

int nodelease_query_live(struct nodelease *lease, redisconn_cb cb, void *privdata)
{
    const char *argv[] = { KEYS_NODES, KEYS_NODE_SEQ, "live" };
    return redisconn_eval(lease->gw->redis, LUASCRIPT_NODELEASE, 2, 1, argv, NULL, cb, privdata);
}
