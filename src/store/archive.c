#include "store/archive.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bucket.h"
#include "common/keys.h"
#include "common/timeparse.h"
#include "store/db.h"
#include "store/sqltime.h"

#define ARCHIVE_KEYS 11
static const enum keys_kind archive_kinds[ARCHIVE_KEYS] = {
    KEYS_ACTIVITY, KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED,
    KEYS_FAILED, KEYS_XFER_OUT, KEYS_XFER_IN, KEYS_FAILED_USERS,
};

struct archive_run {
    MYSQL *db;
    struct redisroute *redis;
    const struct luascript_set *scripts;
    const struct config *cfg;
    int64_t id;
    struct bucket_list buckets;
    struct keys_set keys[BUCKET_MAX];
    int64_t success[BUCKET_MAX];    /* SUCCESS orders found in each bucket's orders hash */
    char *err;
    size_t errlen;
};

static int archive_fail(struct archive_run *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int archive_fail(struct archive_run *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- MySQL ----------------------------------------------------------------------------- */

struct archive_row {
    char status[16];
    int64_t end_ms;
    int64_t sold_count;
    bool archived;
    int64_t archived_ms;
    char bucket_tags[BUCKET_LIST_LEN];
};

/* The result of sql, or NULL with the failure noted. */
static MYSQL_RES *archive_query(struct archive_run *r, const char *sql)
{
    MYSQL_RES *res = mysql_query(r->db, sql) == 0 ? mysql_store_result(r->db) : NULL;
    if (!res)
        archive_fail(r, ARCHIVE_ERROR, "mysql: %s", mysql_error(r->db));
    return res;
}

static int archive_load(struct archive_run *r, struct archive_row *row)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT status, " SQLTIME_MS("end_time") ", sold_count, " SQLTIME_MS("archived_at")
             ", bucket_tags FROM seckill_activity WHERE id = %" PRId64, r->id);
    MYSQL_RES *res = archive_query(r, sql);
    if (!res)
        return ARCHIVE_ERROR;
    MYSQL_ROW m = mysql_fetch_row(res);
    int rc = ARCHIVE_DONE;
    if (!m) {
        rc = archive_fail(r, ARCHIVE_MISSING, "activity %" PRId64 " does not exist", r->id);
    } else {
        memset(row, 0, sizeof(*row));
        snprintf(row->status, sizeof(row->status), "%s", m[0] ? m[0] : "");
        row->end_ms = m[1] ? strtoll(m[1], NULL, 10) : 0;
        row->sold_count = m[2] ? strtoll(m[2], NULL, 10) : 0;
        row->archived = m[3] != NULL;
        row->archived_ms = m[3] ? strtoll(m[3], NULL, 10) : 0;
        snprintf(row->bucket_tags, sizeof(row->bucket_tags), "%s", m[4] ? m[4] : "");
    }
    mysql_free_result(res);
    return rc;
}

static int archive_mysql_int(struct archive_run *r, const char *sql, int64_t *out)
{
    MYSQL_RES *res = archive_query(r, sql);
    if (!res)
        return ARCHIVE_ERROR;
    MYSQL_ROW m = mysql_fetch_row(res);
    *out = m && m[0] ? strtoll(m[0], NULL, 10) : 0;
    mysql_free_result(res);
    return ARCHIVE_DONE;
}

int archive_due(MYSQL *db, int64_t now_ms, int64_t after_ms, int64_t *ids, size_t cap, char *err,
                size_t errlen)
{
    int64_t before = now_ms - (after_ms > ARCHIVE_END_GRACE_MS ? after_ms : ARCHIVE_END_GRACE_MS);
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT id FROM seckill_activity WHERE archived_at IS NULL AND end_time <= " SQLTIME_AT
             " AND status IN ('ENDED', 'CANCELLED') ORDER BY end_time DESC, id DESC LIMIT %zu", before, cap);
    MYSQL_RES *res = db_select(db, sql, err, errlen);
    if (!res)
        return -1;
    size_t n = 0;
    MYSQL_ROW m;
    while (n < cap && (m = mysql_fetch_row(res)))
        ids[n++] = m[0] ? strtoll(m[0], NULL, 10) : 0;
    mysql_free_result(res);
    return (int)n;
}

/* ---- Redis ----------------------------------------------------------------------------- */

