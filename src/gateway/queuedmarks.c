#include "gateway/queuedmarks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/orderno.h"
#include "gateway/metrics.h"

#define MARKS_PER_CALL 500
#define MARKS_MAX_ACTIVITIES 256

/* Members waiting for one activity (one bucket of it: a bucketed activity's marks go to
 * each bucket's keys): a group. `members` and each string in it are owned. */
struct queuedmarks_group {
    int64_t activity_id;
    int bucket;
    char **members;
    size_t count;
    size_t capacity;
};

/* One queued.lua call in flight; its members come back to the group if it fails. */
struct queuedmarks_call {
    struct queuedmarks *m;
    struct queuedmarks_call *prev, *next;   /* the calls in flight */
    int64_t activity_id;
    int bucket;
    char *members[MARKS_PER_CALL];
    size_t count;
};

struct queuedmarks {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct event *timer;
    struct queuedmarks_group groups[MARKS_MAX_ACTIVITIES];
    size_t group_count;
    size_t buffered;
    size_t sending;
    struct queuedmarks_call *calls;
};

static struct queuedmarks_group *group_for(struct queuedmarks *m, int64_t activity_id, int bucket)
{
    for (size_t i = 0; i < m->group_count; i++)
        if (m->groups[i].activity_id == activity_id && m->groups[i].bucket == bucket)
            return &m->groups[i];
    /* Reuse an empty group before growing the list. */
    for (size_t i = 0; i < m->group_count; i++)
        if (m->groups[i].count == 0) {
            m->groups[i].activity_id = activity_id;
            m->groups[i].bucket = bucket;
            return &m->groups[i];
        }
    if (m->group_count == MARKS_MAX_ACTIVITIES)
        return NULL;
    struct queuedmarks_group *b = &m->groups[m->group_count++];
    memset(b, 0, sizeof(*b));
    b->activity_id = activity_id;
    b->bucket = bucket;
    return b;
}

static void schedule(struct queuedmarks *m)
{
    if (evtimer_pending(m->timer, NULL))
        return;
    struct timeval tv = clock_timeval_ms(m->cfg->queued_mark_interval_ms);
    evtimer_add(m->timer, &tv);
}

static int group_push(struct queuedmarks_group *b, char *member)
{
    if (b->count == b->capacity) {
        size_t capacity = b->capacity ? b->capacity * 2 : 256;
        char **grown = realloc(b->members, capacity * sizeof(*grown));
        if (!grown)
            return -1;
        b->members = grown;
        b->capacity = capacity;
    }
    b->members[b->count++] = member;
    return 0;
}

static void requeue(struct queuedmarks *m, int64_t activity_id, int bucket, char *member)
{
    struct queuedmarks_group *b = group_for(m, activity_id, bucket);
    if (!b || group_push(b, member) != 0) {
        /* Without the mark the reaper may expire an order that is in Kafka; the consumer
         * then rejects it. Logged so that it can be found. */
        LOG_ORDER_ERROR(member, "queued mark dropped (out of memory)");
        free(member);
        return;
    }
    m->buffered++;
}

void queuedmarks_add(struct queuedmarks *m, int64_t activity_id, int bucket, const char *member)
{
    char *copy = strdup(member);
    if (!copy) {
        LOG_ORDER_ERROR(member, "queued mark dropped (out of memory)");
        return;
    }
    requeue(m, activity_id, bucket, copy);
    schedule(m);
}

/* short_of: written, but WAIT counted fewer than redis.wait-replicas replicas holding it. */
static void marked(struct queuedmarks_call *call, const redisReply *reply, bool short_of)
{
    struct queuedmarks *m = call->m;
    if (call->prev)
        call->prev->next = call->next;
    else
        m->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    m->sending -= call->count;
    if (reply && reply->type == REDIS_REPLY_INTEGER && !short_of) {
        for (size_t i = 0; i < call->count; i++)
            free(call->members[i]);
    } else {
        /* queued.lua is idempotent: marks that did reach Redis are found moved already. */
        LOG_WARN("activity %" PRId64 ": %zu queued marks not written (%s), retrying", call->activity_id,
                 call->count, short_of ? "not acknowledged by enough replicas"
                 : reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "redis unavailable");
        for (size_t i = 0; i < call->count; i++)
            requeue(m, call->activity_id, call->bucket, call->members[i]);
        schedule(m);
    }
    free(call);
}

