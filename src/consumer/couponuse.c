#include "consumer/couponuse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "consumer/sqltx.h"

static int row_cmp(const void *pa, const void *pb)
{
    const struct couponuse_row *a = pa, *b = pb;
    return (a->id > b->id) - (a->id < b->id);
}

static struct couponuse_row *row_find(struct couponuse_row *rows, size_t count, int64_t id)
{
    struct couponuse_row key = { .id = id };
    return bsearch(&key, rows, count, sizeof(*rows), row_cmp);
}

static int id_cmp(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

size_t couponuse_distinct_ids(int64_t *ids, size_t count)
{
    qsort(ids, count, sizeof(*ids), id_cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < count; i++)
        if (distinct == 0 || ids[i] != ids[distinct - 1])
            ids[distinct++] = ids[i];
    return distinct;
}

void couponuse_lock_sql(struct sqltext *s, const int64_t *ids, size_t count)
{
    sqltext_reset(s);
    sqltext_printf(s, "SELECT id, user_id, coupon_id, status, order_ref, refunded_ref, event_seq "
                      "FROM user_coupon WHERE id IN (");
    for (size_t i = 0; i < count; i++)
        sqltext_printf(s, "%s%" PRId64, i ? "," : "", ids[i]);
    sqltext_printf(s, ") ORDER BY id FOR UPDATE");
}

/* Reads and locks the user coupons the events name, in id order (as InnoDB walks the
 * primary key), into rows. Ids that have no row are simply absent. The statements go
 * by ascending ids and each returns its rows ORDER BY id, so rows come out sorted by id
 * as row_find needs, without sorting them again. */
static int lock_rows(struct sqltx *tx, const struct redeemevent *events, size_t count,
                     struct couponuse_row *rows, size_t *row_count)
{
    *row_count = 0;
    int64_t *ids = malloc(count * sizeof(*ids));
    if (!ids) {
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        ids[i] = events[i].user_coupon_id;
    size_t distinct = couponuse_distinct_ids(ids, count);
    int rc = 0;
    for (size_t start = 0; start < distinct && rc == 0; start += SQLTX_ROWS_PER_STATEMENT) {
        size_t n = distinct - start < SQLTX_ROWS_PER_STATEMENT ? distinct - start
                                                                 : SQLTX_ROWS_PER_STATEMENT;
        couponuse_lock_sql(&tx->sql, ids + start, n);
        MYSQL_RES *res = sqltx_select(tx, "select user_coupon for update");
        if (!res) {
            rc = -1;
            break;
        }
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res)) != NULL && *row_count < count) {
            struct couponuse_row *u = &rows[*row_count];
            memset(u, 0, sizeof(*u));
            if (!row[0] || !row[1] || !row[2] || !row[3] || !row[6])
                continue;
            u->id = strtoll(row[0], NULL, 10);
            u->user_id = strtoll(row[1], NULL, 10);
            u->coupon_id = strtoll(row[2], NULL, 10);
            snprintf(u->status, sizeof(u->status), "%s", row[3]);
            snprintf(u->order_ref, sizeof(u->order_ref), "%s", row[4] ? row[4] : "");
            snprintf(u->refunded_ref, sizeof(u->refunded_ref), "%s", row[5] ? row[5] : "");
            u->seq = strtoll(row[6], NULL, 10);
            (*row_count)++;
        }
        mysql_free_result(res);
    }
    free(ids);
    return rc;
}

/* A use: the row must be UNUSED (or EXPIRED), or USED already by this same reference. */
static enum batch_use_verdict judge_use(const struct redeemevent *ev, const struct couponuse_row *u,
                                        char *reason, size_t len)
{
    if (strcmp(u->status, "USED") == 0) {
        if (strcmp(u->order_ref, ev->order_ref) == 0)
            return BATCH_USE_REPEATED;
        snprintf(reason, len, "user coupon %" PRId64 " is already used by order '%s', not '%s'",
                 u->id, u->order_ref, ev->order_ref);
        return BATCH_USE_INCONSISTENT;
    }
    /* EXPIRED is the lifecycle pass's mark of a coupon past its end; the gateway redeemed
     * it before the end (it refuses after), so the redemption stands. */
    if (strcmp(u->status, "UNUSED") != 0 && strcmp(u->status, "EXPIRED") != 0) {
        snprintf(reason, len, "user coupon %" PRId64 " is %s", u->id, u->status);
        return BATCH_USE_INCONSISTENT;
    }
    return BATCH_USE_APPLIED;
}