static redisReply *archive_cmd(struct archive_run *r, int argc, const char **argv)
{
    char why[256];
    redisReply *reply = redisroute_argv(r->redis, argc, argv, NULL, 1, why, sizeof(why));
    if (!reply) {
        archive_fail(r, ARCHIVE_ERROR, "redis %s %s: %s", argv[0], argv[1], why);
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        archive_fail(r, ARCHIVE_ERROR, "redis %s %s: %s", argv[0], argv[1], reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

static redisReply *archive_script(struct archive_run *r, int b, int nargs, const char *const *args)
{
    const char *keys[ARCHIVE_KEYS];
    for (int i = 0; i < ARCHIVE_KEYS; i++)
        keys[i] = r->keys[b].name[archive_kinds[i]];
    char why[256];
    redisReply *reply = redisroute_script(r->redis, &r->scripts->scripts[LUASCRIPT_ARCHIVE], ARCHIVE_KEYS,
                                          keys, nargs, args, why, sizeof(why));
    if (!reply) {
        archive_fail(r, ARCHIVE_ERROR, "archive.lua: %s", why);
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        archive_fail(r, ARCHIVE_ERROR, "archive.lua: %s", reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

static int archive_count(struct archive_run *r, const char *cmd, const char *key, int64_t *out)
{
    const char *argv[] = { cmd, key };
    redisReply *reply = archive_cmd(r, 2, argv);
    if (!reply)
        return ARCHIVE_ERROR;
    *out = reply->type == REDIS_REPLY_INTEGER ? reply->integer : 0;
    freeReplyObject(reply);
    return ARCHIVE_DONE;
}

/* Nothing of the bucket in flight: what confirm or release may still end, and the FAILED
 * orders that MySQL has not recorded yet. */
static int archive_quiet(struct archive_run *r, int b)
{
    static const struct {
        const char *cmd;
        enum keys_kind kind;
        const char *what;
    } counts[] = {
        { "ZCARD", KEYS_RESERVED, "reservations not yet in Kafka" },
        { "SCARD", KEYS_QUEUED, "orders queued in Kafka, not yet claimed" },
        { "SCARD", KEYS_CLAIMED, "orders claimed by a consumer, not yet final" },
        { "HLEN", KEYS_XFER_OUT, "stock transfers between buckets in flight" },
        { "XLEN", KEYS_FAILED, "FAILED orders not yet recorded in MySQL (the failed stream)" },
    };
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        int64_t n;
        if (archive_count(r, counts[i].cmd, r->keys[b].name[counts[i].kind], &n) != ARCHIVE_DONE)
            return ARCHIVE_ERROR;
        if (n > 0)
            return archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 " has %" PRId64 " %s%s%s", r->id, n,
                                counts[i].what, r->buckets.count > 1 ? " in bucket " : "",
                                r->buckets.count > 1 ? r->buckets.tag[b] : "");
    }
    return ARCHIVE_DONE;
}

/* The orders hash, HSCAN page by page: SUCCESS, FAILED and PROCESSING counted. HSCAN may
 * return a field twice when the hash is resized meanwhile; nothing writes it here (the
 * sale is over and quiet), so none is. */
static int archive_scan(struct archive_run *r, int b, int64_t *success, int64_t *failed, int64_t *processing)
{
    char cursor[32] = "0";
    *success = *failed = *processing = 0;
    do {
        const char *argv[] = { "HSCAN", r->keys[b].name[KEYS_ORDERS], cursor, "COUNT", KEYS_SCAN_PAGE };
        redisReply *reply = archive_cmd(r, 5, argv);
        if (!reply)
            return ARCHIVE_ERROR;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING || reply->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(reply);
            return archive_fail(r, ARCHIVE_ERROR, "redis HSCAN %s: unexpected reply",
                                r->keys[b].name[KEYS_ORDERS]);
        }
        snprintf(cursor, sizeof(cursor), "%s", reply->element[0]->str);
        const redisReply *fv = reply->element[1];
        for (size_t i = 1; i < fv->elements; i += 2) {
            const char *s = fv->element[i]->type == REDIS_REPLY_STRING ? fv->element[i]->str : "";
            if (strcmp(s, "SUCCESS") == 0)
                (*success)++;
            else if (strcmp(s, "FAILED") == 0 || strcmp(s, "CANCELLED") == 0)
                (*failed)++;
            else
                (*processing)++;
        }
        freeReplyObject(reply);
    } while (strcmp(cursor, "0") != 0);
    return ARCHIVE_DONE;
}

/* Steps 1's Redis and MySQL sides (archive.h). */
static int archive_check(struct archive_run *r, const struct archive_row *row, int64_t now_ms,
                         struct archive_result *out)
{
    if (strcmp(row->status, "ENDED") != 0 && strcmp(row->status, "CANCELLED") != 0)
        return archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 " is %s: only an ENDED or CANCELLED sale "
                            "is archived (the consumer's lifecycle pass marks a sale ENDED after its end)",
                            r->id, row->status);
    if (now_ms < row->end_ms + ARCHIVE_END_GRACE_MS) {
        char end[40];
        timeparse_format(row->end_ms, end, sizeof(end));
        return archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 " ended at %s: it can be archived %d s "
                            "after its end", r->id, end, ARCHIVE_END_GRACE_MS / 1000);
    }
    int64_t success = 0, failed = 0, sold = 0;
    bool has_sold = true;
    for (int b = 0; b < r->buckets.count; b++) {
        int rc = archive_quiet(r, b);
        if (rc != ARCHIVE_DONE)
            return rc;
        const char *argv[] = { "HGET", r->keys[b].name[KEYS_ACTIVITY], "sold" };
        redisReply *reply = archive_cmd(r, 3, argv);
        if (!reply)
            return ARCHIVE_ERROR;
        if (reply->type == REDIS_REPLY_STRING)
            sold += strtoll(reply->str, NULL, 10);
        else
            has_sold = false;
        freeReplyObject(reply);
    }
    char sql[256];
    int64_t rows = 0;
    /* A cancelled order's row stays, CANCELLED: the sold ones are the others. */
    snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM seckill_order WHERE activity_id = %" PRId64
             " AND status = 'SUCCESS'", r->id);
    if (archive_mysql_int(r, sql, &rows) != ARCHIVE_DONE)
        return ARCHIVE_ERROR;
    /* The counters first: a sale that MySQL lacks orders of is refused before its orders
     * hash is read, which takes seconds for a million. */
    if (rows != row->sold_count || (has_sold && sold != rows)) {
        char redis_says[64] = "";
        if (has_sold)
            snprintf(redis_says, sizeof(redis_says), ", Redis counts %" PRId64 " sold", sold);
        return archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 ": MySQL holds %" PRId64 " order rows "
                            "(sold_count %" PRId64 ")%s: not every order is in MySQL (seckillctl verify "
                            "%" PRId64
                            " says more)", r->id, rows, row->sold_count, redis_says, r->id);
    }
    for (int b = 0; b < r->buckets.count; b++) {
        int64_t s, f, p;
        int rc = archive_scan(r, b, &s, &f, &p);
        if (rc != ARCHIVE_DONE)
            return rc;
        if (p > 0)
            return archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 " has %" PRId64 " order(s) "
                                "PROCESSING in Redis: not every order is final", r->id, p);
        r->success[b] = s;
        success += s;
        failed += f;
    }
    if (rows != success || rows != row->sold_count || (has_sold && sold != success))
        return archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 ": MySQL holds %" PRId64 " order rows "
                            "(sold_count %" PRId64 ") but Redis has %" PRId64 " SUCCESS orders%s: not every "
                            "order is in MySQL (seckillctl verify %" PRId64 " says more)", r->id, rows,
                            row->sold_count, success, has_sold && sold != success ? " and another sold count"
                            : "", r->id);
    out->orders = rows;
    out->failed = failed;
    return ARCHIVE_DONE;
}

