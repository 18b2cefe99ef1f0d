#include "store/redisroute.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/slotmap.h"

struct redisroute {
    const struct config *cfg;
    int64_t command_timeout_ms;
    bool cluster;
    bool stale;  /* reload the map before routing the next command */
    struct slotmap map;
    redisContext *conns[SLOTMAP_MAX_NODES];  /* by node of map; NULL until first use */
};

struct redisroute *redisroute_new(const struct config *cfg, int64_t command_timeout_ms)
{
    struct redisroute *rr = calloc(1, sizeof(*rr));
    if (!rr)
        return NULL;
    rr->cfg = cfg;
    rr->command_timeout_ms = command_timeout_ms;
    rr->cluster = cfg->redis_nodes[0] != '\0';
    if (!rr->cluster) {
        slotmap_single(&rr->map, cfg->redis_host, (int)cfg->redis_port);
        return rr;
    }
    /* The seeds come first in the table; config_validate has checked the list. */
    slotmap_init(&rr->map);
    struct slotmap_addr seeds[SLOTMAP_MAX_NODES];
    char err[160];
    int n = slotmap_parse_nodes(cfg->redis_nodes, seeds, SLOTMAP_MAX_NODES, err, sizeof(err));
    for (int i = 0; i < n; i++)
        slotmap_seed(&rr->map, &seeds[i]);
    rr->stale = true;
    return rr;
}

static void drop(struct redisroute *rr, int node)
{
    if (rr->conns[node])
        redisFree(rr->conns[node]);
    rr->conns[node] = NULL;
}

void redisroute_free(struct redisroute *rr)
{
    if (!rr)
        return;
    for (size_t i = 0; i < SLOTMAP_MAX_NODES; i++)
        drop(rr, (int)i);
    free(rr);
}

bool redisroute_cluster(const struct redisroute *rr) { return rr->cluster; }

