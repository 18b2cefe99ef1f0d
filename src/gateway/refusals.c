#include "gateway/refusals.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

/* Sales not in the activity cache counted at once, at most. */
#define REFUSALS_UNCACHED_MAX 64

/* A sale's refusals not yet added to Redis. Entries are dropped once sent, so the table
 * holds only the sales refused within one interval. */
struct refusals_entry {
    int64_t id;
    int64_t count[REPLY_STATUS_COUNT];
};

struct refusals {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct event *timer;  /* NULL when the interval is 0 */
    struct refusals_entry *entries;  /* owned */
    size_t n, cap;
};

/* One refused.lua call: its counts go back to the table when Redis did not take them. */
struct refusals_call {
    struct refusals *refusals;
    int64_t id;
    int64_t count[REPLY_STATUS_COUNT];
    char digits[REPLY_STATUS_COUNT][24];
    struct keys_set keys;  /* the names of a sale not in the cache */
};

static struct refusals_entry *find(struct refusals *refusals, int64_t id)
{
    for (size_t i = 0; i < refusals->n; i++)
        if (refusals->entries[i].id == id)
            return &refusals->entries[i];
    return NULL;
}

/* A new entry for id, with nothing counted; NULL when out of memory. */
static struct refusals_entry *add(struct refusals *refusals, int64_t id)
{
    if (refusals->n == refusals->cap) {
        size_t cap = refusals->cap ? refusals->cap * 2 : 8;
        struct refusals_entry *grown = realloc(refusals->entries, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        refusals->entries = grown;
        refusals->cap = cap;
    }
    struct refusals_entry *e = &refusals->entries[refusals->n++];
    memset(e, 0, sizeof(*e));
    e->id = id;
    return e;
}

void refusals_count(struct refusals *refusals, int64_t activity_id, enum reply_status status)
{
    /* NOT_FOUND and INVALID name no sale to count for. */
    if (!refusals || !refusals->timer || (unsigned)status >= REPLY_STATUS_COUNT ||
        status == REPLY_NOT_FOUND || status == REPLY_INVALID || activity_id <= 0)
        return;
    struct refusals_entry *e = find(refusals, activity_id);
    /* A sale the cache has not loaded yet (its first second) is counted too, but only a
     * few such ids a tick: ids made up by a client cannot grow the table. */
    if (!e && (refusals->n < REFUSALS_UNCACHED_MAX || activity_cache_find(refusals->activities, activity_id)))
        e = add(refusals, activity_id);
    if (e)
        e->count[status]++;
}

static void give_back(struct refusals *refusals, const struct refusals_call *call)
{
    struct refusals_entry *e = find(refusals, call->id);
    if (!e)
        e = add(refusals, call->id);
    if (!e)
        return;
    for (int s = 0; s < REPLY_STATUS_COUNT; s++)
        e->count[s] += call->count[s];
}

static void on_added(redisReply *reply, void *privdata)
{
    struct refusals_call *call = privdata;
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        if (reply)
            LOG_WARN("activity %" PRId64 ": refused.lua: %s", call->id, reply->str);
        give_back(call->refusals, call);
    }
    free(call);
}

/* Sends entry e's counts; false when they stay in the table. */
static bool send_entry(struct refusals *refusals, const struct refusals_entry *e)
{
    struct refusals_call *call = calloc(1, sizeof(*call));
    if (!call)
        return false;
    call->refusals = refusals;
    call->id = e->id;
    /* Bucket 0's activity hash; refused.lua adds nothing where no sale is. */
    const struct keys_set *k = activity_keys(refusals->activities, e->id, &call->keys);
    if (!k) {
        free(call);
        return true;
    }
    const char *argv[1 + 2 * REPLY_STATUS_COUNT];
    int nargs = 0;
    argv[0] = k->name[KEYS_ACTIVITY];
    for (int s = 0; s < REPLY_STATUS_COUNT; s++) {
        if (e->count[s] == 0)
            continue;
        call->count[s] = e->count[s];
        snprintf(call->digits[s], sizeof(call->digits[s]), "%" PRId64, e->count[s]);
        argv[1 + nargs++] = reply_status_name((enum reply_status)s);
        argv[1 + nargs++] = call->digits[s];
    }
    if (nargs == 0) {
        free(call);
        return true;
    }
    if (redisconn_eval(refusals->redis, LUASCRIPT_REFUSED, 1, nargs, argv, NULL, on_added, call) != 0) {
        free(call);
        return false;
    }
    return true;
}

int refusals_flush(struct refusals *refusals)
{
    if (!redisconn_ready(refusals->redis))
        return 0;
    int sent = 0;
    size_t kept = 0;
    for (size_t i = 0; i < refusals->n; i++) {
        if (send_entry(refusals, &refusals->entries[i]))
            sent++;
        else
            refusals->entries[kept++] = refusals->entries[i];
    }
    refusals->n = kept;
    return sent;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    refusals_flush(arg);
}

struct refusals *refusals_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                              struct activity_cache *activities)
{
    struct refusals *refusals = calloc(1, sizeof(*refusals));
    if (!refusals)
        return NULL;
    refusals->cfg = cfg;
    refusals->redis = redis;
    refusals->activities = activities;
    if (cfg->refusal_stats_interval_ms > 0) {
        refusals->timer = event_new(base, -1, EV_PERSIST, on_timer, refusals);
        struct timeval tv = clock_timeval_ms(cfg->refusal_stats_interval_ms);
        if (!refusals->timer || event_add(refusals->timer, &tv) != 0) {
            refusals_free(refusals);
            return NULL;
        }
    }
    return refusals;
}

void refusals_free(struct refusals *refusals)
{
    if (!refusals)
        return;
    if (refusals->timer)
        event_free(refusals->timer);
    free(refusals->entries);
    free(refusals);
}
