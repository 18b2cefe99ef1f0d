#include "consumer/claim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/keys.h"
#include "consumer/archived.h"
#include "consumer/backend.h"
#include "consumer/consumer.h"

/* KEYS of confirm.lua, in its order; finalize.lua takes orders, claimed and the activity
 * hash (whose 'sold' it counts). */
#define CONFIRM_KEYS 8
static const enum keys_kind confirm_kinds[CONFIRM_KEYS] = {
    KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED, KEYS_ACTIVITY,
    KEYS_FAILED,
};
#define FINALIZE_KEYS 3
static const enum keys_kind finalize_kinds[FINALIZE_KEYS] = { KEYS_ORDERS, KEYS_CLAIMED, KEYS_ACTIVITY };
#define ABANDON_KEYS 5
static const enum keys_kind abandon_kinds[ABANDON_KEYS] = {
    KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_CLAIMED, KEYS_FAILED,
};

struct script_keys {
    struct keys_set set;
    const char *argv[CONFIRM_KEYS];
    int count;
};

/* The keys of the order's bucket: bucket 0's unless the event names another (orderevent.h). */
static int script_keys_make(struct script_keys *k, const struct config *cfg,
                            const struct orderevent *ev, const enum keys_kind *kinds, int count,
                            char *err, size_t errlen)
{
    int rc = ev->bucket_tag[0] ? keys_set_build_tag(&k->set, cfg, ev->activity_id, ev->bucket_tag)
                               : keys_set_build(&k->set, cfg, ev->activity_id);
    if (rc != 0) {
        snprintf(err, errlen, "activity %" PRId64 ": key too long", ev->activity_id);
        return -1;
    }
    for (int i = 0; i < count; i++)
        k->argv[i] = k->set.name[kinds[i]];
    k->count = count;
    return 0;
}

/* ARGV of confirm.lua and finalize.lua: orderNo, userId pairs. */
struct pair_args {
    const char *argv[CLAIM_CHUNK * 2];
    char users[CLAIM_CHUNK][24];
    int count;   /* pairs */
};

static void pair_args_add(struct pair_args *a, const struct orderevent *ev)
{
    snprintf(a->users[a->count], sizeof(a->users[a->count]), "%" PRId64, ev->user_id);
    a->argv[a->count * 2] = ev->order_no;
    a->argv[a->count * 2 + 1] = a->users[a->count];
    a->count++;
}

/* One script call (claim.h). A NULL reply means the connection is unusable: it is dropped. With
 * redis.wait-replicas > 0 the call counts only once WAIT found that many replicas holding
 * it: a claim or a SUCCESS a failover forgets would let the reaper release an order whose
 * row is in MySQL, or leave it PROCESSING. Fewer is a transient error: the step retries
 * (every script here is idempotent). */
