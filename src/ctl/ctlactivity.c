#include "ctl/ctlactivity.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlcoupon.h"
#include "store/db.h"
#include "common/keys.h"
#include "common/orderno.h"
#include "common/timeparse.h"

/* INT UNSIGNED column. */
#define CTLACTIVITY_MAX_STOCK 4294967295LL
/* Orders per HSET while rebuilding the per-user and order-status hashes. */
#define CTLACTIVITY_CHUNK 500
/* A warmup that keeps losing its WATCH to a concurrent warmup gives up after this. */
#define CTLACTIVITY_WARM_ATTEMPTS 3

/* ---- the row ---------------------------------------------------------------------- */

#define CTLACTIVITY_COLUMNS                                                                  \
    "id, coupon_id, stock, sold_count, " CTL_SQL_MS("start_time") ", " CTL_SQL_MS("end_time") \
    ", name, status"

static void ctlactivity_parse_row(MYSQL_ROW r, struct ctlactivity_row *row)
{
    memset(row, 0, sizeof(*row));
    row->id = ctl_db_int(r[0]);
    row->coupon_id = ctl_db_int(r[1]);
    row->stock = ctl_db_int(r[2]);
    row->sold_count = ctl_db_int(r[3]);
    row->start_ms = ctl_db_int(r[4]);
    row->end_ms = ctl_db_int(r[5]);
    snprintf(row->name, sizeof(row->name), "%s", r[6] ? r[6] : "");
    snprintf(row->status, sizeof(row->status), "%s", r[7] ? r[7] : "");
}

int ctlactivity_load(struct ctl *ctl, int64_t id, struct ctlactivity_row *row)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT " CTLACTIVITY_COLUMNS " FROM seckill_activity WHERE id = %" PRId64,
             id);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        return ctl_fail(ctl, "activity %" PRId64 " does not exist", id);
    }
    ctlactivity_parse_row(r, row);
    mysql_free_result(res);
    return CTL_OK;
}

int ctlactivity_list(struct ctl *ctl, int64_t coupon_id, bool lock, struct ctlactivity_row **rows,
                     size_t *n)
{
    char sql[512], where[64] = "";
    if (coupon_id > 0)
        snprintf(where, sizeof(where), " WHERE coupon_id = %" PRId64, coupon_id);
    snprintf(sql, sizeof(sql), "SELECT " CTLACTIVITY_COLUMNS " FROM seckill_activity%s ORDER BY id%s",
             where, lock ? " FOR UPDATE" : "");
    *rows = NULL;
    *n = 0;
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    size_t count = (size_t)mysql_num_rows(res);
    struct ctlactivity_row *out = calloc(count + 1, sizeof(*out));
    if (!out) {
        mysql_free_result(res);
        return ctl_fail(ctl, "out of memory");
    }
    MYSQL_ROW r;
    size_t i = 0;
    while (i < count && (r = mysql_fetch_row(res)))
        ctlactivity_parse_row(r, &out[i++]);
    mysql_free_result(res);
    *rows = out;
    *n = i;
    return CTL_OK;
}

const char *ctlactivity_status_at(const struct ctlactivity_row *row, int64_t now_ms)
{
    if (strcmp(row->status, "CANCELLED") == 0)
        return "CANCELLED";
    if (now_ms < row->start_ms)
        return "PENDING";
    if (now_ms < row->end_ms)
        return "ACTIVE";
    return "ENDED";
}

/* ---- warmup ------------------------------------------------------------------------- */

struct ctlactivity_keys {
    char activity[KEYS_LEN], stock[KEYS_LEN], users[KEYS_LEN], orders[KEYS_LEN];
    char resv[KEYS_LEN], queued[KEYS_LEN], claimed[KEYS_LEN];
};

static void ctlactivity_keys(const struct config *cfg, int64_t id, struct ctlactivity_keys *k)
{
    keys_activity(k->activity, sizeof(k->activity), cfg, KEYS_ACTIVITY, id);
    keys_activity(k->stock, sizeof(k->stock), cfg, KEYS_STOCK, id);
    keys_activity(k->users, sizeof(k->users), cfg, KEYS_USERS, id);
    keys_activity(k->orders, sizeof(k->orders), cfg, KEYS_ORDERS, id);
    keys_activity(k->resv, sizeof(k->resv), cfg, KEYS_RESERVED, id);
    keys_activity(k->queued, sizeof(k->queued), cfg, KEYS_QUEUED, id);
    keys_activity(k->claimed, sizeof(k->claimed), cfg, KEYS_CLAIMED, id);
}

/* The activity hash, as the gateway's cache and the execute script read it. */
struct ctlactivity_meta {
    char id[24], coupon[24], stock[24], start[24], end[24];
    const char *argv[14];
};

static void ctlactivity_meta(const struct ctlactivity_row *row, const char *key,
                             struct ctlactivity_meta *m)
{
    snprintf(m->id, sizeof(m->id), "%" PRId64, row->id);
    snprintf(m->coupon, sizeof(m->coupon), "%" PRId64, row->coupon_id);
    snprintf(m->stock, sizeof(m->stock), "%" PRId64, row->stock);
    snprintf(m->start, sizeof(m->start), "%" PRId64, row->start_ms);
    snprintf(m->end, sizeof(m->end), "%" PRId64, row->end_ms);
    const char *argv[14] = {
        "HSET", key, "name", row->name, "couponId", m->coupon, "stock", m->stock,
        "start", m->start, "end", m->end,
        "status", ctlactivity_status_at(row, ctl_now_ms()),
    };
    memcpy(m->argv, argv, sizeof(argv));
}

