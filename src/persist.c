#include "persist.h"

#include <errmsg.h>
#include <inttypes.h>
#include <mysqld_error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

/* ---- a growing SQL text ---------------------------------------------------------- */

/* Ownership: data is the builder's, freed by sql_free. A failed allocation sticks in
 * failed, so a statement is built without checking each append and checked once. */
struct sql {
    char *data;
    size_t len;
    size_t cap;
    int failed;
};

static void sql_free(struct sql *s)
{
    free(s->data);
    memset(s, 0, sizeof(*s));
}

static int sql_reserve(struct sql *s, size_t extra)
{
    if (s->failed)
        return -1;
    if (s->len + extra + 1 <= s->cap)
        return 0;
    size_t n = s->cap ? s->cap : 4096;
    while (n < s->len + extra + 1)
        n *= 2;
    char *p = realloc(s->data, n);
    if (!p) {
        s->failed = 1;
        return -1;
    }
    s->data = p;
    s->cap = n;
    return 0;
}

static void sql_printf(struct sql *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sql_printf(struct sql *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sql_reserve(s, (size_t)n) != 0) {
        s->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* Order numbers are validated digits and a dash already; escaping anyway keeps this
 * module safe whatever a later caller passes. */
static void sql_quoted(struct sql *s, MYSQL *db, const char *str)
{
    size_t len = strlen(str);
    if (sql_reserve(s, len * 2 + 2) != 0)
        return;
    s->data[s->len++] = '\'';
    s->len += mysql_real_escape_string(db, s->data + s->len, str, (unsigned long)len);
    s->data[s->len++] = '\'';
    s->data[s->len] = '\0';
}

static void sql_reset(struct sql *s)
{
    s->len = 0;
    if (s->data)
        s->data[0] = '\0';
}

/* ---- statements ------------------------------------------------------------------ */

struct tx {
    MYSQL *db;
    struct sql sql;
    char *err;
    size_t errlen;
};

static int tx_run(struct tx *tx, const char *what, uint64_t *affected)
{
    if (tx->sql.failed) {
        snprintf(tx->err, tx->errlen, "%s: statement not built (out of memory, or a time "
                 "beyond DATETIME)", what);
        return -1;
    }
    if (mysql_real_query(tx->db, tx->sql.data, (unsigned long)tx->sql.len) != 0) {
        snprintf(tx->err, tx->errlen, "%s: %s (%u)", what, mysql_error(tx->db),
                 mysql_errno(tx->db));
        return -1;
    }
    if (affected)
        *affected = (uint64_t)mysql_affected_rows(tx->db);
    return 0;
}

static int tx_simple(struct tx *tx, const char *stmt)
{
    sql_reset(&tx->sql);
    sql_printf(&tx->sql, "%s", stmt);
    return tx_run(tx, stmt, NULL);
}

/* The orders of one run share activity and coupon and are sorted by order number;
 * each points into the caller's array, whose base gives its in_db slot. */
struct run {
    const struct orderevent *base;
    const struct orderevent *const *orders;
    size_t count;
    int64_t activity_id;
    int64_t coupon_id;
};

static const struct orderevent *run_order(const struct run *r, size_t i)
{
    return r->orders[i];
}

static size_t run_slot(const struct run *r, size_t i)
{
    return (size_t)(r->orders[i] - r->base);
}

/* A UTC literal formatted here: FROM_UNIXTIME stops at 2038 on MariaDB 10.11. */
static void sql_accepted_at(struct sql *s, int64_t created_ms)
{
    time_t secs = (time_t)(created_ms / 1000);
    struct tm tm;
    if (created_ms < 0 || created_ms > PERSIST_MAX_ACCEPTED_MS || !gmtime_r(&secs, &tm)) {
        s->failed = 1;
        return;
    }
    sql_printf(s, "'%04d-%02d-%02d %02d:%02d:%02d.%03d'", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(created_ms % 1000));
}

static int insert_orders(struct tx *tx, const struct run *r, uint64_t *added)
{
    *added = 0;
    for (size_t start = 0; start < r->count; start += PERSIST_ROWS_PER_STATEMENT) {
        size_t end = start + PERSIST_ROWS_PER_STATEMENT;
        if (end > r->count)
            end = r->count;
        sql_reset(&tx->sql);
        sql_printf(&tx->sql, "INSERT INTO seckill_order "
                             "(order_no,user_id,activity_id,coupon_id,accepted_at) VALUES ");
        for (size_t i = start; i < end; i++) {
            const struct orderevent *ev = run_order(r, i);
            sql_printf(&tx->sql, "%s(", i > start ? "," : "");
            sql_quoted(&tx->sql, tx->db, ev->order_no);
            sql_printf(&tx->sql, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", ev->user_id,
                       r->activity_id, r->coupon_id);
            sql_accepted_at(&tx->sql, ev->created_ms);
            sql_printf(&tx->sql, ")");
        }
        /* No CLIENT_FOUND_ROWS: a duplicate counts 0, a new row 1. */
        sql_printf(&tx->sql, " ON DUPLICATE KEY UPDATE id=id");
        uint64_t n;
        if (tx_run(tx, "insert seckill_order", &n) != 0)
            return -1;
        *added += n;
    }
    return 0;
}

static int run_find(const struct run *r, const char *order_no, size_t *pos)
{
    size_t lo = 0, hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(run_order(r, mid)->order_no, order_no);
        if (c == 0) {
            *pos = mid;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Fewer rows added than orders: a replay, or an order refused by UNIQUE(user, activity).
 * Asks which order numbers have their row, so that only those are shown as SUCCESS. */
static int mark_present(struct tx *tx, const struct run *r, unsigned char *in_db)
{
    for (size_t start = 0; start < r->count; start += PERSIST_ROWS_PER_STATEMENT) {
        size_t end = start + PERSIST_ROWS_PER_STATEMENT;
        if (end > r->count)
            end = r->count;
        sql_reset(&tx->sql);
        sql_printf(&tx->sql, "SELECT order_no FROM seckill_order WHERE order_no IN (");
        for (size_t i = start; i < end; i++) {
            if (i > start)
                sql_printf(&tx->sql, ",");
            sql_quoted(&tx->sql, tx->db, run_order(r, i)->order_no);
        }
        sql_printf(&tx->sql, ")");
        if (tx_run(tx, "select seckill_order", NULL) != 0)
            return -1;
        MYSQL_RES *res = mysql_store_result(tx->db);
        if (!res) {
            snprintf(tx->err, tx->errlen, "select seckill_order: %s (%u)", mysql_error(tx->db),
                     mysql_errno(tx->db));
            return -1;
        }
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res)) != NULL) {
            size_t pos;
            if (row[0] && run_find(r, row[0], &pos) == 0)
                in_db[run_slot(r, pos)] = 1;
        }
        mysql_free_result(res);
    }
    return 0;
}

static int insert_user_coupons(struct tx *tx, const struct run *r, const unsigned char *in_db,
                               uint64_t *added)
{
    *added = 0;
    size_t i = 0;
    while (i < r->count) {
        sql_reset(&tx->sql);
        sql_printf(&tx->sql,
                   "INSERT INTO user_coupon (user_id,coupon_id,source_ref) VALUES ");
        size_t rows = 0;
        for (; i < r->count && rows < PERSIST_ROWS_PER_STATEMENT; i++) {
            if (!in_db[run_slot(r, i)])
                continue;
            const struct orderevent *ev = run_order(r, i);
            sql_printf(&tx->sql, "%s(%" PRId64 ",%" PRId64 ",", rows ? "," : "", ev->user_id,
                       r->coupon_id);
            sql_quoted(&tx->sql, tx->db, ev->order_no);
            sql_printf(&tx->sql, ")");
            rows++;
        }
        if (rows == 0)
            break;
        sql_printf(&tx->sql, " ON DUPLICATE KEY UPDATE id=id");
        uint64_t n;
        if (tx_run(tx, "insert user_coupon", &n) != 0)
            return -1;
        *added += n;
    }
    return 0;
}

/* The ids of the user coupons of this run, new or replayed, for the Redis record. */
static int find_user_coupons(struct tx *tx, const struct run *r, const unsigned char *in_db,
                             struct persist_coupon *coupons)
{
    size_t i = 0;
    while (i < r->count) {
        sql_reset(&tx->sql);
        sql_printf(&tx->sql, "SELECT id, source_ref FROM user_coupon WHERE source_ref IN (");
        size_t rows = 0;
        for (; i < r->count && rows < PERSIST_ROWS_PER_STATEMENT; i++) {
            if (!in_db[run_slot(r, i)])
                continue;
            if (rows++)
                sql_printf(&tx->sql, ",");
            sql_quoted(&tx->sql, tx->db, run_order(r, i)->order_no);
        }
        if (rows == 0)
            break;
        sql_printf(&tx->sql, ")");
        if (tx_run(tx, "select user_coupon", NULL) != 0)
            return -1;
        MYSQL_RES *res = mysql_store_result(tx->db);
        if (!res) {
            snprintf(tx->err, tx->errlen, "select user_coupon: %s (%u)", mysql_error(tx->db),
                     mysql_errno(tx->db));
            return -1;
        }
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res)) != NULL) {
            size_t pos;
            if (row[0] && row[1] && run_find(r, row[1], &pos) == 0) {
                coupons[run_slot(r, pos)].id = strtoll(row[0], NULL, 10);
                coupons[run_slot(r, pos)].coupon_id = r->coupon_id;
            }
        }
        mysql_free_result(res);
    }
    return 0;
}