/* A bucketed sale's own hash (bucket 0's) also says what the whole sale had left,
 * 'saleStockLeft': reads of an archived sale look at that hash alone. */
static int archive_sale_stock(struct archive_run *r)
{
    int64_t total = 0;
    for (int b = 0; b < r->buckets.count; b++) {
        const char *argv[] = { "HGET", r->keys[b].name[KEYS_ACTIVITY], "stockLeft" };
        redisReply *reply = archive_cmd(r, 3, argv);
        if (!reply)
            return ARCHIVE_ERROR;
        if (reply->type == REDIS_REPLY_STRING)
            total += strtoll(reply->str, NULL, 10);
        freeReplyObject(reply);
    }
    char text[24];
    snprintf(text, sizeof(text), "%" PRId64, total);
    const char *argv[] = { "HSET", r->keys[0].name[KEYS_ACTIVITY], "saleStockLeft", text };
    redisReply *reply = archive_cmd(r, 4, argv);
    if (!reply)
        return ARCHIVE_ERROR;
    freeReplyObject(reply);
    return ARCHIVE_DONE;
}

/* Step 2: every bucket marked, or none. */
static int archive_mark(struct archive_run *r, int64_t now_ms, bool checked, struct archive_result *out)
{
    char now[24];
    snprintf(now, sizeof(now), "%" PRId64, now_ms);
    bool marked[BUCKET_MAX] = { false };
    int rc = ARCHIVE_DONE;
    for (int b = 0; b < r->buckets.count && rc == ARCHIVE_DONE; b++) {
        char sold[24] = "";
        if (checked)
            snprintf(sold, sizeof(sold), "%" PRId64, r->success[b]);
        const char *args[] = { "mark", now, sold };
        redisReply *reply = archive_script(r, b, 3, args);
        if (!reply) {
            rc = ARCHIVE_ERROR;
            break;
        }
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements >= 2 &&
            reply->element[0]->type == REDIS_REPLY_STRING &&
            (strcmp(reply->element[0]->str, "OK") == 0 || strcmp(reply->element[0]->str, "ARCHIVED") == 0)) {
            marked[b] = strcmp(reply->element[0]->str, "OK") == 0;
            if (b == 0 && reply->element[1]->type == REDIS_REPLY_STRING)
                out->archived_ms = strtoll(reply->element[1]->str, NULL, 10);
        } else if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
                   reply->element[1]->type == REDIS_REPLY_STRING &&
                   reply->element[2]->type == REDIS_REPLY_INTEGER) {
            rc = archive_fail(r, ARCHIVE_REFUSED, "activity %" PRId64 " changed while it was being archived "
                              "(%s: %lld)", r->id, reply->element[1]->str, reply->element[2]->integer);
        } else {
            rc = archive_fail(r, ARCHIVE_ERROR, "archive.lua: unexpected reply (is seckill.lua-dir "
                              "current?)");
        }
        freeReplyObject(reply);
    }
    if (rc == ARCHIVE_DONE && r->buckets.count > 1)
        rc = archive_sale_stock(r);
    if (rc != ARCHIVE_DONE && checked) {
        /* The sale goes on as it was: what this call marked is unmarked. */
        char keep[256];
        snprintf(keep, sizeof(keep), "%s", r->err);
        for (int b = 0; b < r->buckets.count; b++) {
            const char *args[] = { "unmark" };
            redisReply *reply = marked[b] ? archive_script(r, b, 1, args) : NULL;
            if (reply)
                freeReplyObject(reply);
        }
        snprintf(r->err, r->errlen, "%s", keep);
    }
    return rc;
}

