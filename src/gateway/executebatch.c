#include "gateway/executebatch.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/keys.h"
#include "common/log.h"
#include "gateway/metrics.h"

/* A subject key: "seckill:rl:ip:{A}:<address>" and the like. */
#define EXECUTEBATCH_KEY_LEN (KEYS_LEN + 64)
#define EXECUTEBATCH_NUM_LEN 24

/* The requests of one activity's bucket queued in this pass, in arrival order. */
struct executebatch_group {
    int64_t activity_id;
    int bucket;
    struct executebatch_item *head;
    struct executebatch_item **tail;
};

/* One call in flight: its requests in the order of the script's verdicts. Allocated by
 * the flush, freed by the Redis callback (which hiredis runs exactly once). */
struct executebatch_call {
    const struct config *cfg;
    size_t count;
    struct executebatch_item *items[];
};

struct executebatch {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct event *flush_event;
    bool flush_scheduled;
    struct executebatch_group *groups;  /* this pass's activities */
    size_t group_count, group_cap;
    /* Scratch for formatting one call: redisconn_eval copies the command before it
     * returns, so one set serves every call. Sized for execute-batch-max requests. */
    char (*subject_keys)[EXECUTEBATCH_KEY_LEN];
    char (*numbers)[EXECUTEBATCH_NUM_LEN];
    const char **argv;
    char settings[6][EXECUTEBATCH_NUM_LEN];
};

/* A non-negative millisecond count in decimal (out holds EXECUTEBATCH_NUM_LEN). */
static void executebatch_format_int(char *out, int64_t v)
{
    char digits[EXECUTEBATCH_NUM_LEN];
    size_t n = 0;
    uint64_t u = v > 0 ? (uint64_t)v : 0;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && n < sizeof(digits) - 1);
    for (size_t i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    out[n] = '\0';
}

static void executebatch_fail_all(struct executebatch_item *const *items, size_t count)
{
    for (size_t i = 0; i < count; i++)
        items[i]->verdict(items[i], NULL);
}

static void executebatch_answer(struct executebatch_call *call, const redisReply *reply)
{
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == call->count) {
        for (size_t i = 0; i < call->count; i++)
            call->items[i]->verdict(call->items[i], reply->element[i]);
    } else {
        if (reply && reply->type == REDIS_REPLY_ERROR)
            LOG_WARN("execute script failed for %zu request(s): %s", call->count, reply->str);
        else if (reply)
            LOG_WARN("execute script answered %zu verdict(s) for %zu request(s)",
                     reply->type == REDIS_REPLY_ARRAY ? reply->elements : 0, call->count);
        executebatch_fail_all(call->items, call->count);
    }
    free(call);
}

static void on_called(redisReply *reply, void *privdata)
{
    executebatch_answer(privdata, reply);
}

/* redis.wait-replicas > 0: the verdicts come once WAIT has counted the replicas that hold
 * the call's writes; with fewer, no reservation of the call may reach Kafka. */
static void on_called_replicated(redisReply *reply, long long replicas, void *privdata)
{
    struct executebatch_call *call = privdata;
    const struct config *cfg = call->cfg;
    /* A failed call is failed as without WAIT: only verdicts can be short of replicas. */
    bool short_of = reply && reply->type == REDIS_REPLY_ARRAY && replicas < cfg->redis_wait_replicas;
    if (short_of) {
        metrics_inc(METRIC_REDIS_WAIT_SHORT);
        LOG_WARN("execute: %lld of %lld replicas acknowledged a call of %zu request(s) within %lld ms; "
                 "its reservations are rolled back", replicas, (long long)cfg->redis_wait_replicas,
                 call->count, (long long)cfg->redis_wait_timeout_ms);
    }
    for (size_t i = 0; i < call->count; i++)
        call->items[i]->unreplicated = short_of;
    executebatch_answer(call, reply);
}

/* Sends items (all of one activity's bucket, count <= execute-batch-max) as one execute.lua
 * call; on failure their verdicts are NULL at once. */