redisReply *claim_eval(struct consumer *c, enum luascript_id id, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, char *err, size_t errlen)
{
    const struct luascript *s = &c->scripts.scripts[id];
    char why[256];
    long long replicas = 0;
    int64_t wanted = c->cfg.redis_wait_replicas;
    redisReply *reply = wanted > 0
        ? redisroute_script_wait(c->redis, s, nkeys, keys, nargs, args, &replicas, why, sizeof(why))
        : redisroute_script(c->redis, s, nkeys, keys, nargs, args, why, sizeof(why));
    if (!reply) {
        snprintf(err, errlen, "%s.lua: %s", s->name, why);
        backend_redis_drop(c);
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s.lua: %s", s->name, reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    if (wanted > 0 && replicas < wanted) {
        snprintf(err, errlen, "%s.lua: %lld of %" PRId64 " replicas acknowledged it within %" PRId64 " ms", s->name,
                 replicas < 0 ? 0 : replicas, wanted, c->cfg.redis_wait_timeout_ms);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

static redisReply *eval(struct consumer *c, enum luascript_id id, const struct script_keys *k,
                        const struct pair_args *a, char *err, size_t errlen)
{
    return claim_eval(c, id, k->count, k->argv, a->count * 2, a->argv, err, errlen);
}

static int claim_chunk(struct consumer *c, const struct script_keys *k, size_t first,
                       const struct pair_args *a, char *err, size_t errlen)
{
    redisReply *reply = eval(c, LUASCRIPT_CONFIRM, k, a, err, errlen);
    if (!reply)
        return -1;
    int rc = -1;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != (size_t)a->count) {
        snprintf(err, errlen, "confirm.lua: unexpected reply");
        goto out;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *v = reply->element[i];
        if (v->type != REDIS_REPLY_STRING && v->type != REDIS_REPLY_STATUS) {
            snprintf(err, errlen, "confirm.lua: unexpected verdict");
            goto out;
        }
        enum batch_verdict verdict;
        if (strcmp(v->str, "CLAIMED") == 0 || strcmp(v->str, "CONFIRMED") == 0)
            verdict = BATCH_ACCEPTED;
        else if (strcmp(v->str, "REJECTED") == 0)
            verdict = BATCH_REJECTED;
        else if (strcmp(v->str, "ARCHIVED") == 0)
            verdict = BATCH_ARCHIVED;
        else {
            snprintf(err, errlen, "confirm.lua: unknown verdict '%s'", v->str);
            goto out;
        }
        c->batch.verdicts[first + i] = verdict;
    }
    rc = 0;
out:
    freeReplyObject(reply);
    return rc;
}

/* One script call on the pairs of a; first is the index of its first order. */
typedef int (*chunk_fn)(struct consumer *c, const struct script_keys *k, size_t first,
                        const struct pair_args *a, char *err, size_t errlen);

/* Calls fn for each bucket run of orders (sorted by activity and bucket), CLAIM_CHUNK orders at a
 * time, leaving out the orders whose keep[i] is not want (keep NULL: none is left out). */
static int each_chunk(struct consumer *c, const struct orderevent *orders, size_t count,
                      const unsigned char *keep, unsigned char want, const enum keys_kind *kinds, int nkeys,
                      chunk_fn fn, char *err, size_t errlen)
{
    if (count == 0)
        return 0;
    if (backend_redis(c, err, errlen) != 0)
        return -1;
    struct pair_args *a = malloc(sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct script_keys k;
    int rc = 0;
    for (size_t start = 0; start < count && rc == 0;) {
        size_t end = batch_bucket_run_end(orders, count, start);
        rc = script_keys_make(&k, &c->cfg, &orders[start], kinds, nkeys, err, errlen);
        a->count = 0;
        size_t first = start;
        for (size_t i = start; i < end && rc == 0; i++) {
            if (keep && keep[i] != want)
                continue;
            if (a->count == 0)
                first = i;
            pair_args_add(a, &orders[i]);
            if (a->count == CLAIM_CHUNK) {
                rc = fn(c, &k, first, a, err, errlen);
                a->count = 0;
            }
        }
        if (rc == 0 && a->count > 0)
            rc = fn(c, &k, first, a, err, errlen);
        start = end;
    }
    free(a);
    return rc;
}

int claim_orders(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (each_chunk(c, b->orders, b->count, NULL, 0, confirm_kinds, CONFIRM_KEYS, claim_chunk, err, errlen) != 0)
        return -1;
    return archived_settle(c, err, errlen);
}

static int finalize_chunk(struct consumer *c, const struct script_keys *k, size_t first,
                          const struct pair_args *a, char *err, size_t errlen)
{
    (void)first;
    redisReply *reply = eval(c, LUASCRIPT_FINALIZE, k, a, err, errlen);
    if (!reply)
        return -1;
    int ok = reply->type == REDIS_REPLY_INTEGER && reply->integer == a->count;
    freeReplyObject(reply);
    if (!ok) {
        snprintf(err, errlen, "finalize.lua: unexpected reply");
        return -1;
    }
    return 0;
}

int claim_finalize(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    return each_chunk(c, b->accepted, b->accepted_count, b->in_db, 1, finalize_kinds, FINALIZE_KEYS,
                      finalize_chunk, err, errlen);
}

/* A repeat (the batch replayed after a crash between this and the offset commit) ends
 * nothing: any count up to the chunk's is right. */
static int abandon_chunk(struct consumer *c, const struct script_keys *k, size_t first,
                         const struct pair_args *a, char *err, size_t errlen)
{
    (void)first;
    redisReply *reply = eval(c, LUASCRIPT_ABANDON, k, a, err, errlen);
    if (!reply)
        return -1;
    int ok = reply->type == REDIS_REPLY_INTEGER && reply->integer >= 0 &&
             reply->integer <= a->count;
    freeReplyObject(reply);
    if (!ok) {
        snprintf(err, errlen, "abandon.lua: unexpected reply");
        return -1;
    }
    return 0;
}

int claim_abandon(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->refusal_count == 0)
        return 0;
    return each_chunk(c, b->accepted, b->accepted_count, b->refused, BATCH_REFUSED, abandon_kinds,
                      ABANDON_KEYS, abandon_chunk, err, errlen);
}