static void on_marked(redisReply *reply, void *privdata)
{
    marked(privdata, reply, false);
}

/* A mark lost in a failover would leave an order that is in Kafka to the reaper. */
static void on_marked_replicated(redisReply *reply, long long replicas, void *privdata)
{
    struct queuedmarks_call *call = privdata;
    bool short_of = reply && replicas < call->m->cfg->redis_wait_replicas;
    if (short_of)
        metrics_inc(METRIC_REDIS_WAIT_SHORT);
    marked(call, reply, short_of);
}

static void send_group(struct queuedmarks *m, struct queuedmarks_group *b)
{
    struct keys_set scratch;
    const struct keys_set *keys =
        b->count > 0 ? activity_bucket_keys(m->activities, b->activity_id, b->bucket, &scratch) : NULL;
    if (b->count > 0 && !keys) {
        LOG_ERROR("activity %" PRId64 ": %zu queued marks kept: its keys are too long", b->activity_id,
                  b->count);
        return;
    }
    while (b->count > 0) {
        struct queuedmarks_call *call = malloc(sizeof(*call));
        if (!call)
            return;
        call->m = m;
        call->activity_id = b->activity_id;
        call->bucket = b->bucket;
        call->count = b->count < MARKS_PER_CALL ? b->count : MARKS_PER_CALL;
        const char *argv[2 + MARKS_PER_CALL];
        argv[0] = keys->name[KEYS_RESERVED];
        argv[1] = keys->name[KEYS_QUEUED];
        for (size_t i = 0; i < call->count; i++) {
            call->members[i] = b->members[b->count - call->count + i];
            argv[2 + i] = call->members[i];
        }
        int sent = m->cfg->redis_wait_replicas > 0
                       ? redisconn_eval_wait(m->redis, LUASCRIPT_QUEUED, 2, (int)call->count, argv, NULL,
                                             on_marked_replicated, call)
                       : redisconn_eval(m->redis, LUASCRIPT_QUEUED, 2, (int)call->count, argv, NULL,
                                        on_marked, call);
        if (sent != 0) {
            free(call);
            schedule(m);  /* Redis is down: keep them and try again */
            return;
        }
        b->count -= call->count;
        m->buffered -= call->count;
        m->sending += call->count;
        call->prev = NULL;
        call->next = m->calls;
        if (m->calls)
            m->calls->prev = call;
        m->calls = call;
    }
}

void queuedmarks_flush(struct queuedmarks *m)
{
    for (size_t i = 0; i < m->group_count; i++)
        send_group(m, &m->groups[i]);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    queuedmarks_flush(arg);
}

struct queuedmarks *queuedmarks_new(struct event_base *base, const struct config *cfg,
                                    struct redisconn *redis, struct activity_cache *activities)
{
    struct queuedmarks *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->cfg = cfg;
    m->redis = redis;
    m->activities = activities;
    m->timer = evtimer_new(base, on_timer, m);
    return m;
}

void queuedmarks_free(struct queuedmarks *m)
{
    if (!m)
        return;
    if (m->buffered)
        LOG_WARN("%zu queued marks never reached Redis", m->buffered);
    for (size_t i = 0; i < m->group_count; i++) {
        for (size_t j = 0; j < m->groups[i].count; j++)
            free(m->groups[i].members[j]);
        free(m->groups[i].members);
    }
    event_free(m->timer);
    free(m);
}

size_t queuedmarks_pending(const struct queuedmarks *m) { return m->buffered + m->sending; }

/* A member is "orderNo|userId", its order number "<id>-<activity>". */
static int64_t member_ms(const char *member)
{
    return orderno_time_ms(strtoull(member, NULL, 10));
}

int64_t queuedmarks_oldest_ms(const struct queuedmarks *m)
{
    int64_t oldest = INT64_MAX;
    for (size_t i = 0; i < m->group_count; i++)
        for (size_t j = 0; j < m->groups[i].count; j++) {
            int64_t t = member_ms(m->groups[i].members[j]);
            if (t < oldest)
                oldest = t;
        }
    for (const struct queuedmarks_call *c = m->calls; c; c = c->next)
        for (size_t j = 0; j < c->count; j++) {
            int64_t t = member_ms(c->members[j]);
            if (t < oldest)
                oldest = t;
        }
    return oldest;
}
