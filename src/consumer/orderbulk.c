#include "consumer/orderbulk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "consumer/sqltx.h"

static const char ORDERS_SQL[] =
    "INSERT INTO seckill_order (order_no,user_id,activity_id,user_slot,coupon_id,accepted_at) "
    "VALUES (?,?,?,?,?,?) ON DUPLICATE KEY UPDATE id=id";
static const char COUPONS_SQL[] =
    "INSERT INTO user_coupon (user_id,coupon_id,source_ref) VALUES (?,?,?) "
    "ON DUPLICATE KEY UPDATE id=id";

int orderbulk_datetime(int64_t ms, MYSQL_TIME *t)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (ms < 0 || ms > SQLTEXT_MAX_DATETIME_MS || !gmtime_r(&secs, &tm))
        return -1;
    memset(t, 0, sizeof(*t));
    t->year = (unsigned int)tm.tm_year + 1900;
    t->month = (unsigned int)tm.tm_mon + 1;
    t->day = (unsigned int)tm.tm_mday;
    t->hour = (unsigned int)tm.tm_hour;
    t->minute = (unsigned int)tm.tm_min;
    t->second = (unsigned int)tm.tm_sec;
    t->second_part = (unsigned long)(ms % 1000) * 1000;
    t->time_type = MYSQL_TIMESTAMP_DATETIME;
    return 0;
}

/* Order numbers are validated and NUL-terminated within ORDERNO_LEN; copying them keeps
 * the bound rows independent of the batch's layout. */
static unsigned long copy_no(char *dst, const char *src)
{
    size_t n = strnlen(src, ORDERNO_LEN - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
    return (unsigned long)n;
}

int orderbulk_order_rows(const struct orderrun *r, size_t start, size_t end,
                         struct orderbulk_order *rows)
{
    for (size_t i = start; i < end; i++) {
        const struct orderevent *ev = &r->orders[i];
        struct orderbulk_order *row = &rows[i - start];
        row->order_no_len = copy_no(row->order_no, ev->order_no);
        row->user_id = ev->user_id;
        row->activity_id = r->activity_id;
        row->user_slot = ev->slot > 1 ? ev->slot : 1;
        row->coupon_id = r->coupon_id;
        if (orderbulk_datetime(ev->created_ms, &row->accepted_at) != 0)
            return -1;
    }
    return 0;
}

size_t orderbulk_coupon_rows(const struct orderrun *r, size_t *next,
                             struct orderbulk_coupon *rows)
{
    size_t n = 0, i = *next;
    for (; i < r->count && n < SQLTX_ROWS_PER_STATEMENT; i++) {
        if (!r->in_db[i])
            continue;
        struct orderbulk_coupon *row = &rows[n++];
        row->user_id = r->orders[i].user_id;
        row->coupon_id = r->coupon_id;
        row->source_ref_len = copy_no(row->source_ref, r->orders[i].order_no);
    }
    *next = i;
    return n;
}

static void bind_int(MYSQL_BIND *b, int64_t *v)
{
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
}

static void bind_text(MYSQL_BIND *b, char *v, unsigned long *len)
{
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = v;
    b->buffer_length = ORDERNO_LEN;
    b->length = len;
}

static int stmt_failed(struct sqltx *tx, MYSQL_STMT *stmt, const char *what)
{
    tx->errcode = mysql_stmt_errno(stmt);
    snprintf(tx->err, tx->errlen, "%s: %s (%u)", what, mysql_stmt_error(stmt), tx->errcode);
    return -1;
}

static void close_all(struct orderbulk *b)
{
    if (b->orders)
        mysql_stmt_close(b->orders);
    if (b->coupons)
        mysql_stmt_close(b->coupons);
    b->orders = b->coupons = NULL;
}

/* A statement belongs to its session: after a reconnect (another MYSQL, or the same
 * address with another server thread) the old ones are dropped. */
static int prepared(struct sqltx *tx, MYSQL_STMT **stmt, const char *sql, size_t len,
                    const char *what)
{
    struct orderbulk *b = tx->bulk;
    unsigned long thread = mysql_thread_id(tx->db);
    if (b->db != tx->db || b->thread_id != thread) {
        close_all(b);
        b->db = tx->db;
        b->thread_id = thread;
    }
    if (*stmt)
        return 0;
    MYSQL_STMT *s = mysql_stmt_init(tx->db);
    if (!s) {
        tx->errcode = mysql_errno(tx->db);
        snprintf(tx->err, tx->errlen, "%s: out of memory", what);
        return -1;
    }
    if (mysql_stmt_prepare(s, sql, (unsigned long)len) != 0) {
        stmt_failed(tx, s, what);
        mysql_stmt_close(s);
        return -1;
    }
    *stmt = s;
    return 0;
}

static int reserve(void **rows, size_t *cap, size_t want, size_t size)
{
    if (*cap >= want)
        return 0;
    void *p = realloc(*rows, want * size);
    if (!p)
        return -1;
    *rows = p;
    *cap = want;
    return 0;
}

/* A statement that failed is not trusted again: the next use prepares a new one. */
static int execute(struct sqltx *tx, MYSQL_STMT **stmt, MYSQL_BIND *binds, size_t size,
                   size_t rows, const char *what, uint64_t *added)
{
    unsigned int n = (unsigned int)rows;
    size_t row_size = size;
    MYSQL_STMT *s = *stmt;
    if (mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &n) != 0 ||
        mysql_stmt_attr_set(s, STMT_ATTR_ROW_SIZE, &row_size) != 0 ||
        mysql_stmt_bind_param(s, binds) != 0 || mysql_stmt_execute(s) != 0) {
        stmt_failed(tx, s, what);
        mysql_stmt_close(s);
        *stmt = NULL;
        return -1;
    }
    *added += (uint64_t)mysql_stmt_affected_rows(s);
    return 0;
}