static int bump_counters(struct tx *tx, const struct run *r, uint64_t orders_added,
                         uint64_t coupons_added)
{
    uint64_t n;
    if (orders_added > 0) {
        sql_reset(&tx->sql);
        sql_printf(&tx->sql,
                   "UPDATE seckill_activity SET sold_count = sold_count + %" PRIu64
                   " WHERE id = %" PRId64,
                   orders_added, r->activity_id);
        if (tx_run(tx, "update seckill_activity", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("activity %" PRId64 " has no seckill_activity row: sold_count not kept",
                     r->activity_id);
    }
    if (coupons_added > 0) {
        sql_reset(&tx->sql);
        sql_printf(&tx->sql,
                   "UPDATE coupon SET issued_count = issued_count + %" PRIu64
                   " WHERE id = %" PRId64,
                   coupons_added, r->coupon_id);
        if (tx_run(tx, "update coupon", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("coupon %" PRId64 " (activity %" PRId64 ") has no coupon row: "
                     "issued_count not kept", r->coupon_id, r->activity_id);
    }
    return 0;
}

static int persist_run(struct tx *tx, const struct run *r, unsigned char *in_db,
                       struct persist_coupon *coupons, struct persist_stats *stats)
{
    uint64_t orders_added, coupons_added;
    if (insert_orders(tx, r, &orders_added) != 0)
        return -1;
    if (orders_added == r->count) {
        for (size_t i = 0; i < r->count; i++)
            in_db[run_slot(r, i)] = 1;
    } else if (mark_present(tx, r, in_db) != 0) {
        return -1;
    }
    for (size_t i = 0; i < r->count; i++) {
        if (in_db[run_slot(r, i)])
            continue;
        const struct orderevent *ev = run_order(r, i);
        LOG_ERROR("order %s: user %" PRId64 " already holds another order of activity %" PRId64
                  " in MySQL; not persisted", ev->order_no, ev->user_id, r->activity_id);
        stats->conflicts++;
    }
    coupons_added = 0;
    if (r->coupon_id == 0)
        LOG_WARN("activity %" PRId64 " has no coupon: no user coupon issued", r->activity_id);
    else if (insert_user_coupons(tx, r, in_db, &coupons_added) != 0 ||
             find_user_coupons(tx, r, in_db, coupons) != 0)
        return -1;
    if (bump_counters(tx, r, orders_added, coupons_added) != 0)
        return -1;
    stats->orders_added += orders_added;
    stats->coupons_added += coupons_added;
    return 0;
}

/* ---- the batch ------------------------------------------------------------------- */

static int order_cmp(const void *pa, const void *pb)
{
    const struct orderevent *a = *(const struct orderevent *const *)pa;
    const struct orderevent *b = *(const struct orderevent *const *)pb;
    if (a->activity_id != b->activity_id)
        return a->activity_id < b->activity_id ? -1 : 1;
    if (a->coupon_id != b->coupon_id)
        return a->coupon_id < b->coupon_id ? -1 : 1;
    return strcmp(a->order_no, b->order_no);
}

/* An order without a coupon id (an activity warmed without one) takes its activity's. */
static int resolve_coupon(struct tx *tx, int64_t activity_id, int64_t *coupon_id)
{
    sql_reset(&tx->sql);
    sql_printf(&tx->sql, "SELECT coupon_id FROM seckill_activity WHERE id = %" PRId64,
               activity_id);
    if (tx_run(tx, "select seckill_activity", NULL) != 0)
        return -1;
    MYSQL_RES *res = mysql_store_result(tx->db);
    if (!res) {
        snprintf(tx->err, tx->errlen, "select seckill_activity: %s (%u)", mysql_error(tx->db),
                 mysql_errno(tx->db));
        return -1;
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    if (row && row[0])
        *coupon_id = strtoll(row[0], NULL, 10);
    mysql_free_result(res);
    return 0;
}

static int persist_all(struct tx *tx, const struct orderevent *base,
                       const struct orderevent *const *sorted, size_t count,
                       unsigned char *in_db, struct persist_coupon *coupons,
                       struct persist_stats *stats)
{
    if (tx_simple(tx, "START TRANSACTION") != 0)
        return -1;
    /* Activities in id order: two consumers lock their counter rows in the same order. */
    for (size_t start = 0; start < count;) {
        const struct orderevent *first = sorted[start];
        size_t end = start + 1;
        while (end < count && sorted[end]->activity_id == first->activity_id &&
               sorted[end]->coupon_id == first->coupon_id)
            end++;
        struct run r = { base, sorted + start, end - start, first->activity_id,
                         first->coupon_id };
        if (r.coupon_id == 0 && resolve_coupon(tx, r.activity_id, &r.coupon_id) != 0)
            return -1;
        if (persist_run(tx, &r, in_db, coupons, stats) != 0)
            return -1;
        start = end;
    }
    return tx_simple(tx, "COMMIT");
}

int persist_connection_lost(unsigned int code)
{
    switch (code) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_COMMANDS_OUT_OF_SYNC:
    case CR_SERVER_LOST_EXTENDED:
    case ER_SERVER_SHUTDOWN:
    case ER_CONNECTION_KILLED:
        return 1;
    default:
        return 0;
    }
}

enum persist_result persist_batch(MYSQL *db, const struct orderevent *orders, size_t count,
                                  unsigned char *in_db, struct persist_coupon *coupons,
                                  struct persist_stats *stats, char *err, size_t errlen)
{
    memset(stats, 0, sizeof(*stats));
    memset(in_db, 0, count);
    memset(coupons, 0, count * sizeof(*coupons));
    if (count == 0)
        return PERSIST_OK;
    const struct orderevent **sorted = malloc(count * sizeof(*sorted));
    if (!sorted) {
        snprintf(err, errlen, "out of memory");
        return PERSIST_FAILED;
    }
    for (size_t i = 0; i < count; i++)
        sorted[i] = &orders[i];
    qsort(sorted, count, sizeof(*sorted), order_cmp);

    struct tx tx = { .db = db, .err = err, .errlen = errlen };
    int rc = persist_all(&tx, orders, sorted, count, in_db, coupons, stats);
    enum persist_result result = PERSIST_OK;
    if (rc != 0) {
        unsigned int code = mysql_errno(db);
        result = PERSIST_FAILED;
        /* A session that cannot even roll back is beyond use. */
        if (persist_connection_lost(code) || mysql_query(db, "ROLLBACK") != 0)
            result = PERSIST_DISCONNECTED;
        memset(stats, 0, sizeof(*stats));
        memset(in_db, 0, count);
        memset(coupons, 0, count * sizeof(*coupons));
    }
    sql_free(&tx.sql);
    free(sorted);
    return result;
}