/* One command inside MULTI: Redis must answer QUEUED. */
static int ctlactivity_queue(struct ctl *ctl, redisContext *c, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r)
        return ctl_fail(ctl, "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
    int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "QUEUED") == 0;
    if (!ok)
        ctl_fail(ctl, "redis %s: %s", argv[0], r->type == REDIS_REPLY_ERROR ? r->str : "not queued");
    freeReplyObject(r);
    return ok ? CTL_OK : CTL_FAIL;
}

static void ctlactivity_discard(redisContext *c)
{
    redisReply *r = redisCommand(c, "DISCARD");
    if (r)
        freeReplyObject(r);
}

/* A chunk of order rows on their way into two HSETs. */
struct ctlactivity_chunk {
    size_t n;
    char order_no[CTLACTIVITY_CHUNK][ORDERNO_LEN];
    char user[CTLACTIVITY_CHUNK][24];
    const char *argv[2 + 2 * CTLACTIVITY_CHUNK];
};

static int ctlactivity_flush_chunk(struct ctl *ctl, redisContext *c,
                                   const struct ctlactivity_keys *k, struct ctlactivity_chunk *ch)
{
    if (ch->n == 0)
        return CTL_OK;
    int argc = (int)(2 + 2 * ch->n);
    ch->argv[0] = "HSET";
    ch->argv[1] = k->users;
    for (size_t i = 0; i < ch->n; i++) {
        ch->argv[2 + 2 * i] = ch->user[i];
        ch->argv[3 + 2 * i] = ch->order_no[i];
    }
    if (ctlactivity_queue(ctl, c, argc, ch->argv) != CTL_OK)
        return CTL_FAIL;
    ch->argv[1] = k->orders;
    for (size_t i = 0; i < ch->n; i++) {
        ch->argv[2 + 2 * i] = ch->order_no[i];
        ch->argv[3 + 2 * i] = "SUCCESS";
    }
    if (ctlactivity_queue(ctl, c, argc, ch->argv) != CTL_OK)
        return CTL_FAIL;
    ch->n = 0;
    return CTL_OK;
}

enum { CTLACTIVITY_RETRY = 3 };

/* Any error element in an EXEC answer (a key of the wrong type). */
static int ctlactivity_exec_errors(struct ctl *ctl, const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            return ctl_fail(ctl, "redis: %s", r->element[i]->str);
    return CTL_OK;
}