static void executebatch_call_send(struct executebatch *b, struct executebatch_item *const *items,
                                   size_t count)
{
    struct executebatch_call *call = malloc(sizeof(*call) + count * sizeof(call->items[0]));
    struct keys_set scratch;
    const struct keys_set *keys = activity_bucket_keys(b->activities, items[0]->activity_id, items[0]->bucket,
                                                       &scratch);
    if (!call || !keys) {
        free(call);
        executebatch_fail_all(items, count);
        return;
    }
    call->cfg = b->cfg;
    call->count = count;
    memcpy(call->items, items, count * sizeof(items[0]));

    const char **argv = b->argv;
    size_t nkeys = 5 + 5 * count, nargs = 7 + 3 * count;
    argv[0] = keys->name[KEYS_ACTIVITY];
    argv[1] = keys->name[KEYS_STOCK];
    argv[2] = keys->name[KEYS_USERS];
    argv[3] = keys->name[KEYS_ORDERS];
    argv[4] = keys->name[KEYS_RESERVED];
    const char **args = argv + nkeys;
    args[0] = b->cfg->enable_rate_limit ? "1" : "0";
    args[1] = b->settings[0];
    args[2] = b->settings[1];
    args[3] = b->cfg->enable_anti_brush ? "1" : "0";
    args[4] = b->settings[2];
    args[5] = b->settings[3];
    args[6] = b->settings[4];
    /* The five subject keys of a request differ from another request's only after their
     * prefix, which every request of the call shares. */
    static const enum keys_subject_kind kinds[5] = { KEYS_RATE_USER, KEYS_RATE_IP, KEYS_BRUSH, KEYS_BAN,
                                                     KEYS_TOKEN };
    char prefix[5][EXECUTEBATCH_KEY_LEN];
    size_t prefix_len[5];
    for (size_t j = 0; j < 5; j++) {
        int n = keys_subject_prefix_tag(prefix[j], sizeof(prefix[j]), kinds[j], keys->tag);
        if (n < 0) {
            free(call);
            executebatch_fail_all(items, count);
            return;
        }
        prefix_len[j] = (size_t)n;
    }
    for (size_t i = 0; i < count; i++) {
        const struct executebatch_item *r = items[i];
        const char *subject[5] = { r->user, r->ip, r->user, r->user, r->nonce };
        char (*k)[EXECUTEBATCH_KEY_LEN] = &b->subject_keys[5 * i];
        for (size_t j = 0; j < 5; j++) {
            size_t rest = strnlen(subject[j], EXECUTEBATCH_KEY_LEN - 1 - prefix_len[j]);
            memcpy(k[j], prefix[j], prefix_len[j]);
            memcpy(k[j] + prefix_len[j], subject[j], rest);
            k[j][prefix_len[j] + rest] = '\0';
            argv[5 + 5 * i + j] = k[j];
        }
        executebatch_format_int(b->numbers[i], r->accepted_ms);
        args[7 + 3 * i] = r->user;
        args[8 + 3 * i] = r->order_no;
        args[9 + 3 * i] = b->numbers[i];
    }
    int sent = b->cfg->redis_wait_replicas > 0
                   ? redisconn_eval_wait(b->redis, LUASCRIPT_EXECUTE, (int)nkeys, (int)nargs, argv, NULL,
                                         on_called_replicated, call)
                   : redisconn_eval(b->redis, LUASCRIPT_EXECUTE, (int)nkeys, (int)nargs, argv, NULL,
                                    on_called, call);
    if (sent != 0) {
        free(call);
        executebatch_fail_all(items, count);
        return;
    }
    for (size_t i = 0; i < count; i++)
        items[i]->sent = true;
    metrics_observe(METRIC_EXECUTE_BATCH_SIZE, (int64_t)count);
}

/* Runs at the end of the pass in which the first request of the batch was added (see
 * the header for why that is where event_active puts it). */
