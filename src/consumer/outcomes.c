#include "consumer/outcomes.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/holder.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/orderno.h"
#include "consumer/backend.h"
#include "consumer/consumer.h"
#include "store/outbox.h"
#include "store/sqltext.h"

/* Entries per read; a pass goes on reading while they come full, within its budget. */
#define OUTCOMES_BATCH 500
#define OUTCOMES_BUDGET_MS 250

static const char *const outcomes_reasons[] = {
    "ROLLED_BACK", "EXPIRED", "REJECTED", "REFUSED", "SUPERSEDED",
};

static bool outcomes_known_reason(const char *r)
{
    for (size_t i = 0; i < sizeof(outcomes_reasons) / sizeof(outcomes_reasons[0]); i++)
        if (strcmp(r, outcomes_reasons[i]) == 0)
            return true;
    return false;
}

static int outcomes_int(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || v <= 0)
        return -1;
    *out = v;
    return 0;
}

int outcomes_parse(const char *const *fields, const char *const *values, size_t n,
                   int64_t activity_id, struct outcomes_entry *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof(*out));
    const char *o = NULL, *u = NULL, *r = NULL, *t = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *f = fields[i];
        if (strcmp(f, "o") == 0) o = values[i];
        else if (strcmp(f, "u") == 0) u = values[i];
        else if (strcmp(f, "r") == 0) r = values[i];
        else if (strcmp(f, "t") == 0) t = values[i];
    }
    uint64_t id;
    int64_t order_activity;
    if (!o || orderno_parse(o, &id, &order_activity) != 0 || order_activity != activity_id) {
        snprintf(why, whylen, "order number '%s' is not one of activity %" PRId64, o ? o : "", activity_id);
        return -1;
    }
    int slot;
    if (!u || holder_parse(u, &out->user_id, &slot) != 0) {
        snprintf(why, whylen, "order %s: user '%s' is not a holder (an id, or id#slot)", o, u ? u : "");
        return -1;
    }
    if (!r || !outcomes_known_reason(r)) {
        snprintf(why, whylen, "order %s: unknown reason '%s'", o, r ? r : "");
        return -1;
    }
    if (outcomes_int(t, &out->failed_ms) != 0) {
        snprintf(why, whylen, "order %s: time '%s' is not milliseconds", o, t ? t : "");
        return -1;
    }
    snprintf(out->order_no, sizeof(out->order_no), "%s", o);
    snprintf(out->reason, sizeof(out->reason), "%s", r);
    out->activity_id = activity_id;
    out->accepted_ms = (int64_t)(id >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS)) + ORDERNO_EPOCH_MS;
    return 0;
}

struct outcomes_pass {
    struct consumer *c;
    char me[96];            /* this process's name in the group */
    int64_t recorded;
    struct outbox events;   /* of the entries being recorded, when outcome events are on */
};

/* argv[key] is the command's key, which routes it. */
static redisReply *outcomes_cmd(struct outcomes_pass *p, int argc, const char **argv, int key)
{
    char err[256];
    redisReply *r = redisroute_argv(p->c->redis, argc, argv, NULL, key, err, sizeof(err));
    if (!r) {
        LOG_WARN("outcomes: redis %s: %s", argv[0], err);
        backend_redis_drop(p->c);
    }
    return r;
}

/* The entries of an XREADGROUP reply ([[key, entries]] or nil) or of XAUTOCLAIM's second
 * element: an array of [id, [field, value, ...]]. */
static const redisReply *outcomes_entries(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
        return NULL;
    const redisReply *stream = r->element[0];
    if (stream->type != REDIS_REPLY_ARRAY || stream->elements != 2)
        return NULL;
    return stream->element[1]->type == REDIS_REPLY_ARRAY ? stream->element[1] : NULL;
}

/* The failed orders' rows and, with outcome events on, their order.failed events: in one
 * transaction, so that every outcome recorded is an event and no event is of an outcome
 * rolled back. */
static int outcomes_write(struct outcomes_pass *p, const struct sqltext *rows)
{
    MYSQL *db = p->c->db;
    if (p->events.count == 0)
        return mysql_query(db, rows->data);
    char err[256];
    if (mysql_query(db, "START TRANSACTION") != 0 || mysql_query(db, rows->data) != 0)
        return -1;
    if (outbox_write(db, &p->events, err, sizeof(err)) != 0) {
        LOG_WARN("outcomes: %s", err);
        return -1;
    }
    return mysql_query(db, "COMMIT");
}