/* Steps 3 to 5. */
static int archive_finish(struct archive_run *r, bool recorded, struct archive_result *out)
{
    char sql[320];
    if (!recorded) {
        snprintf(sql, sizeof(sql),
                 "UPDATE seckill_activity SET archived_at = " SQLTIME_AT " WHERE id = %" PRId64
                 " AND archived_at IS NULL", out->archived_ms, r->id);
        if (mysql_query(r->db, sql) != 0)
            return archive_fail(r, ARCHIVE_ERROR, "mysql: %s (Redis refuses the sale's writes already: "
                                "archive it again to finish)", mysql_error(r->db));
    }
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, r->id);
    const char *srem[] = { "SREM", KEYS_ACTIVITIES, id };
    redisReply *reply = archive_cmd(r, 3, srem);
    if (!reply)
        return ARCHIVE_ERROR;
    freeReplyObject(reply);
    for (int b = 0; b < r->buckets.count; b++) {
        const char *args[] = { "drop" };
        if (!(reply = archive_script(r, b, 1, args)))
            return ARCHIVE_ERROR;
        int64_t n = reply->type == REDIS_REPLY_INTEGER ? reply->integer : -2;
        freeReplyObject(reply);
        if (n < 0)
            return archive_fail(r, ARCHIVE_ERROR, "archive.lua drop on %s: the bucket is not archived",
                                r->keys[b].name[KEYS_ACTIVITY]);
        out->keys_removed += n;
    }
    return ARCHIVE_DONE;
}

int archive_activity(MYSQL *db, struct redisroute *redis, const struct luascript_set *scripts,
                     const struct config *cfg, int64_t id, int64_t now_ms, struct archive_result *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    struct archive_run r = { .db = db, .redis = redis, .scripts = scripts, .cfg = cfg, .id = id,
                             .err = err, .errlen = errlen };
    err[0] = '\0';
    struct archive_row row;
    int rc = archive_load(&r, &row);
    if (rc != ARCHIVE_DONE)
        return rc;
    if (bucket_list_parse(row.bucket_tags, id, &r.buckets) != 0)
        return archive_fail(&r, ARCHIVE_ERROR, "activity %" PRId64 ": bucket_tags '%s' is not a bucket list",
                            id, row.bucket_tags);
    out->nbuckets = r.buckets.count;
    for (int b = 0; b < r.buckets.count; b++)
        if (keys_set_build_tag(&r.keys[b], cfg, id, r.buckets.tag[b]) != 0)
            return archive_fail(&r, ARCHIVE_ERROR, "activity %" PRId64 ": a configured key prefix makes its "
                                "keys too long", id);
    /* Once MySQL records the archive, deletion may have begun: the checks would find keys
     * missing. The marks stand since, so the rest is only finished. */
    out->already = row.archived;
    if (!row.archived && (rc = archive_check(&r, &row, now_ms, out)) != ARCHIVE_DONE)
        return rc;
    if ((rc = archive_mark(&r, now_ms, !row.archived, out)) != ARCHIVE_DONE)
        return rc;
    if (row.archived)
        out->archived_ms = row.archived_ms;
    return archive_finish(&r, row.archived, out);
}