static int ctlactivity_multi(struct ctl *ctl, redisContext *c)
{
    redisReply *r = redisCommand(c, "MULTI");
    if (!r || r->type != REDIS_REPLY_STATUS) {
        ctl_fail(ctl, "redis MULTI: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        return CTL_FAIL;
    }
    freeReplyObject(r);
    return CTL_OK;
}

/* EXEC of a transaction under WATCH: CTL_OK with the array reply in *out (caller frees),
 * CTLACTIVITY_RETRY when a watched key changed, or CTL_FAIL after printing. */
static int ctlactivity_exec(struct ctl *ctl, redisContext *c, redisReply **out)
{
    *out = NULL;
    redisReply *r = redisCommand(c, "EXEC");
    if (!r)
        return ctl_fail(ctl, "redis EXEC: %s", c->errstr);
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return CTLACTIVITY_RETRY;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        int rc = ctl_fail(ctl, "redis EXEC: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        return rc;
    }
    if (ctlactivity_exec_errors(ctl, r) != CTL_OK) {
        freeReplyObject(r);
        return CTL_FAIL;
    }
    *out = r;
    return CTL_OK;
}

static bool ctlactivity_is_cancelled(const struct ctlactivity_row *row)
{
    return strcmp(row->status, "CANCELLED") == 0;
}

/* The stock key is missing: the Redis side of the sale is rebuilt from MySQL, the one
 * durable record, inside one MULTI that the WATCH on the stock key aborts if another
 * warmup creates the key meanwhile. Reservations and queue marks left in a Redis that
 * lost its stock key cannot be trusted and are dropped; orders still in Kafka are
 * claimed again by the consumer's confirm script against the rebuilt stock. A cancelled
 * sale gets a stock key of 0 and its unsold stock as 'returned' (see ctlactivity.h):
 * it must not go back on sale, and I3 must still add up. */
static int ctlactivity_rebuild(struct ctl *ctl, redisContext *c, const struct ctlactivity_row *row,
                               const struct ctlactivity_keys *k, char *report, size_t reportlen)
{
    if (ctlactivity_multi(ctl, c) != CTL_OK)
        return CTL_FAIL;

    int rc = CTL_FAIL;
    MYSQL_RES *res = NULL;
    struct ctlactivity_chunk *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        ctl_fail(ctl, "out of memory");
        goto out;
    }
    const char *del[] = { "DEL", k->users, k->orders, k->resv, k->queued, k->claimed };
    if (ctlactivity_queue(ctl, c, 6, del) != CTL_OK)
        goto out;

    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT order_no, user_id FROM seckill_order WHERE activity_id = %" PRId64,
             row->id);
    res = ctl_db_stream(ctl, sql);
    if (!res)
        goto out;
    int64_t orders = 0;
    MYSQL_ROW mr;
    while ((mr = mysql_fetch_row(res))) {
        if (!mr[0] || !mr[1] || strlen(mr[0]) >= ORDERNO_LEN || strlen(mr[1]) >= sizeof(ch->user[0])) {
            ctl_fail(ctl, "activity %" PRId64 ": malformed seckill_order row", row->id);
            goto out;
        }
        strcpy(ch->order_no[ch->n], mr[0]);
        strcpy(ch->user[ch->n], mr[1]);
        ch->n++;
        orders++;
        if (ch->n == CTLACTIVITY_CHUNK && ctlactivity_flush_chunk(ctl, c, k, ch) != CTL_OK)
            goto out;
    }
    if (mysql_errno(ctl->db)) {
        ctl_fail(ctl, "mysql: %s", mysql_error(ctl->db));
        goto out;
    }
    mysql_free_result(res);
    res = NULL;
    if (ctlactivity_flush_chunk(ctl, c, k, ch) != CTL_OK)
        goto out;

    int64_t left = row->stock - orders;
    if (left < 0) {
        ctl_note(ctl, "activity %" PRId64 ": %" PRId64 " orders in MySQL exceed the stock of %" PRId64
                 " (oversold); stock set to 0", row->id, orders, row->stock);
        left = 0;
    }
    bool cancelled = ctlactivity_is_cancelled(row);
    char s_left[24], s_id[24];
    snprintf(s_left, sizeof(s_left), "%" PRId64, left);
    snprintf(s_id, sizeof(s_id), "%" PRId64, row->id);
    struct ctlactivity_meta meta;
    ctlactivity_meta(row, k->activity, &meta);
    const char *set[] = { "SET", k->stock, cancelled ? "0" : s_left };
    /* 'returned' is rewritten, not added to: it describes this rebuilt stock key. */
    const char *returned_set[] = { "HSET", k->activity, "returned", s_left };
    const char *returned_del[] = { "HDEL", k->activity, "returned" };
    const char *sadd[] = { "SADD", KEYS_ACTIVITIES, s_id };
    if (ctlactivity_queue(ctl, c, 3, set) != CTL_OK || ctlactivity_queue(ctl, c, 14, meta.argv) != CTL_OK ||
        (cancelled ? ctlactivity_queue(ctl, c, 4, returned_set)
                   : ctlactivity_queue(ctl, c, 3, returned_del)) != CTL_OK ||
        ctlactivity_queue(ctl, c, 3, sadd) != CTL_OK)
        goto out;
    free(ch);

    redisReply *r;
    rc = ctlactivity_exec(ctl, c, &r);
    if (rc != CTL_OK)
        return rc;
    freeReplyObject(r);
    if (cancelled)
        snprintf(report, reportlen, "stock set to 0 (cancelled: %" PRId64 " unsold returned to the "
                 "coupon, %" PRId64 " orders rebuilt from MySQL)", left, orders);
    else
        snprintf(report, reportlen, "stock set to %" PRId64 " (stock %" PRId64 ", %" PRId64
                 " orders rebuilt from MySQL)", left, row->stock, orders);
    return CTL_OK;

out:
    if (res)
        mysql_free_result(res);
    free(ch);
    ctlactivity_discard(c);
    return CTL_FAIL;
}

/* The stock key exists: the sale may be live, so only the description is refreshed and
 * the stock, the users and the orders are left as they are. Under the caller's WATCH. */
static int ctlactivity_refresh(struct ctl *ctl, redisContext *c, const struct ctlactivity_row *row,
                               const struct ctlactivity_keys *k, char *report, size_t reportlen)
{
    if (ctlactivity_multi(ctl, c) != CTL_OK)
        return CTL_FAIL;
    struct ctlactivity_meta meta;
    ctlactivity_meta(row, k->activity, &meta);
    char s_id[24];
    snprintf(s_id, sizeof(s_id), "%" PRId64, row->id);
    const char *sadd[] = { "SADD", KEYS_ACTIVITIES, s_id };
    const char *get[] = { "GET", k->stock };
    if (ctlactivity_queue(ctl, c, 14, meta.argv) != CTL_OK || ctlactivity_queue(ctl, c, 3, sadd) != CTL_OK ||
        ctlactivity_queue(ctl, c, 2, get) != CTL_OK) {
        ctlactivity_discard(c);
        return CTL_FAIL;
    }
    redisReply *r;
    int rc = ctlactivity_exec(ctl, c, &r);
    if (rc != CTL_OK)
        return rc;
    int64_t left;
    if (r->elements == 3 && ctl_redis_int(r->element[2], &left) == 0)
        snprintf(report, reportlen, "stock key kept: %" PRId64 " left", left);
    else
        snprintf(report, reportlen, "stock key kept (it vanished meanwhile: run warmup again)");
    freeReplyObject(r);
    return CTL_OK;
}

/* cancel.lua on a warmed activity: {moved now, returned in total, was cancelled}. */
struct ctlactivity_cancelled {
    bool warmed;
    int64_t moved, returned;
    bool was_cancelled;
};

static int ctlactivity_cancel_redis(struct ctl *ctl, int64_t id, struct ctlactivity_cancelled *out)
{
    struct ctlactivity_keys k;
    ctlactivity_keys(&ctl->cfg, id, &k);
    const char *keys[] = { k.activity, k.stock };
    redisReply *r = ctl_redis_script(ctl, LUASCRIPT_CANCEL, 2, keys, 0, NULL);
    if (!r)
        return CTL_FAIL;
    memset(out, 0, sizeof(*out));
    int rc = CTL_OK;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == -1) {
        out->warmed = false;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER &&
               r->element[2]->type == REDIS_REPLY_INTEGER) {
        out->warmed = true;
        out->moved = r->element[0]->integer;
        out->returned = r->element[1]->integer;
        out->was_cancelled = r->element[2]->integer == 1;
    } else {
        rc = ctl_fail(ctl, "redis cancel.lua: unexpected reply (is seckill.lua-dir current?)");
    }
    freeReplyObject(r);
    return rc;
}

