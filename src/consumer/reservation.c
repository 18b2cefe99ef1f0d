#include "consumer/reservation.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/holder.h"
#include "common/keys.h"
#include "common/log.h"
#include "consumer/archived.h"
#include "consumer/backend.h"
#include "consumer/consumer.h"
#include "consumer/parking.h"

/* KEYS of confirm.lua, in its order; finalize.lua takes orders, claimed and the activity
 * hash (whose 'sold' it counts). */
#define CONFIRM_KEYS 8
static const enum keys_kind confirm_kinds[CONFIRM_KEYS] = {
    KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED, KEYS_ACTIVITY,
    KEYS_FAILED,
};
#define FINALIZE_KEYS 3
static const enum keys_kind finalize_kinds[FINALIZE_KEYS] = { KEYS_ORDERS, KEYS_CLAIMED, KEYS_ACTIVITY };
#define ABANDON_KEYS 6
static const enum keys_kind abandon_kinds[ABANDON_KEYS] = {
    KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_CLAIMED, KEYS_FAILED, KEYS_FAILED_USERS,
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

/* ARGV of confirm.lua and finalize.lua: orderNo, holder pairs (holder.h). */
struct pair_args {
    const char *argv[RESERVATION_CHUNK * 2];
    char users[RESERVATION_CHUNK][HOLDER_LEN];
    int count;   /* pairs */
};

static void pair_args_add(struct pair_args *a, const struct orderevent *ev)
{
    /* A decoded event's slot is within 1..HOLDER_MAX_SLOT (orderevent_decode). */
    orderevent_holder(ev, a->users[a->count], sizeof(a->users[a->count]));
    a->argv[a->count * 2] = ev->order_no;
    a->argv[a->count * 2 + 1] = a->users[a->count];
    a->count++;
}

/* One script call (reservation.h). A NULL reply means the connection is unusable: it is dropped. With
 * redis.wait-replicas > 0 the call counts only once WAIT found that many replicas holding
 * it: a claim or a SUCCESS a failover forgets would let the reaper release an order whose
 * row is in MySQL, or leave it PROCESSING. Fewer is a transient error: the step retries
 * (every script here is idempotent). */
redisReply *reservation_eval(struct consumer *c, enum luascript_id id, int nkeys, const char *const *keys,
                       int nargs, const char *const *args, char *err, size_t errlen)
{
    const struct luascript *s = &c->scripts.scripts[id];
    char why[256];
    long long replicas = 0;
    int64_t wanted = c->cfg.redis_wait_replicas;
    if (backend_redis(c, err, errlen) != 0) {
        c->reservation_failure = RESERVATION_FAILURE_LINK;
        return NULL;
    }
    redisReply *reply = wanted > 0
        ? redisroute_script_wait(c->redis, s, nkeys, keys, nargs, args, &replicas, why, sizeof(why))
        : redisroute_script(c->redis, s, nkeys, keys, nargs, args, why, sizeof(why));
    if (!reply) {
        snprintf(err, errlen, "%s.lua: %s", s->name, why);
        backend_redis_drop(c);
        c->reservation_failure = RESERVATION_FAILURE_LINK;
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s.lua: %s", s->name, reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    if (wanted > 0 && replicas < wanted) {
        c->reservation_failure = RESERVATION_FAILURE_REPLICAS;
        snprintf(err, errlen, "%s.lua: %lld of %" PRId64 " replicas acknowledged it within %" PRId64 " ms",
                 s->name, replicas < 0 ? 0 : replicas, wanted, c->cfg.redis_wait_timeout_ms);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

static redisReply *eval(struct consumer *c, enum luascript_id id, const struct script_keys *k,
                        const struct pair_args *a, char *err, size_t errlen)
{
    return reservation_eval(c, id, k->count, k->argv, a->count * 2, a->argv, err, errlen);
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

/* Which orders of a run a step's calls take. */
struct run_filter {
    const unsigned char *keep;   /* keep[i] must equal want; NULL: every order */
    unsigned char want;
    const unsigned char *skip;   /* skip[i] set: left out; NULL: none */
};

static bool taken(const struct run_filter *f, size_t i)
{
    return (!f->keep || f->keep[i] == f->want) && (!f->skip || !f->skip[i]);
}

/* What a step does with a run its calls failed on (or that must wait behind parked
 * orders): sets its orders aside and returns 0, or returns -1 when they cannot be (the
 * step then fails and is retried whole). */
typedef int (*park_fn)(struct consumer *c, size_t start, size_t end, const struct run_filter *f);

static void warn_parked(const struct orderevent *first, size_t n, const char *why)
{
    LOG_WARN("activity %" PRId64 "%s%s: %zu orders set aside, the rest of the batch goes on: %s",
             first->activity_id, first->bucket_tag[0] ? " bucket " : "", first->bucket_tag, n, why);
}

bool reservation_may_park(const struct consumer *c)
{
    /* One Redis that fails fails every slot: the step waits for it whole, partitions
     * paused, rather than read on and set everything aside. A script failing on one run
     * (an error reply) is that run's alone, in either topology. */
    return c->cfg.redis_nodes[0] != '\0' || c->reservation_failure == RESERVATION_FAILURE_RUN;
}

/* Calls fn for each bucket run of orders (sorted by activity and bucket), RESERVATION_CHUNK orders
 * at a time, on the orders f takes. With park, a run whose calls fail is parked (when
 * reservation_may_park) and the others go on. */
static int each_chunk(struct consumer *c, const struct orderevent *orders, size_t count,
                      const struct run_filter *f, const enum keys_kind *kinds, int nkeys,
                      chunk_fn fn, park_fn park, char *err, size_t errlen)
{
    if (count == 0)
        return 0;
    /* Redis unreachable as a whole: nothing to tell one slot from another. */
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
        c->reservation_failure = RESERVATION_FAILURE_RUN;
        int run = script_keys_make(&k, &c->cfg, &orders[start], kinds, nkeys, err, errlen);
        a->count = 0;
        size_t first = start;
        for (size_t i = start; i < end && run == 0; i++) {
            if (!taken(f, i))
                continue;
            if (a->count == 0)
                first = i;
            pair_args_add(a, &orders[i]);
            if (a->count == RESERVATION_CHUNK) {
                run = fn(c, &k, first, a, err, errlen);
                a->count = 0;
            }
        }
        if (run == 0 && a->count > 0)
            run = fn(c, &k, first, a, err, errlen);
        if (run != 0 && park && reservation_may_park(c) && park(c, start, end, f) == 0) {
            warn_parked(&orders[start], end - start, err);
            run = 0;
        }
        rc = run;
        start = end;
    }
    free(a);
    return rc;
}

/* Parks the orders [start, end) of the batch's accepted ones that f takes, marking them. */
static int park_accepted(struct consumer *c, size_t start, size_t end, const struct run_filter *f)
{
    struct batch *b = &c->batch;
    size_t n = 0;
    for (size_t i = start; i < end; i++)
        n += taken(f, i);
    if (!parking_has_room(&c->parking, n))
        return -1;
    for (size_t i = start; i < end; i++) {
        if (!taken(f, i))
            continue;
        int32_t partition;
        int64_t offset;
        batch_origin(b, b->accepted[i].order_no, &partition, &offset);
        if (parking_add(&c->parking, &b->accepted[i], partition, offset, clock_mono_ms()) != 0)
            return -1;
        b->parked[i] = 1;
        b->parked_count++;
    }
    return 0;
}

/* Parks the orders [start, end) of the batch before their claim. */
static int park_orders(struct consumer *c, size_t start, size_t end, const struct run_filter *f)
{
    (void)f;
    struct batch *b = &c->batch;
    if (!parking_has_room(&c->parking, end - start))
        return -1;
    for (size_t i = start; i < end; i++) {
        int32_t partition;
        int64_t offset;
        batch_origin(b, b->orders[i].order_no, &partition, &offset);
        if (parking_add(&c->parking, &b->orders[i], partition, offset, clock_mono_ms()) != 0)
            return -1;
        b->verdicts[i] = BATCH_PARKED;
        b->parked_count++;
    }
    return 0;
}

/* Orders of a run with orders parked before them wait with those: claimed first, they
 * would overtake them. */
static int claim_or_wait(struct consumer *c, const struct script_keys *k, size_t first,
                         const struct pair_args *a, char *err, size_t errlen)
{
    const struct orderevent *ev = &c->batch.orders[first];
    if (parking_waits_for(&c->parking, ev->activity_id, ev->bucket_tag)) {
        snprintf(err, errlen, "earlier orders of theirs are set aside");
        return -1;
    }
    return claim_chunk(c, k, first, a, err, errlen);
}

int reservation_claim(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    const struct run_filter all = { NULL, 0, NULL };
    b->parked_count = 0;
    if (each_chunk(c, b->orders, b->count, &all, confirm_kinds, CONFIRM_KEYS, claim_or_wait, park_orders, err,
                   errlen) != 0)
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

int reservation_finalize(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    const struct run_filter written = { b->in_db, 1, b->parked };
    return each_chunk(c, b->accepted, b->accepted_count, &written, finalize_kinds, FINALIZE_KEYS,
                      finalize_chunk, park_accepted, err, errlen);
}

int reservation_park(struct consumer *c, size_t i)
{
    const struct run_filter one = { NULL, 0, c->batch.parked };
    return park_accepted(c, i, i + 1, &one);
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

int reservation_abandon(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->refusal_count == 0)
        return 0;
    const struct run_filter refused = { b->refused, BATCH_REFUSED, NULL };
    return each_chunk(c, b->accepted, b->accepted_count, &refused, abandon_kinds, ABANDON_KEYS,
                      abandon_chunk, NULL, err, errlen);
}