/* Writes the parseable entries, then acknowledges and deletes every one (a malformed
 * entry can never be recorded: it is dropped with a warning rather than retried for
 * ever). Returns the entries handled, or -1 with all of them left pending. */
static int outcomes_record(struct outcomes_pass *p, const char *key, int64_t activity_id,
                           const redisReply *entries)
{
    size_t n = entries->elements;
    if (n == 0)
        return 0;
    struct sqltext s = { 0 };
    sqltext_printf(&s, "INSERT INTO seckill_order_failed "
                       "(order_no, user_id, activity_id, reason, accepted_at, failed_at) VALUES ");
    const char **ack = calloc(n + 3, sizeof(*ack));
    if (!ack) {
        sqltext_free(&s);
        return -1;
    }
    size_t rows = 0, ids = 0;
    bool events = p->c->cfg.kafka_outcome_topic[0] != '\0';
    outbox_reset(&p->events);
    for (size_t i = 0; i < n; i++) {
        const redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[0]->type != REDIS_REPLY_STRING)
            continue;
        ack[3 + ids++] = e->element[0]->str;
        const redisReply *kv = e->element[1];
        if (kv->type != REDIS_REPLY_ARRAY || kv->elements % 2 != 0 || kv->elements > 16) {
            LOG_WARN("outcomes: %s entry %s is not a field list: dropped", key, e->element[0]->str);
            continue;
        }
        const char *fields[8], *values[8];
        for (size_t j = 0; j < kv->elements / 2; j++) {
            fields[j] = kv->element[2 * j]->type == REDIS_REPLY_STRING ? kv->element[2 * j]->str : "";
            values[j] = kv->element[2 * j + 1]->type == REDIS_REPLY_STRING ? kv->element[2 * j + 1]->str : "";
        }
        struct outcomes_entry en;
        char why[160];
        if (outcomes_parse(fields, values, kv->elements / 2, activity_id, &en, why, sizeof(why)) != 0) {
            LOG_WARN("outcomes: %s entry %s dropped: %s", key, e->element[0]->str, why);
            continue;
        }
        sqltext_printf(&s, "%s(", rows ? ", " : "");
        sqltext_quoted(&s, p->c->db, en.order_no);
        sqltext_printf(&s, ", %" PRId64 ", %" PRId64 ", '%s', ", en.user_id, en.activity_id, en.reason);
        sqltext_datetime(&s, en.accepted_ms);
        sqltext_printf(&s, ", ");
        sqltext_datetime(&s, en.failed_ms);
        sqltext_printf(&s, ")");
        rows++;
        struct outbox_event ev = { .type = OUTBOX_ORDER_FAILED, .at_ms = en.failed_ms,
                                   .user_id = en.user_id, .activity_id = en.activity_id,
                                   .accepted_ms = en.accepted_ms };
        snprintf(ev.order_no, sizeof(ev.order_no), "%s", en.order_no);
        snprintf(ev.reason, sizeof(ev.reason), "%s", en.reason);
        if (events && outbox_add(&p->events, &ev) != 0)
            s.failed = 1;
    }
    sqltext_printf(&s, " ON DUPLICATE KEY UPDATE id = id");
    int rc = 0;
    if (s.failed) {
        LOG_WARN("outcomes: out of memory");
        rc = -1;
    } else if (rows > 0 && outcomes_write(p, &s) != 0) {
        LOG_WARN("outcomes: mysql: %s (left pending, retried)", mysql_error(p->c->db));
        backend_db_drop(p->c);
        rc = -1;
    }
    sqltext_free(&s);
    if (rc == 0 && ids > 0) {
        ack[0] = "XACK";
        ack[1] = key;
        ack[2] = OUTCOMES_GROUP;
        redisReply *r = outcomes_cmd(p, (int)(3 + ids), ack, 1);
        if (r) {
            /* Recorded: the entries leave the stream too, which XACK alone keeps. */
            freeReplyObject(r);
            ack[1] = "XDEL";
            ack[2] = key;
            r = outcomes_cmd(p, (int)(2 + ids), ack + 1, 1);
        }
        if (r)
            freeReplyObject(r);
        else
            rc = -1;
        if (rc == 0)
            p->recorded += (int64_t)rows;
    }
    free(ack);
    return rc == 0 ? (int)n : -1;
}

/* Reads one batch: this consumer's own pending entries first (a pass cut short, or those
 * just claimed from a dead consumer), then new ones. Returns the entries handled, or -1. */