int ctlactivity_warm(struct ctl *ctl, const struct ctlactivity_row *row, char *report,
                     size_t reportlen)
{
    redisContext *c = ctl_redis(ctl);
    if (!c)
        return CTL_FAIL;
    struct ctlactivity_keys k;
    ctlactivity_keys(&ctl->cfg, row->id, &k);
    bool cancelled = ctlactivity_is_cancelled(row);
    int rc = CTLACTIVITY_RETRY;
    for (int attempt = 0; attempt < CTLACTIVITY_WARM_ATTEMPTS && rc == CTLACTIVITY_RETRY; attempt++) {
        /* The activity hash is watched too: a cancel running meanwhile must not be undone
         * by this warmup writing the status it read from MySQL before the cancel. */
        const char *watch[] = { "WATCH", k.stock, k.activity };
        redisReply *r = ctl_redis_argv(ctl, 3, watch);
        if (!r)
            return CTL_FAIL;
        freeReplyObject(r);
        const char *exists[] = { "EXISTS", k.stock };
        const char *status[] = { "HGET", k.activity, "status" };
        redisReply *e = ctl_redis_argv(ctl, 2, exists);
        redisReply *st = e ? ctl_redis_argv(ctl, 3, status) : NULL;
        if (!e || !st) {
            if (e)
                freeReplyObject(e);
            return CTL_FAIL;
        }
        bool present = e->type == REDIS_REPLY_INTEGER && e->integer > 0;
        bool redis_cancelled = st->type == REDIS_REPLY_STRING && strcmp(st->str, "CANCELLED") == 0;
        freeReplyObject(e);
        freeReplyObject(st);
        if (redis_cancelled && !cancelled) {
            const char *unwatch[] = { "UNWATCH" };
            r = ctl_redis_argv(ctl, 1, unwatch);
            if (r)
                freeReplyObject(r);
            return ctl_fail(ctl, "activity %" PRId64 " is cancelled in Redis but not in MySQL (an "
                            "interrupted 'activity cancel'?): run 'seckillctl activity cancel %" PRId64
                            "' to finish it; warming it would reopen the sale", row->id, row->id);
        }
        rc = present ? ctlactivity_refresh(ctl, c, row, &k, report, reportlen)
                     : ctlactivity_rebuild(ctl, c, row, &k, report, reportlen);
    }
    if (rc == CTLACTIVITY_RETRY)
        return ctl_fail(ctl, "activity %" PRId64 ": the activity kept changing during warmup; "
                        "is another warmup or cancel running?", row->id);
    if (rc != CTL_OK || !cancelled)
        return rc;
    /* A kept stock key of a cancelled sale may hold units the reaper released after the
     * cancel; cancel.lua moves them into 'returned' and makes sure the hash says
     * CANCELLED. Idempotent. */
    struct ctlactivity_cancelled cc;
    if ((rc = ctlactivity_cancel_redis(ctl, row->id, &cc)) != CTL_OK)
        return rc;
    if (cc.moved > 0) {
        size_t used = strlen(report);
        snprintf(report + used, reportlen - used, "; cancelled: %" PRId64 " released unit(s) moved "
                 "to returned (%" PRId64 " in all)", cc.moved, cc.returned);
    }
    return CTL_OK;
}

int ctlactivity_warmup(struct ctl *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctl_parse_single_id(ctl, argc, argv, "activity id", &id);
    if (rc != CTL_OK)
        return rc;
    struct ctlactivity_row row;
    if ((rc = ctlactivity_load(ctl, id, &row)) != CTL_OK)
        return rc;
    char report[256] = "";
    if ((rc = ctlactivity_warm(ctl, &row, report, sizeof(report))) != CTL_OK)
        return rc;
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "status", ctlactivity_status_at(&row, ctl_now_ms()));
        cJSON_AddStringToObject(obj, "warmup", report);
        return ctl_print_json(ctl, obj);
    }
    printf("activity %" PRId64 " warmed: %s\n", id, report);
    return CTL_OK;
}

/* ---- the allotment ------------------------------------------------------------------- */

enum { CTLACTIVITY_REDIS_CMDS = 7 };

/* The commands of ctlactivity_read_redis, first in a MULTI that show extends. */
static void ctlactivity_redis_cmds(const struct ctlactivity_keys *k, struct ctl_redis_cmd *cmds)
{
    const struct ctl_redis_cmd c[CTLACTIVITY_REDIS_CMDS] = {
        { 2, { "EXISTS", k->activity } },
        { 3, { "HGET", k->activity, "status" } },
        { 2, { "GET", k->stock } },
        { 3, { "HGET", k->activity, "returned" } },
        { 2, { "ZCARD", k->resv } },
        { 2, { "SCARD", k->queued } },
        { 2, { "SCARD", k->claimed } },
    };
    memcpy(cmds, c, sizeof(c));
}