static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct executebatch *b = arg;
    b->flush_scheduled = false;
    /* Detached first: a verdict given during the flush (a send that failed) may lead to
     * new requests only through the loop, but the lists must not change under us. */
    size_t group_count = b->group_count;
    b->group_count = 0;
    size_t max = (size_t)b->cfg->execute_batch_max;
    struct executebatch_item *chunk[512];
    for (size_t g = 0; g < group_count; g++) {
        struct executebatch_item *r = b->groups[g].head;
        while (r) {
            size_t n = 0;
            while (r && n < max) {
                struct executebatch_item *next = r->next;
                r->next = NULL;
                chunk[n++] = r;
                r = next;
            }
            executebatch_call_send(b, chunk, n);
        }
    }
}

void executebatch_add(struct executebatch *b, struct executebatch_item *item)
{
    item->next = NULL;
    struct executebatch_group *g = NULL;
    for (size_t i = 0; i < b->group_count; i++)
        if (b->groups[i].activity_id == item->activity_id && b->groups[i].bucket == item->bucket)
            g = &b->groups[i];
    if (!g) {
        if (b->group_count == b->group_cap) {
            size_t cap = b->group_cap ? b->group_cap * 2 : 8;
            struct executebatch_group *grown = realloc(b->groups, cap * sizeof(*grown));
            if (!grown) {
                LOG_WARN("execute batch: out of memory for a new activity group");
                item->verdict(item, NULL);
                return;
            }
            b->groups = grown;
            b->group_cap = cap;
        }
        g = &b->groups[b->group_count++];
        g->activity_id = item->activity_id;
        g->bucket = item->bucket;
        g->head = NULL;
        g->tail = &g->head;
    }
    *g->tail = item;
    g->tail = &item->next;
    if (!b->flush_scheduled) {
        b->flush_scheduled = true;
        event_active(b->flush_event, EV_TIMEOUT, 0);
    }
}

struct executebatch *executebatch_new(struct event_base *base, const struct config *cfg,
                                      struct redisconn *redis, struct activity_cache *activities)
{
    struct executebatch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    size_t max = (size_t)cfg->execute_batch_max;
    b->cfg = cfg;
    b->redis = redis;
    b->activities = activities;
    b->flush_event = event_new(base, -1, 0, on_flush, b);
    b->subject_keys = calloc(5 * max, sizeof(*b->subject_keys));
    b->numbers = calloc(max, sizeof(*b->numbers));
    b->argv = calloc(5 + 5 * max + 7 + 3 * max, sizeof(*b->argv));
    if (!b->flush_event || !b->subject_keys || !b->numbers || !b->argv) {
        executebatch_free(b);
        return NULL;
    }
    snprintf(b->settings[0], sizeof(b->settings[0]), "%" PRId64, cfg->max_requests_per_user);
    snprintf(b->settings[1], sizeof(b->settings[1]), "%" PRId64, cfg->max_requests_per_ip);
    snprintf(b->settings[2], sizeof(b->settings[2]), "%" PRId64, cfg->anti_brush_threshold);
    snprintf(b->settings[3], sizeof(b->settings[3]), "%" PRId64, cfg->anti_brush_ban_seconds);
    /* A token's expiry is rounded up to a whole second (tokenapi.c): its spent nonce is
     * kept for the longest it can live, token-ttl-seconds + 1. */
    snprintf(b->settings[4], sizeof(b->settings[4]), "%" PRId64,
             cfg->require_token ? cfg->token_ttl_seconds + 1 : 0);
    return b;
}

void executebatch_free(struct executebatch *b)
{
    if (!b)
        return;
    for (size_t g = 0; g < b->group_count; g++) {
        struct executebatch_item *r = b->groups[g].head;
        while (r) {
            struct executebatch_item *next = r->next;
            r->verdict(r, NULL);
            r = next;
        }
    }
    if (b->flush_event)
        event_free(b->flush_event);
    free(b->groups);
    free(b->subject_keys);
    free(b->numbers);
    free(b->argv);
    free(b);
}