static int outcomes_batch(struct outcomes_pass *p, const char *key, int64_t activity_id)
{
    static const char *const starts[] = { "0", ">" };
    char count[16];
    snprintf(count, sizeof(count), "%d", OUTCOMES_BATCH);
    int handled = 0;
    for (size_t i = 0; i < 2; i++) {
        const char *read[] = { "XREADGROUP", "GROUP", OUTCOMES_GROUP, p->me, "COUNT", count,
                               "STREAMS", key, starts[i] };
        redisReply *r = outcomes_cmd(p, 9, read, 7);
        if (!r)
            return -1;
        const redisReply *entries = outcomes_entries(r);
        int n = entries ? outcomes_record(p, key, activity_id, entries) : 0;
        freeReplyObject(r);
        if (n < 0)
            return -1;
        handled += n;
    }
    return handled;
}

static int outcomes_stream(struct outcomes_pass *p, const char *key, int64_t activity_id, int64_t deadline)
{
    const char *xlen[] = { "XLEN", key };
    redisReply *r = outcomes_cmd(p, 2, xlen, 1);
    if (!r)
        return -1;
    bool some = r->type == REDIS_REPLY_INTEGER && r->integer > 0;
    freeReplyObject(r);
    if (!some)
        return 0;
    const char *create[] = { "XGROUP", "CREATE", key, OUTCOMES_GROUP, "0" };
    if (!(r = outcomes_cmd(p, 5, create, 2)))
        return -1;
    freeReplyObject(r);   /* BUSYGROUP: it exists already */
    char idle[24];
    snprintf(idle, sizeof(idle), "%d", OUTCOMES_IDLE_MS);
    char count[16];
    snprintf(count, sizeof(count), "%d", OUTCOMES_BATCH);
    const char *claim[] = { "XAUTOCLAIM", key, OUTCOMES_GROUP, p->me, idle, "0-0", "COUNT", count, "JUSTID" };
    if (!(r = outcomes_cmd(p, 9, claim, 1)))
        return -1;
    freeReplyObject(r);
    int n;
    do {
        if ((n = outcomes_batch(p, key, activity_id)) < 0)
            return -1;
    } while (n >= OUTCOMES_BATCH && clock_mono_ms() < deadline);
    return 0;
}

/* Each bucket of a bucketed sale has a stream of its own (bucket.h); the tags are in the
 * activity hash of bucket 0. */
static int outcomes_activity(struct outcomes_pass *p, int64_t activity_id, int64_t deadline)
{
    struct keys_set k;
    if (keys_set_build(&k, &p->c->cfg, activity_id) != 0)
        return 0;
    const char *hget[] = { "HGET", k.name[KEYS_ACTIVITY], "tags" };
    redisReply *r = outcomes_cmd(p, 3, hget, 1);
    if (!r)
        return -1;
    struct bucket_list list;
    if (r->type != REDIS_REPLY_STRING || bucket_list_parse(r->str, activity_id, &list) != 0)
        bucket_list_single(&list, activity_id);
    freeReplyObject(r);
    for (int b = 0; b < list.count; b++) {
        if (keys_set_build_tag(&k, &p->c->cfg, activity_id, list.tag[b]) != 0)
            continue;
        if (outcomes_stream(p, k.name[KEYS_FAILED], activity_id, deadline) != 0)
            return -1;
    }
    return 0;
}

int64_t outcomes_run(struct consumer *c)
{
    char err[256];
    if (backend_redis(c, err, sizeof(err)) != 0 || backend_db(c, err, sizeof(err)) != 0) {
        LOG_WARN("outcomes: %s", err);
        return -1;
    }
    struct outcomes_pass p = { .c = c };
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    snprintf(p.me, sizeof(p.me), "%s:%ld", host, (long)getpid());
    const char *members[] = { "SMEMBERS", KEYS_ACTIVITIES };
    redisReply *set = outcomes_cmd(&p, 2, members, 1);
    if (!set)
        return -1;
    int64_t deadline = clock_mono_ms() + OUTCOMES_BUDGET_MS;
    int rc = 0;
    for (size_t i = 0; set->type == REDIS_REPLY_ARRAY && i < set->elements && rc == 0; i++) {
        int64_t id;
        if (set->element[i]->type == REDIS_REPLY_STRING && outcomes_int(set->element[i]->str, &id) == 0)
            rc = outcomes_activity(&p, id, deadline);
    }
    freeReplyObject(set);
    outbox_free(&p.events);
    return rc == 0 ? p.recorded : -1;
}