static int ctlactivity_redis_parse(struct ctl *ctl, const redisReply *r, struct ctlactivity_redis *rd)
{
    if (ctlactivity_exec_errors(ctl, r) != CTL_OK)
        return CTL_FAIL;
    redisReply **e = r->element;
    memset(rd, 0, sizeof(*rd));
    rd->warmed = e[0]->type == REDIS_REPLY_INTEGER && e[0]->integer > 0;
    rd->cancelled = e[1]->type == REDIS_REPLY_STRING && strcmp(e[1]->str, "CANCELLED") == 0;
    rd->has_stock = ctl_redis_int(e[2], &rd->stock_left) == 0;
    if (ctl_redis_int(e[3], &rd->returned) != 0 || rd->returned < 0)
        rd->returned = 0;
    rd->reservations = e[4]->integer;
    rd->queued = e[5]->integer;
    rd->claimed = e[6]->integer;
    return CTL_OK;
}

int ctlactivity_read_redis(struct ctl *ctl, int64_t id, struct ctlactivity_redis *rd)
{
    struct ctlactivity_keys k;
    ctlactivity_keys(&ctl->cfg, id, &k);
    struct ctl_redis_cmd cmds[CTLACTIVITY_REDIS_CMDS];
    ctlactivity_redis_cmds(&k, cmds);
    redisReply *r = ctl_redis_multi(ctl, cmds, CTLACTIVITY_REDIS_CMDS);
    if (!r)
        return CTL_FAIL;
    int rc = ctlactivity_redis_parse(ctl, r, rd);
    freeReplyObject(r);
    return rc;
}

int64_t ctlactivity_holds(const struct ctlactivity_row *row, int64_t now_ms,
                          const struct ctlactivity_redis *rd)
{
    int64_t unsold = row->stock - row->sold_count;
    if (unsold < 0)
        unsold = 0;
    bool cancelled = ctlactivity_is_cancelled(row);
    if (cancelled && rd->warmed && !rd->cancelled)
        return unsold;
    if (!cancelled && now_ms < row->end_ms + CTLACTIVITY_END_GRACE_MS)
        return unsold;
    /* Over. Without a stock key no order can be claimed any more (confirm.lua's lost-order
     * path needs stock), so nothing is in flight. */
    if (!rd->has_stock)
        return 0;
    int64_t in_flight = unsold - (rd->stock_left > 0 ? rd->stock_left : 0) - rd->returned;
    return in_flight > 0 ? in_flight : 0;
}

int ctlactivity_allotted(struct ctl *ctl, int64_t coupon_id, int64_t now_ms, bool lock,
                         int64_t *allotted)
{
    struct ctlactivity_row *rows;
    size_t n;
    if (ctlactivity_list(ctl, coupon_id, lock, &rows, &n) != CTL_OK)
        return CTL_FAIL;
    /* Redis is read after the rows are locked: sold_count cannot move meanwhile (the
     * consumer's UPDATE waits for our COMMIT). Stock key + returned of an ended or
     * cancelled sale only grow afterwards (releases), which makes in-flight smaller, so
     * the sum read here is never too small. The one exception is confirm.lua's lost-order
     * path (Redis lost an order that Kafka still holds), which takes a unit from a
     * positive stock key even of an ended or cancelled sale; it only runs after Redis
     * lost writes. */
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        struct ctlactivity_redis rd;
        if (ctlactivity_read_redis(ctl, rows[i].id, &rd) != CTL_OK) {
            free(rows);
            return CTL_FAIL;
        }
        sum += ctlactivity_holds(&rows[i], now_ms, &rd);
    }
    free(rows);
    *allotted = sum;
    return CTL_OK;
}

/* ---- create ------------------------------------------------------------------------- */

