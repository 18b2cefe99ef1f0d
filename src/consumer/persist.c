#include "consumer/persist.h"

#include <errmsg.h>
#include <inttypes.h>
#include <mysqld_error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

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

/* Counter increments gathered over the whole transaction and applied at its end, one
 * UPDATE per row in id order: two consumers then lock counter rows in the same order
 * and cannot deadlock on them. Appended unsorted; sorted and summed by deltas_coalesce. */
struct delta {
    int64_t id;
    uint64_t first;    /* seckill_activity: sold_count; coupon: issued_count */
    uint64_t second;   /* coupon: used_count */
};

struct deltas {
    struct delta *v;
    size_t count;
    size_t cap;
};

struct tx {
    MYSQL *db;
    struct sql sql;
    char *err;
    size_t errlen;
    struct deltas activities;
    struct deltas coupons;
};

static int deltas_add(struct tx *tx, struct deltas *d, int64_t id, uint64_t first,
                      uint64_t second)
{
    if (first == 0 && second == 0)
        return 0;
    if (d->count == d->cap) {
        size_t n = d->cap ? d->cap * 2 : 16;
        struct delta *v = realloc(d->v, n * sizeof(*v));
        if (!v) {
            snprintf(tx->err, tx->errlen, "out of memory");
            return -1;
        }
        d->v = v;
        d->cap = n;
    }
    d->v[d->count++] = (struct delta){ id, first, second };
    return 0;
}