static size_t rows_wanted(size_t count)
{
    return count < SQLTX_ROWS_PER_STATEMENT ? count : SQLTX_ROWS_PER_STATEMENT;
}

static int no_memory(struct sqltx *tx, const char *what)
{
    snprintf(tx->err, tx->errlen, "%s: out of memory", what);
    return -1;
}

int orderbulk_insert_orders(struct sqltx *tx, const struct orderrun *r, uint64_t *added)
{
    static const char what[] = "insert seckill_order";
    struct orderbulk *b = tx->bulk;
    *added = 0;
    if (r->count == 0)
        return 0;
    if (reserve((void **)&b->order_rows, &b->order_cap, rows_wanted(r->count),
                sizeof(*b->order_rows)) != 0)
        return no_memory(tx, what);
    if (prepared(tx, &b->orders, ORDERS_SQL, sizeof(ORDERS_SQL) - 1, what) != 0)
        return -1;
    struct orderbulk_order *row = b->order_rows;
    MYSQL_BIND binds[6];
    memset(binds, 0, sizeof(binds));
    bind_text(&binds[0], row->order_no, &row->order_no_len);
    bind_int(&binds[1], &row->user_id);
    bind_int(&binds[2], &row->activity_id);
    bind_int(&binds[3], &row->user_slot);
    bind_int(&binds[4], &row->coupon_id);
    binds[5].buffer_type = MYSQL_TYPE_DATETIME;
    binds[5].buffer = &row->accepted_at;
    for (size_t start = 0; start < r->count; start += SQLTX_ROWS_PER_STATEMENT) {
        size_t end = start + rows_wanted(r->count - start);
        if (orderbulk_order_rows(r, start, end, b->order_rows) != 0) {
            snprintf(tx->err, tx->errlen, "%s: statement not built (out of memory, or a time "
                     "beyond DATETIME)", what);
            return -1;
        }
        if (execute(tx, &b->orders, binds, sizeof(*row), end - start, what, added) != 0)
            return -1;
    }
    return 0;
}

int orderbulk_insert_coupons(struct sqltx *tx, const struct orderrun *r, uint64_t *added)
{
    static const char what[] = "insert user_coupon";
    struct orderbulk *b = tx->bulk;
    *added = 0;
    if (r->count == 0)
        return 0;
    if (reserve((void **)&b->coupon_rows, &b->coupon_cap, rows_wanted(r->count),
                sizeof(*b->coupon_rows)) != 0)
        return no_memory(tx, what);
    struct orderbulk_coupon *row = b->coupon_rows;
    MYSQL_BIND binds[3];
    memset(binds, 0, sizeof(binds));
    bind_int(&binds[0], &row->user_id);
    bind_int(&binds[1], &row->coupon_id);
    bind_text(&binds[2], row->source_ref, &row->source_ref_len);
    size_t next = 0, n;
    while ((n = orderbulk_coupon_rows(r, &next, b->coupon_rows)) > 0) {
        if (prepared(tx, &b->coupons, COUPONS_SQL, sizeof(COUPONS_SQL) - 1, what) != 0 ||
            execute(tx, &b->coupons, binds, sizeof(*row), n, what, added) != 0)
            return -1;
    }
    return 0;
}

void orderbulk_free(struct orderbulk *b)
{
    close_all(b);
    free(b->order_rows);
    free(b->coupon_rows);
    memset(b, 0, sizeof(*b));
}