/* Everything between START TRANSACTION and COMMIT; the caller rolls back on failure. */
static int ctlactivity_insert(struct ctl *ctl, int64_t coupon_id, int64_t stock, int64_t start_ms,
                              int64_t end_ms, const char *given_name, int64_t now_ms, int64_t *id)
{
    struct ctlcoupon_row cp;
    int64_t allotted, remaining;
    int rc = ctlcoupon_grantable(ctl, coupon_id, now_ms, true, &cp, &allotted, &remaining);
    if (rc != CTL_OK)
        return rc;
    if (strcmp(cp.status, "ACTIVE") != 0)
        return ctl_fail(ctl, "coupon %" PRId64 " is %s, not ACTIVE", coupon_id, cp.status);
    if (start_ms < cp.start_ms || end_ms > cp.end_ms) {
        char a[40], b[40], c[40], d[40];
        timeparse_format(start_ms, a, sizeof(a));
        timeparse_format(end_ms, b, sizeof(b));
        timeparse_format(cp.start_ms, c, sizeof(c));
        timeparse_format(cp.end_ms, d, sizeof(d));
        return ctl_fail(ctl, "window %s .. %s is not inside coupon %" PRId64 "'s validity %s .. %s",
                        a, b, coupon_id, c, d);
    }
    if (stock > remaining)
        return ctl_fail(ctl,
                        "--stock %" PRId64 " exceeds what coupon %" PRId64 " has left: %" PRId64
                        " (total %" PRId64 " - issued %" PRId64 " - %" PRId64
                        " allotted to its other activities)",
                        stock, coupon_id, remaining, cp.total, cp.issued, allotted);

    char name[CTLACTIVITY_NAME_BYTES + 16];
    if (given_name) {
        snprintf(name, sizeof(name), "%s", given_name);
    } else {
        /* " seckill" is 8 characters of the 128 the column holds. */
        ctl_utf8_truncate(cp.name, 120);
        snprintf(name, sizeof(name), "%s seckill", cp.name);
    }
    char *qname = ctl_db_quote(ctl, name);
    if (!qname)
        return CTL_FAIL;
    char s_start[32], s_end[32];
    timeparse_format_sql(start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(end_ms, s_end, sizeof(s_end));
    size_t sqllen = strlen(qname) + 512;
    char *sql = malloc(sqllen);
    if (!sql) {
        free(qname);
        return ctl_fail(ctl, "out of memory");
    }
    snprintf(sql, sqllen,
             "INSERT INTO seckill_activity (name, coupon_id, stock, start_time, end_time, status) "
             "VALUES (%s, %" PRId64 ", %" PRId64 ", '%s', '%s', '%s')",
             qname, coupon_id, stock, s_start, s_end, start_ms > now_ms ? "PENDING" : "ACTIVE");
    free(qname);
    rc = ctl_db_exec(ctl, sql);
    free(sql);
    if (rc != CTL_OK)
        return rc;
    *id = (int64_t)mysql_insert_id(ctl->db);
    return ctl_db_exec(ctl, "COMMIT");
}

int ctlactivity_create(struct ctl *ctl, int argc, char **argv)
{
    enum { COUPON, STOCK, START, END, NAME, NOPTS };
    struct ctl_opt opts[NOPTS] = {
        [COUPON] = { "--coupon", true, NULL },
        [STOCK] = { "--stock", true, NULL },
        [START] = { "--start", true, NULL },
        [END] = { "--end", true, NULL },
        [NAME] = { "--name", false, NULL },
    };
    int rc = ctl_parse_opts(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    int64_t coupon_id, stock, start_ms, end_ms, now = ctl_now_ms();
    if ((rc = ctl_parse_id(ctl, "--coupon", opts[COUPON].value, &coupon_id)) != CTL_OK ||
        (rc = ctl_parse_count(ctl, "--stock", opts[STOCK].value, 1, CTLACTIVITY_MAX_STOCK, &stock)) != CTL_OK ||
        (rc = ctl_parse_time(ctl, "--start", opts[START].value, now, &start_ms)) != CTL_OK ||
        (rc = ctl_parse_time(ctl, "--end", opts[END].value, now, &end_ms)) != CTL_OK)
        return rc;
    if (opts[NAME].value && (rc = ctl_parse_name(ctl, "--name", opts[NAME].value)) != CTL_OK)
        return rc;
    if (end_ms <= start_ms)
        return ctl_usage_error(ctl, "--end must be after --start");
    if (end_ms <= now)
        return ctl_usage_error(ctl, "--end '%s' is in the past: the sale would already be over",
                               opts[END].value);
    if (end_ms - start_ms > ctl->cfg.max_seckill_duration * 1000)
        return ctl_usage_error(ctl,
                               "window of %" PRId64 " s exceeds seckill.max-seckill-duration (%" PRId64 " s)",
                               (end_ms - start_ms + 999) / 1000, ctl->cfg.max_seckill_duration);

    /* Redis is needed for the warmup: better refused now than created cold. */
    if (!ctl_redis(ctl))
        return CTL_FAIL;
    if ((rc = ctl_db_exec(ctl, "START TRANSACTION")) != CTL_OK)
        return rc;
    int64_t id = 0;
    rc = ctlactivity_insert(ctl, coupon_id, stock, start_ms, end_ms, opts[NAME].value, now, &id);
    if (rc != CTL_OK) {
        char err[256];
        db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
        return rc;
    }

    struct ctlactivity_row row;
    memset(&row, 0, sizeof(row));
    char report[256] = "";
    rc = ctlactivity_load(ctl, id, &row);
    if (rc == CTL_OK)
        rc = ctlactivity_warm(ctl, &row, report, sizeof(report));
    if (rc != CTL_OK)
        ctl_note(ctl, "activity %" PRId64 " was created but is not warmed: run "
                 "'seckillctl activity warmup %" PRId64 "'", id, id);
    else if (!ctl->json)
        ctl_note(ctl, "activity %" PRId64 " warmed: %s", id, report);

    if (ctl->json) {
        char iso_start[40], iso_end[40];
        timeparse_format(start_ms, iso_start, sizeof(iso_start));
        timeparse_format(end_ms, iso_end, sizeof(iso_end));
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", row.name);
        cJSON_AddNumberToObject(obj, "couponId", (double)coupon_id);
        cJSON_AddNumberToObject(obj, "stock", (double)stock);
        cJSON_AddStringToObject(obj, "start", iso_start);
        cJSON_AddStringToObject(obj, "end", iso_end);
        cJSON_AddBoolToObject(obj, "warmed", rc == CTL_OK);
        if (rc == CTL_OK)
            cJSON_AddStringToObject(obj, "warmup", report);
        int prc = ctl_print_json(ctl, obj);
        return rc != CTL_OK ? rc : prc;
    }
    printf("%" PRId64 "\n", id);
    return rc;
}

/* ---- cancel ------------------------------------------------------------------------- */

static int ctlactivity_cancel_print(struct ctl *ctl, const struct ctlactivity_row *row,
                                    const struct ctlactivity_cancelled *cc, bool already,
                                    int64_t in_flight)
{
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)row->id);
        cJSON_AddNumberToObject(obj, "couponId", (double)row->coupon_id);
        cJSON_AddStringToObject(obj, "status", "CANCELLED");
        cJSON_AddBoolToObject(obj, "alreadyCancelled", already);
        cJSON_AddBoolToObject(obj, "warmed", cc->warmed);
        cJSON_AddNumberToObject(obj, "returned", (double)cc->returned);
        cJSON_AddNumberToObject(obj, "returnedNow", (double)cc->moved);
        cJSON_AddNumberToObject(obj, "inFlight", (double)in_flight);
        return ctl_print_json(ctl, obj);
    }
    if (already)
        printf("activity %" PRId64 " is already cancelled: %" PRId64 " unsold returned to coupon %" PRId64
               "%s\n", row->id, cc->returned, row->coupon_id,
               cc->moved > 0 ? " (including units released since)" : "");
    else
        printf("activity %" PRId64 " cancelled: %" PRId64 " unsold returned to coupon %" PRId64 "\n",
               row->id, cc->returned, row->coupon_id);
    if (in_flight > 0)
        printf("%" PRId64 " order(s) still in flight end as sold or return to the coupon\n", in_flight);
    return CTL_OK;
}