static redisContext *conn(struct redisroute *rr, int node, char *err, size_t errlen)
{
    if (rr->conns[node])
        return rr->conns[node];
    const struct slotmap_addr *a = &rr->map.nodes[node];
    redisContext *c = redisConnectWithTimeout(a->host, a->port, clock_timeval_ms(rr->cfg->redis_timeout_ms));
    if (!c || c->err || redisSetTimeout(c, clock_timeval_ms(rr->command_timeout_ms)) != REDIS_OK) {
        snprintf(err, errlen, "redis %s:%d: %s", a->host, a->port, c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        /* A master that cannot be reached may be gone for good, its slots promoted to a
         * replica: only a map asked of the other nodes again finds where they went. */
        if (rr->cluster)
            rr->stale = true;
        return NULL;
    }
    rr->conns[node] = c;
    return c;
}

/* CLUSTER SLOTS from the first node that answers, known masters and seeds alike. The
 * connections of nodes that leave the table are closed (a caller's context from
 * redisroute_for_key among them: it is valid until the next reload). */
static int refresh(struct redisroute *rr, char *err, size_t errlen)
{
    for (size_t i = 0; i < rr->map.count; i++) {
        if (!slotmap_known(&rr->map, (int)i))
            continue;
        redisContext *c = conn(rr, (int)i, err, errlen);
        if (!c)
            continue;
        redisReply *r = redisCommand(c, "CLUSTER SLOTS");
        if (!r) {
            snprintf(err, errlen, "redis %s:%d: %s", rr->map.nodes[i].host, rr->map.nodes[i].port, c->errstr);
            drop(rr, (int)i);
            continue;
        }
        char asked[SLOTMAP_HOST_LEN];
        snprintf(asked, sizeof(asked), "%s", rr->map.nodes[i].host);
        slotmap_set dropped = 0;
        int loaded = slotmap_load(&rr->map, r, asked, &dropped, err, errlen);
        freeReplyObject(r);
        for (int k = 0; k < SLOTMAP_MAX_NODES; k++)
            if (dropped & ((slotmap_set)1 << k))
                drop(rr, k);
        if (loaded == 0 && slotmap_uncovered(&rr->map) == 0) {
            rr->stale = false;
            return 0;
        }
        if (loaded == 0)
            snprintf(err, errlen, "redis cluster: %zu slots have no master", slotmap_uncovered(&rr->map));
    }
    return -1;
}

int redisroute_open(struct redisroute *rr, char *err, size_t errlen)
{
    if (rr->cluster)
        return rr->stale ? refresh(rr, err, errlen) : 0;
    return conn(rr, 0, err, errlen) ? 0 : -1;
}

static int route(struct redisroute *rr, const char *key, size_t keylen, char *err, size_t errlen)
{
    if (rr->stale && refresh(rr, err, errlen) != 0)
        return -1;
    int node = key ? slotmap_owner_of_key(&rr->map, key, keylen) : rr->map.owner[0];
    if (node < 0)
        snprintf(err, errlen, "redis cluster: no master serves the slot of '%.*s'", (int)keylen, key ? key
                 : "");
    return node;
}

int redisroute_master_of(struct redisroute *rr, const char *key, size_t keylen, char *err, size_t errlen)
{
    return route(rr, key, keylen, err, errlen);
}

int redisroute_masters(struct redisroute *rr, char *err, size_t errlen)
{
    if (rr->stale && refresh(rr, err, errlen) != 0)
        return -1;
    int masters = 0;
    for (size_t i = 0; i < rr->map.count; i++)
        masters += slotmap_owns_any(&rr->map, (int)i) ? 1 : 0;
    return masters;
}

const char *redisroute_node_name(const struct redisroute *rr, int node, char *buf, size_t len)
{
    if (!slotmap_known(&rr->map, node))
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%s:%d", rr->map.nodes[node].host, rr->map.nodes[node].port);
    return buf;
}

redisContext *redisroute_for_key(struct redisroute *rr, const char *key, size_t keylen, char *err,
                                 size_t errlen)
{
    int node = route(rr, key, keylen, err, errlen);
    return node < 0 ? NULL : conn(rr, node, err, errlen);
}

void redisroute_failed(struct redisroute *rr, redisContext *c)
{
    if (rr->cluster)
        rr->stale = true;
    if (!c || !c->err)
        return;
    for (size_t i = 0; i < SLOTMAP_MAX_NODES; i++)
        if (rr->conns[i] == c)
            drop(rr, (int)i);
}

/* *ran_on: the connection that gave the reply returned. */
static redisReply *send_routed(struct redisroute *rr, int argc, const char **argv, const size_t *lens,
                               int key, const struct luascript *script, redisContext **ran_on,
                               char *err, size_t errlen)
{
    size_t keylen = key >= 0 ? (lens ? lens[key] : strlen(argv[key])) : 0;
    int node = route(rr, key >= 0 ? argv[key] : NULL, keylen, err, errlen);
    bool asking = false;
    int loaded_on = -1;
    for (int hop = 0; node >= 0; hop++) {
        redisContext *c = conn(rr, node, err, errlen);
        if (!c)
            break;
        if (asking) {
            redisReply *a = redisCommand(c, "ASKING");
            if (a)
                freeReplyObject(a);
        }
        redisReply *reply = redisCommandArgv(c, argc, argv, lens);
        if (!reply) {
            snprintf(err, errlen, "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
            redisroute_failed(rr, c);
            return NULL;
        }
        if (script && loaded_on != node && luascript_is_noscript(reply)) {
            /* Scripts are cached per node: this one may never have seen it. */
            freeReplyObject(reply);
            loaded_on = node;
            reply = redisCommand(c, "SCRIPT LOAD %b", script->body, script->body_len);
            if (!reply) {
                snprintf(err, errlen, "redis SCRIPT LOAD: %s", c->errstr);
                redisroute_failed(rr, c);
                return NULL;
            }
            freeReplyObject(reply);
            continue;
        }
        struct slotmap_redirect rd;
        if (slotmap_redirect(reply, &rd) == SLOTMAP_DONE || hop == SLOTMAP_MAX_REDIRECTS) {
            *ran_on = c;
            return reply;
        }
        LOG_INFO("redis: %s, following it", reply->str);
        freeReplyObject(reply);
        asking = rd.verdict == SLOTMAP_ASK;
        if (!asking) {
            /* The whole map is likely out of date (a reshard or a failover), not just this
             * slot; the redirect itself is newer than anything CLUSTER SLOTS may still say. */
            char why[160];
            if (refresh(rr, why, sizeof(why)) != 0)
                LOG_WARN("redis cluster: map not reloaded: %s", why);
        }
        node = slotmap_follow(&rr->map, &rd);
        if (node < 0)
            snprintf(err, errlen, "redis cluster: more than %d nodes", SLOTMAP_MAX_NODES);
    }
    return NULL;
}

redisReply *redisroute_argv(struct redisroute *rr, int argc, const char **argv, const size_t *lens,
                            int key, char *err, size_t errlen)
{
    redisContext *c;
    return send_routed(rr, argc, argv, lens, key, NULL, &c, err, errlen);
}

static redisReply *script_on(struct redisroute *rr, const struct luascript *s, int nkeys,
                             const char *const *keys, int nargs, const char *const *args,
                             redisContext **ran_on, char *err, size_t errlen)
{
    int argc = 3 + nkeys + nargs;
    char numkeys[LUASCRIPT_NUMKEYS_LEN];
    const char **argv = luascript_evalsha_argv(s, nkeys, keys, nargs, args, numkeys);
    if (!argv) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    redisReply *reply = send_routed(rr, argc, argv, NULL, nkeys > 0 ? 3 : -1, s, ran_on, err, errlen);
    free(argv);
    return reply;
}

redisReply *redisroute_script(struct redisroute *rr, const struct luascript *s, int nkeys,
                              const char *const *keys, int nargs, const char *const *args,
                              char *err, size_t errlen)
{
    redisContext *c;
    return script_on(rr, s, nkeys, keys, nargs, args, &c, err, errlen);
}

redisReply *redisroute_script_wait(struct redisroute *rr, const struct luascript *s, int nkeys,
                                   const char *const *keys, int nargs, const char *const *args,
                                   long long *replicas, char *err, size_t errlen)
{
    redisContext *c = NULL;
    *replicas = -1;
    redisReply *reply = script_on(rr, s, nkeys, keys, nargs, args, &c, err, errlen);
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        return reply;
    redisReply *w = redisCommand(c, "WAIT %lld %lld", (long long)rr->cfg->redis_wait_replicas,
                                 (long long)rr->cfg->redis_wait_timeout_ms);
    if (!w) {
        LOG_WARN("redis WAIT: %s", c->errstr[0] ? c->errstr : "no reply");
        redisroute_failed(rr, c);
        return reply;
    }
    if (w->type == REDIS_REPLY_INTEGER)
        *replicas = w->integer;
    else if (w->type == REDIS_REPLY_ERROR)
        LOG_WARN("redis WAIT: %s", w->str);
    freeReplyObject(w);
    return reply;
}