enum batch_use_verdict couponuse_judge(const struct redeemevent *ev, const struct couponuse_row *u,
                                       char *reason, size_t len)
{
    if (ev->discount > SQLTEXT_MAX_CENTS || ev->payable > SQLTEXT_MAX_CENTS) {
        snprintf(reason, len, "discount %" PRId64 " or payable %" PRId64 " cents does not fit "
                 "DECIMAL(15,2)", ev->discount, ev->payable);
        return BATCH_USE_INCONSISTENT;
    }
    if (ev->used_ms > SQLTEXT_MAX_DATETIME_MS) {
        snprintf(reason, len, "%s %" PRId64 " is beyond the range of DATETIME",
                 ev->kind == REDEEMEVENT_REFUNDED ? "refundedAt" : "usedAt", ev->used_ms);
        return BATCH_USE_INCONSISTENT;
    }
    if (!u) {
        snprintf(reason, len, "user coupon %" PRId64 " does not exist", ev->user_coupon_id);
        return BATCH_USE_INCONSISTENT;
    }
    if (u->user_id != ev->user_id) {
        snprintf(reason, len, "user coupon %" PRId64 " belongs to user %" PRId64 ", not %" PRId64,
                 u->id, u->user_id, ev->user_id);
        return BATCH_USE_INCONSISTENT;
    }
    if (ev->seq == 0)   /* a coupon.used from before seq: judged by the row alone */
        return judge_use(ev, u, reason, len);
    if (ev->seq <= u->seq)
        return BATCH_USE_REPEATED;   /* applied before: a replay */
    /* Redis numbered this event after every one MySQL has: the state it names is the
     * coupon's, even where an event between was lost (a gateway killed before its produce
     * reached Kafka, a produce that timed out yet was written): so a use on a row used by
     * another order, or a refund of a row not used, still ends where Redis is. Only a
     * revoked coupon, which Redis refuses to redeem, cannot take one. */
    if (strcmp(u->status, "REVOKED") == 0) {
        snprintf(reason, len, "user coupon %" PRId64 " is REVOKED", u->id);
        return BATCH_USE_INCONSISTENT;
    }
    return BATCH_USE_APPLIED;
}

int couponuse_step(struct couponuse_row *u, const struct redeemevent *ev, size_t index)
{
    int was_used = strcmp(u->status, "USED") == 0;
    u->changed = true;
    u->last = index;
    if (ev->seq > u->seq)
        u->seq = ev->seq;
    if (ev->kind == REDEEMEVENT_REFUNDED) {
        strcpy(u->status, "UNUSED");
        u->order_ref[0] = '\0';
        snprintf(u->refunded_ref, sizeof(u->refunded_ref), "%s", ev->order_ref);
        u->use = NULL;
        u->refund = ev;
        return -was_used;
    }
    strcpy(u->status, "USED");
    snprintf(u->order_ref, sizeof(u->order_ref), "%s", ev->order_ref);
    u->use = ev;
    return !was_used;
}

void couponuse_update_sql(struct sqltext *s, MYSQL *db, const struct couponuse_row *const *rows,
                          size_t count)
{
    sqltext_reset(s);
    sqltext_printf(s, "UPDATE user_coupon uc JOIN (");
    for (size_t i = 0; i < count; i++) {
        const struct couponuse_row *u = rows[i];
        sqltext_printf(s, "%sSELECT %" PRId64 " AS id, %" PRId64 " AS user_id, '%s' AS status, ",
                       i ? " UNION ALL " : "", u->id, u->user_id, u->use ? "USED" : "UNUSED");
        if (u->use) {
            sqltext_quoted(s, db, u->use->order_ref);
            sqltext_printf(s, " AS order_ref, ");
            sqltext_cents(s, u->use->discount);
            sqltext_printf(s, " AS discount, ");
            sqltext_cents(s, u->use->payable);
            sqltext_printf(s, " AS payable, ");
            sqltext_datetime(s, u->use->used_ms);
            sqltext_printf(s, " AS used_at, ");
        } else {
            sqltext_printf(s, "NULL AS order_ref, NULL AS discount, NULL AS payable, NULL AS used_at, ");
        }
        if (u->refund) {
            sqltext_quoted(s, db, u->refund->order_ref);
            sqltext_printf(s, " AS refunded_ref, ");
            sqltext_datetime(s, u->refund->used_ms);
            sqltext_printf(s, " AS refunded_at, ");
        } else {
            sqltext_printf(s, "NULL AS refunded_ref, NULL AS refunded_at, ");
        }
        sqltext_printf(s, "%" PRId64 " AS event_seq", u->seq);
    }
    /* A row keeps its last refund unless this batch refunded it again. */
    sqltext_printf(s, ") v ON uc.id = v.id AND uc.user_id = v.user_id "
                      "SET uc.status=v.status, uc.order_ref=v.order_ref, uc.discount=v.discount, "
                      "uc.payable=v.payable, uc.used_at=v.used_at, "
                      "uc.refunded_ref=COALESCE(v.refunded_ref, uc.refunded_ref), "
                      "uc.refunded_at=COALESCE(v.refunded_at, uc.refunded_at), uc.event_seq=v.event_seq");
}