/* Redis first: execute.lua refuses the activity from the next call on, on every gateway,
 * whatever their caches say. Then MySQL. Until MySQL says CANCELLED the allotment goes on
 * counting the sale as live (it holds its unsold stock), so an interruption between the
 * two errs on the safe side; running cancel again finishes it. */
int ctlactivity_cancel(struct ctl *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctl_parse_single_id(ctl, argc, argv, "activity id", &id);
    if (rc != CTL_OK)
        return rc;
    struct ctlactivity_row row;
    if ((rc = ctlactivity_load(ctl, id, &row)) != CTL_OK)
        return rc;
    bool already = ctlactivity_is_cancelled(&row);
    int64_t now = ctl_now_ms();
    if (!already && now >= row.end_ms) {
        /* Nothing to stop, unless an earlier cancel got only as far as Redis. */
        struct ctlactivity_redis rd;
        if ((rc = ctlactivity_read_redis(ctl, id, &rd)) != CTL_OK)
            return rc;
        if (!rd.cancelled) {
            char end[40];
            timeparse_format(row.end_ms, end, sizeof(end));
            return ctl_fail(ctl, "activity %" PRId64 " ended at %s: nothing to stop (its unsold stock "
                            "goes back to coupon %" PRId64 " by itself)", id, end, row.coupon_id);
        }
    }

    struct ctlactivity_cancelled cc;
    if ((rc = ctlactivity_cancel_redis(ctl, id, &cc)) != CTL_OK)
        return rc;
    if (!already) {
        char sql[160];
        snprintf(sql, sizeof(sql),
                 "UPDATE seckill_activity SET status = 'CANCELLED' WHERE id = %" PRId64, id);
        if ((rc = ctl_db_exec(ctl, sql)) != CTL_OK) {
            ctl_note(ctl, "activity %" PRId64 " is stopped in Redis but MySQL was not updated: run "
                     "'seckillctl activity cancel %" PRId64 "' again", id, id);
            return rc;
        }
        /* sold_count as of the cancel, for the in-flight count below. */
        if ((rc = ctlactivity_load(ctl, id, &row)) != CTL_OK)
            return rc;
    }
    if (!cc.warmed) {
        /* Never warmed (or Redis lost it): nothing was on sale, nothing is in flight, and a
         * later warmup builds it cancelled. The allotment gives its unsold stock back. */
        cc.returned = row.stock - row.sold_count > 0 ? row.stock - row.sold_count : 0;
        ctl_note(ctl, "activity %" PRId64 " is not warmed in Redis: nothing was on sale", id);
        return ctlactivity_cancel_print(ctl, &row, &cc, already, 0);
    }
    struct ctlactivity_redis rd;
    if ((rc = ctlactivity_read_redis(ctl, id, &rd)) != CTL_OK)
        return rc;
    return ctlactivity_cancel_print(ctl, &row, &cc, already, ctlactivity_holds(&row, now, &rd));
}

/* ---- show --------------------------------------------------------------------------- */

struct ctlactivity_live {
    struct ctlactivity_redis rd;
    int64_t success, failed, processing, other;
};

/* One MULTI: the numbers add up as of one instant. HVALS is O(orders), fine for an
 * operator's look at one sale. */
static int ctlactivity_live(struct ctl *ctl, int64_t id, struct ctlactivity_live *lv)
{
    struct ctlactivity_keys k;
    ctlactivity_keys(&ctl->cfg, id, &k);
    struct ctl_redis_cmd cmds[CTLACTIVITY_REDIS_CMDS + 1];
    ctlactivity_redis_cmds(&k, cmds);
    cmds[CTLACTIVITY_REDIS_CMDS] = (struct ctl_redis_cmd){ 2, { "HVALS", k.orders } };
    redisReply *r = ctl_redis_multi(ctl, cmds, CTLACTIVITY_REDIS_CMDS + 1);
    if (!r)
        return CTL_FAIL;
    memset(lv, 0, sizeof(*lv));
    int rc = ctlactivity_redis_parse(ctl, r, &lv->rd);
    if (rc == CTL_OK) {
        const redisReply *vals = r->element[CTLACTIVITY_REDIS_CMDS];
        for (size_t i = 0; i < vals->elements; i++) {
            const char *v = vals->element[i]->str ? vals->element[i]->str : "";
            if (strcmp(v, "SUCCESS") == 0)
                lv->success++;
            else if (strcmp(v, "FAILED") == 0)
                lv->failed++;
            else if (strcmp(v, "PROCESSING") == 0)
                lv->processing++;
            else
                lv->other++;
        }
    }
    freeReplyObject(r);
    return rc;
}