static int delta_cmp(const void *pa, const void *pb)
{
    const struct delta *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

static void deltas_coalesce(struct deltas *d)
{
    if (d->count < 2)
        return;
    qsort(d->v, d->count, sizeof(*d->v), delta_cmp);
    size_t kept = 1;
    for (size_t i = 1; i < d->count; i++) {
        if (d->v[i].id == d->v[kept - 1].id) {
            d->v[kept - 1].first += d->v[i].first;
            d->v[kept - 1].second += d->v[i].second;
        } else {
            d->v[kept++] = d->v[i];
        }
    }
    d->count = kept;
}

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

/* Runs the statement built in tx->sql and returns its rows (caller frees), or NULL with
 * tx->err set. */
static MYSQL_RES *tx_select(struct tx *tx, const char *what)
{
    if (tx_run(tx, what, NULL) != 0)
        return NULL;
    MYSQL_RES *res = mysql_store_result(tx->db);
    if (!res)
        snprintf(tx->err, tx->errlen, "%s: %s (%u)", what, mysql_error(tx->db), mysql_errno(tx->db));
    return res;
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
static void sql_datetime(struct sql *s, int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (ms < 0 || ms > PERSIST_MAX_ACCEPTED_MS || !gmtime_r(&secs, &tm)) {
        s->failed = 1;
        return;
    }
    sql_printf(s, "'%04d-%02d-%02d %02d:%02d:%02d.%03d'", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* Cents as a DECIMAL(15,2) literal: 1234 -> 12.34. */
static void sql_cents(struct sql *s, int64_t cents)
{
    if (cents < 0 || cents > PERSIST_MAX_CENTS) {
        s->failed = 1;
        return;
    }
    sql_printf(s, "%" PRId64 ".%02" PRId64, cents / 100, cents % 100);
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
            sql_datetime(&tx->sql, ev->created_ms);
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
        MYSQL_RES *res = tx_select(tx, "select seckill_order");
        if (!res)
            return -1;
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
        MYSQL_RES *res = tx_select(tx, "select user_coupon");
        if (!res)
            return -1;
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

/* The counters, last: activities then coupons, each in id order. */
static int apply_counters(struct tx *tx)
{
    uint64_t n;
    deltas_coalesce(&tx->activities);
    deltas_coalesce(&tx->coupons);
    for (size_t i = 0; i < tx->activities.count; i++) {
        const struct delta *d = &tx->activities.v[i];
        sql_reset(&tx->sql);
        sql_printf(&tx->sql,
                   "UPDATE seckill_activity SET sold_count = sold_count + %" PRIu64
                   " WHERE id = %" PRId64,
                   d->first, d->id);
        if (tx_run(tx, "update seckill_activity", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("activity %" PRId64 " has no seckill_activity row: sold_count not kept",
                     d->id);
    }
    for (size_t i = 0; i < tx->coupons.count; i++) {
        const struct delta *d = &tx->coupons.v[i];
        sql_reset(&tx->sql);
        sql_printf(&tx->sql,
                   "UPDATE coupon SET issued_count = issued_count + %" PRIu64
                   ", used_count = used_count + %" PRIu64 " WHERE id = %" PRId64,
                   d->first, d->second, d->id);
        if (tx_run(tx, "update coupon", &n) != 0)
            return -1;
        if (n == 0)
            LOG_WARN("coupon %" PRId64 " has no coupon row: issued_count / used_count not kept",
                     d->id);
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
    if (deltas_add(tx, &tx->activities, r->activity_id, orders_added, 0) != 0 ||
        deltas_add(tx, &tx->coupons, r->coupon_id, coupons_added, 0) != 0)
        return -1;
    stats->orders_added += orders_added;
    stats->coupons_added += coupons_added;
    return 0;
}

/* ---- coupon.used events ----------------------------------------------------------- */

/* A user coupon row as the uses of this batch find it, locked (FOR UPDATE) until the
 * COMMIT, and updated here as each use is applied so that a repeat later in the same
 * batch sees it USED. */
struct ucrow {
    int64_t id;
    int64_t user_id;
    int64_t coupon_id;
    char status[USERCOUPON_STATUS_LEN];
    char order_ref[USERCOUPON_REF_LEN];   /* "" when NULL */
};

static int ucrow_cmp(const void *pa, const void *pb)
{
    const struct ucrow *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

static struct ucrow *ucrow_find(struct ucrow *rows, size_t count, int64_t id)
{
    struct ucrow key = { .id = id };
    return bsearch(&key, rows, count, sizeof(*rows), ucrow_cmp);
}

static int id_cmp(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Reads and locks the user coupons the uses name, in id order (as InnoDB walks the
 * primary key), into rows (sorted by id). Ids that have no row are simply absent. */
static int lock_user_coupons(struct tx *tx, const struct redeemevent *uses, size_t count,
                             struct ucrow *rows, size_t *row_count)
{
    *row_count = 0;
    int64_t *ids = malloc(count * sizeof(*ids));
    if (!ids) {
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        ids[i] = uses[i].user_coupon_id;
    qsort(ids, count, sizeof(*ids), id_cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < count; i++)
        if (distinct == 0 || ids[i] != ids[distinct - 1])
            ids[distinct++] = ids[i];
    int rc = 0;
    for (size_t start = 0; start < distinct && rc == 0; start += PERSIST_ROWS_PER_STATEMENT) {
        size_t end = start + PERSIST_ROWS_PER_STATEMENT;
        if (end > distinct)
            end = distinct;
        sql_reset(&tx->sql);
        sql_printf(&tx->sql, "SELECT id, user_id, coupon_id, status, order_ref FROM user_coupon "
                             "WHERE id IN (");
        for (size_t i = start; i < end; i++)
            sql_printf(&tx->sql, "%s%" PRId64, i > start ? "," : "", ids[i]);
        sql_printf(&tx->sql, ") ORDER BY id FOR UPDATE");
        MYSQL_RES *res = tx_select(tx, "select user_coupon for update");
        if (!res) {
            rc = -1;
            break;
        }
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res)) != NULL && *row_count < count) {
            struct ucrow *u = &rows[*row_count];
            memset(u, 0, sizeof(*u));
            if (!row[0] || !row[1] || !row[2] || !row[3])
                continue;
            u->id = strtoll(row[0], NULL, 10);
            u->user_id = strtoll(row[1], NULL, 10);
            u->coupon_id = strtoll(row[2], NULL, 10);
            snprintf(u->status, sizeof(u->status), "%s", row[3]);
            snprintf(u->order_ref, sizeof(u->order_ref), "%s", row[4] ? row[4] : "");
            (*row_count)++;
        }
        mysql_free_result(res);
    }
    free(ids);
    if (rc == 0)
        qsort(rows, *row_count, sizeof(*rows), ucrow_cmp);
    return rc;
}

/* Decides, without writing, what one use means for the row as it stands now. Returns
 * PERSIST_USE_APPLIED when it is to be written. */
static enum persist_use_verdict use_judge(const struct redeemevent *ev, const struct ucrow *u,
                                          char *reason, size_t len)
{
    if (ev->discount > PERSIST_MAX_CENTS || ev->payable > PERSIST_MAX_CENTS) {
        snprintf(reason, len, "discount %" PRId64 " or payable %" PRId64 " cents does not fit "
                 "DECIMAL(15,2)", ev->discount, ev->payable);
        return PERSIST_USE_INCONSISTENT;
    }
    if (ev->used_ms > PERSIST_MAX_ACCEPTED_MS) {
        snprintf(reason, len, "usedAt %" PRId64 " is beyond the range of DATETIME", ev->used_ms);
        return PERSIST_USE_INCONSISTENT;
    }
    if (!u) {
        snprintf(reason, len, "user coupon %" PRId64 " does not exist", ev->user_coupon_id);
        return PERSIST_USE_INCONSISTENT;
    }
    if (u->user_id != ev->user_id) {
        snprintf(reason, len, "user coupon %" PRId64 " belongs to user %" PRId64 ", not %" PRId64,
                 u->id, u->user_id, ev->user_id);
        return PERSIST_USE_INCONSISTENT;
    }
    if (strcmp(u->status, "USED") == 0) {
        if (strcmp(u->order_ref, ev->order_ref) == 0)
            return PERSIST_USE_REPEATED;
        snprintf(reason, len, "user coupon %" PRId64 " is already used by order '%s', not '%s'",
                 u->id, u->order_ref, ev->order_ref);
        return PERSIST_USE_INCONSISTENT;
    }
    if (strcmp(u->status, "UNUSED") != 0) {
        snprintf(reason, len, "user coupon %" PRId64 " is %s", u->id, u->status);
        return PERSIST_USE_INCONSISTENT;
    }
    return PERSIST_USE_APPLIED;
}

/* One use: the row goes UNUSED -> USED with its order reference, discount and time. */
static int use_write_one(struct tx *tx, const struct redeemevent *ev)
{
    sql_reset(&tx->sql);
    sql_printf(&tx->sql, "UPDATE user_coupon SET status='USED', order_ref=");
    sql_quoted(&tx->sql, tx->db, ev->order_ref);
    sql_printf(&tx->sql, ", discount=");
    sql_cents(&tx->sql, ev->discount);
    sql_printf(&tx->sql, ", payable=");
    sql_cents(&tx->sql, ev->payable);
    sql_printf(&tx->sql, ", used_at=");
    sql_datetime(&tx->sql, ev->used_ms);
    sql_printf(&tx->sql, " WHERE id=%" PRId64 " AND user_id=%" PRId64 " AND status='UNUSED'",
               ev->user_coupon_id, ev->user_id);
    return tx_run(tx, "update user_coupon", NULL);
}

/* The same for many uses of distinct user coupons in one statement: the rows to change
 * joined with a derived table of their new values (portable: no VALUES constructor). */
static int use_write_many(struct tx *tx, const struct redeemevent *const *uses, size_t count)
{
    sql_reset(&tx->sql);
    sql_printf(&tx->sql, "UPDATE user_coupon uc JOIN (");
    for (size_t i = 0; i < count; i++) {
        const struct redeemevent *ev = uses[i];
        sql_printf(&tx->sql, "%sSELECT %" PRId64 " AS id, %" PRId64 " AS user_id, ",
                   i ? " UNION ALL " : "", ev->user_coupon_id, ev->user_id);
        sql_quoted(&tx->sql, tx->db, ev->order_ref);
        sql_printf(&tx->sql, " AS order_ref, ");
        sql_cents(&tx->sql, ev->discount);
        sql_printf(&tx->sql, " AS discount, ");
        sql_cents(&tx->sql, ev->payable);
        sql_printf(&tx->sql, " AS payable, ");
        sql_datetime(&tx->sql, ev->used_ms);
        sql_printf(&tx->sql, " AS used_at");
    }
    sql_printf(&tx->sql, ") v ON uc.id = v.id AND uc.user_id = v.user_id "
                         "SET uc.status='USED', uc.order_ref=v.order_ref, "
                         "uc.discount=v.discount, uc.payable=v.payable, uc.used_at=v.used_at "
                         "WHERE uc.status='UNUSED'");
    return tx_run(tx, "update user_coupon", NULL);
}

/* A derived table of one SELECT per row: fewer than for a plain multi-row INSERT. */
#define PERSIST_USES_PER_STATEMENT 1000

/* Writes the uses judged APPLIED, in statements of PERSIST_USES_PER_STATEMENT. Each row
 * is locked by this transaction and was seen UNUSED, so each must change: anything else
 * is an error (and a rollback), never a silent miss. */
static int use_write(struct tx *tx, const struct redeemevent *const *uses, size_t count)
{
    for (size_t start = 0; start < count; start += PERSIST_USES_PER_STATEMENT) {
        size_t n = count - start < PERSIST_USES_PER_STATEMENT ? count - start
                                                              : PERSIST_USES_PER_STATEMENT;
        int rc = n == 1 ? use_write_one(tx, uses[start]) : use_write_many(tx, uses + start, n);
        if (rc != 0)
            return -1;
        uint64_t changed = (uint64_t)mysql_affected_rows(tx->db);
        if (changed != n) {
            snprintf(tx->err, tx->errlen, "update user_coupon: %" PRIu64 " of %zu rows locked "
                     "as UNUSED changed", changed, n);
            return -1;
        }
    }
    return 0;
}

/* After the orders of the batch, so that a coupon issued earlier in it exists. Judged
 * one by one in arrival order against the locked rows (a repeat later in the batch sees
 * the row USED), then written together. */
static int persist_uses(struct tx *tx, const struct redeemevent *uses, size_t count,
                        struct persist_use_result *results, struct persist_stats *stats)
{
    if (count == 0)
        return 0;
    struct ucrow *rows = malloc(count * sizeof(*rows));
    const struct redeemevent **apply = malloc(count * sizeof(*apply));
    if (!rows || !apply) {
        free(rows);
        free(apply);
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    size_t row_count, applied = 0;
    int rc = lock_user_coupons(tx, uses, count, rows, &row_count);
    for (size_t i = 0; i < count && rc == 0; i++) {
        const struct redeemevent *ev = &uses[i];
        struct ucrow *u = ucrow_find(rows, row_count, ev->user_coupon_id);
        struct persist_use_result *res = &results[i];
        res->reason[0] = '\0';
        res->verdict = use_judge(ev, u, res->reason, sizeof(res->reason));
        if (res->verdict == PERSIST_USE_REPEATED) {
            stats->uses_repeated++;
        } else if (res->verdict == PERSIST_USE_INCONSISTENT) {
            stats->uses_inconsistent++;
        } else if (deltas_add(tx, &tx->coupons, u->coupon_id, 0, 1) != 0) {
            rc = -1;
        } else {
            strcpy(u->status, "USED");
            snprintf(u->order_ref, sizeof(u->order_ref), "%s", ev->order_ref);
            apply[applied++] = ev;
            stats->uses_applied++;
        }
    }
    if (rc == 0)
        rc = use_write(tx, apply, applied);
    free(rows);
    free(apply);
    return rc;
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
    MYSQL_RES *res = tx_select(tx, "select seckill_activity");
    if (!res)
        return -1;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (row && row[0])
        *coupon_id = strtoll(row[0], NULL, 10);
    mysql_free_result(res);
    return 0;
}

static int persist_all(struct tx *tx, const struct orderevent *base,
                       const struct orderevent *const *sorted, size_t count,
                       unsigned char *in_db, struct persist_coupon *coupons,
                       const struct redeemevent *uses, size_t use_count,
                       struct persist_use_result *use_results, struct persist_stats *stats)
{
    if (tx_simple(tx, "START TRANSACTION") != 0)
        return -1;
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
    if (persist_uses(tx, uses, use_count, use_results, stats) != 0 || apply_counters(tx) != 0)
        return -1;
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
                                  const struct redeemevent *uses, size_t use_count,
                                  struct persist_use_result *use_results,
                                  struct persist_stats *stats, char *err, size_t errlen)
{
    memset(stats, 0, sizeof(*stats));
    if (count > 0) {
        memset(in_db, 0, count);
        memset(coupons, 0, count * sizeof(*coupons));
    }
    if (use_count > 0)
        memset(use_results, 0, use_count * sizeof(*use_results));
    if (count == 0 && use_count == 0)
        return PERSIST_OK;
    const struct orderevent **sorted = malloc((count ? count : 1) * sizeof(*sorted));
    if (!sorted) {
        snprintf(err, errlen, "out of memory");
        return PERSIST_FAILED;
    }
    for (size_t i = 0; i < count; i++)
        sorted[i] = &orders[i];
    qsort(sorted, count, sizeof(*sorted), order_cmp);

    struct tx tx = { .db = db, .err = err, .errlen = errlen };
    int rc = persist_all(&tx, orders, sorted, count, in_db, coupons, uses, use_count,
                         use_results, stats);
    enum persist_result result = PERSIST_OK;
    if (rc != 0) {
        unsigned int code = mysql_errno(db);
        result = PERSIST_FAILED;
        /* A session that cannot even roll back is beyond use. */
        if (persist_connection_lost(code) || mysql_query(db, "ROLLBACK") != 0)
            result = PERSIST_DISCONNECTED;
        memset(stats, 0, sizeof(*stats));
        if (count > 0) {
            memset(in_db, 0, count);
            memset(coupons, 0, count * sizeof(*coupons));
        }
        if (use_count > 0)
            memset(use_results, 0, use_count * sizeof(*use_results));
    }
    sql_free(&tx.sql);
    free(tx.activities.v);
    free(tx.coupons.v);
    free(sorted);
    return result;
}