/* Writes the rows changed, in statements of COUPONUSE_PER_STATEMENT. Each is locked by
 * this transaction and differs from what was read (its status or its event_seq), so each
 * must change: anything else is an error (and a rollback), never a silent miss. */
static int write_rows(struct sqltx *tx, const struct couponuse_row *const *rows, size_t count)
{
    for (size_t start = 0; start < count; start += COUPONUSE_PER_STATEMENT) {
        size_t n = count - start < COUPONUSE_PER_STATEMENT ? count - start
                                                           : COUPONUSE_PER_STATEMENT;
        couponuse_update_sql(&tx->sql, tx->db, rows + start, n);
        uint64_t changed;
        if (sqltx_run(tx, "update user_coupon", &changed) != 0)
            return -1;
        if (changed != n) {
            snprintf(tx->err, tx->errlen, "update user_coupon: %" PRIu64 " of %zu rows locked "
                     "and changed were written", changed, n);
            return -1;
        }
    }
    return 0;
}

/* Each event applied is an outcome; a repeated one had its outcome event written with it. */
static int add_event(struct outbox *o, const struct redeemevent *ev, int64_t coupon_id)
{
    struct outbox_event out = { .type = ev->kind == REDEEMEVENT_REFUNDED ? OUTBOX_COUPON_REFUNDED
                                                                          : OUTBOX_COUPON_USED,
                                .at_ms = ev->used_ms, .user_id = ev->user_id, .coupon_id = coupon_id,
                                .user_coupon_id = ev->user_coupon_id, .discount = ev->discount,
                                .payable = ev->payable };
    memcpy(out.order_ref, ev->order_ref, sizeof(out.order_ref));
    return outbox_add(o, &out);
}

/* The rows the batch changed, in id order (rows is sorted), into out; returns how many. */
static size_t changed_rows(struct couponuse_row *rows, size_t row_count, const struct couponuse_row **out)
{
    size_t n = 0;
    for (size_t k = 0; k < row_count; k++)
        if (rows[k].changed)
            out[n++] = &rows[k];
    return n;
}

int couponuse_apply(struct sqltx *tx, const struct redeemevent *events, size_t count,
                    struct batch_use_result *results, struct sqltx_stats *stats)
{
    if (count == 0)
        return 0;
    struct couponuse_row *rows = malloc(count * sizeof(*rows));
    const struct couponuse_row **changed = malloc(count * sizeof(*changed));
    if (!rows || !changed) {
        free(rows);
        free(changed);
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    size_t row_count;
    int rc = lock_rows(tx, events, count, rows, &row_count);
    for (size_t i = 0; i < count && rc == 0; i++) {
        const struct redeemevent *ev = &events[i];
        struct couponuse_row *u = row_find(rows, row_count, ev->user_coupon_id);
        struct batch_use_result *res = &results[i];
        res->reason[0] = '\0';
        res->last = false;
        res->verdict = couponuse_judge(ev, u, res->reason, sizeof(res->reason));
        res->coupon_id = u ? u->coupon_id : 0;
        if (res->verdict == BATCH_USE_REPEATED) {
            stats->uses_repeated++;
        } else if (res->verdict == BATCH_USE_INCONSISTENT) {
            stats->uses_inconsistent++;
        } else if (counters_add(&tx->coupons, u->coupon_id, 0, couponuse_step(u, ev, i)) != 0 ||
                   (tx->outbox && add_event(tx->outbox, ev, u->coupon_id) != 0)) {
            snprintf(tx->err, tx->errlen, "out of memory");
            rc = -1;
        } else {
            stats->uses_applied++;
        }
    }
    size_t n = rc == 0 ? changed_rows(rows, row_count, changed) : 0;
    for (size_t k = 0; k < n; k++)
        results[changed[k]->last].last = true;
    if (rc == 0)
        rc = write_rows(tx, changed, n);
    free(rows);
    free(changed);
    return rc;
}