int ctlactivity_show(struct ctl *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctl_parse_single_id(ctl, argc, argv, "activity id", &id);
    if (rc != CTL_OK)
        return rc;
    struct ctlactivity_row row;
    if ((rc = ctlactivity_load(ctl, id, &row)) != CTL_OK)
        return rc;
    char sql[256], coupon_name[CTLACTIVITY_NAME_BYTES] = "?", coupon_type[16] = "?";
    snprintf(sql, sizeof(sql), "SELECT name, type FROM coupon WHERE id = %" PRId64, row.coupon_id);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (r) {
        snprintf(coupon_name, sizeof(coupon_name), "%s", r[0] ? r[0] : "");
        snprintf(coupon_type, sizeof(coupon_type), "%s", r[1] ? r[1] : "");
    }
    mysql_free_result(res);

    struct ctlactivity_live lv;
    int live_rc = ctlactivity_live(ctl, id, &lv);
    const struct ctlactivity_redis *rd = &lv.rd;
    int64_t now = ctl_now_ms();
    const char *status = ctlactivity_status_at(&row, now);
    char start[40], end[40];
    timeparse_format(row.start_ms, start, sizeof(start));
    timeparse_format(row.end_ms, end, sizeof(end));

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)row.id);
        cJSON_AddStringToObject(obj, "name", row.name);
        cJSON_AddNumberToObject(obj, "couponId", (double)row.coupon_id);
        cJSON_AddStringToObject(obj, "couponName", coupon_name);
        cJSON_AddStringToObject(obj, "couponType", coupon_type);
        cJSON_AddNumberToObject(obj, "stock", (double)row.stock);
        cJSON_AddNumberToObject(obj, "soldCount", (double)row.sold_count);
        cJSON_AddStringToObject(obj, "start", start);
        cJSON_AddStringToObject(obj, "end", end);
        cJSON_AddNumberToObject(obj, "startMs", (double)row.start_ms);
        cJSON_AddNumberToObject(obj, "endMs", (double)row.end_ms);
        cJSON_AddStringToObject(obj, "status", status);
        if (live_rc == CTL_OK) {
            cJSON_AddNumberToObject(obj, "holds", (double)ctlactivity_holds(&row, now, rd));
            cJSON *redis = cJSON_AddObjectToObject(obj, "redis");
            cJSON_AddBoolToObject(redis, "warmed", rd->warmed);
            if (rd->has_stock)
                cJSON_AddNumberToObject(redis, "stockLeft", (double)rd->stock_left);
            else
                cJSON_AddNullToObject(redis, "stockLeft");
            cJSON_AddNumberToObject(redis, "returned", (double)rd->returned);
            cJSON_AddNumberToObject(redis, "reservations", (double)rd->reservations);
            cJSON_AddNumberToObject(redis, "queued", (double)rd->queued);
            cJSON_AddNumberToObject(redis, "claimed", (double)rd->claimed);
            cJSON *orders = cJSON_AddObjectToObject(redis, "orders");
            cJSON_AddNumberToObject(orders, "SUCCESS", (double)lv.success);
            cJSON_AddNumberToObject(orders, "FAILED", (double)lv.failed);
            cJSON_AddNumberToObject(orders, "PROCESSING", (double)lv.processing);
        } else {
            cJSON_AddNullToObject(obj, "redis");
        }
        int prc = ctl_print_json(ctl, obj);
        return live_rc != CTL_OK ? live_rc : prc;
    }

    printf("activity   %" PRId64 " \"%s\"\n", row.id, row.name);
    printf("coupon     %" PRId64 " \"%s\" (%s)\n", row.coupon_id, coupon_name, coupon_type);
    printf("window     %s .. %s (%" PRId64 " s)\n", start, end, (row.end_ms - row.start_ms) / 1000);
    printf("status     %s\n", status);
    printf("stock      %" PRId64 ", sold %" PRId64 " (MySQL)\n", row.stock, row.sold_count);
    if (live_rc != CTL_OK) {
        printf("redis      unreadable (error on stderr)\n");
        return live_rc;
    }
    if (!rd->warmed)
        printf("redis      not warmed: run 'seckillctl activity warmup %" PRId64 "'\n", row.id);
    if (rd->has_stock)
        printf("redis      stock left %" PRId64 ", reservations %" PRId64 ", queued %" PRId64
               ", claimed %" PRId64 "\n",
               rd->stock_left, rd->reservations, rd->queued, rd->claimed);
    else
        printf("redis      no stock key, reservations %" PRId64 ", queued %" PRId64
               ", claimed %" PRId64 "\n",
               rd->reservations, rd->queued, rd->claimed);
    if (rd->returned > 0 || rd->cancelled)
        printf("returned   %" PRId64 " unsold to the coupon by the cancel\n", rd->returned);
    printf("holds      %" PRId64 " of coupon %" PRId64 "'s count\n", ctlactivity_holds(&row, now, rd),
           row.coupon_id);
    printf("orders     SUCCESS %" PRId64 ", FAILED %" PRId64 ", PROCESSING %" PRId64 "%s\n",
           lv.success, lv.failed, lv.processing, lv.other ? " (and unknown statuses)" : "");
    return CTL_OK;
}
