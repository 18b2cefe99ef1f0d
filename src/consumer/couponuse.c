#include "consumer/couponuse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    sqltext_printf(s, "SELECT id, user_id, coupon_id, status, order_ref FROM user_coupon "
                      "WHERE id IN (");
    for (size_t i = 0; i < count; i++)
        sqltext_printf(s, "%s%" PRId64, i ? "," : "", ids[i]);
    sqltext_printf(s, ") ORDER BY id FOR UPDATE");
}

/* Reads and locks the user coupons the uses name, in id order (as InnoDB walks the
 * primary key), into rows. Ids that have no row are simply absent. The statements go
 * by ascending ids and each returns its rows ORDER BY id, so rows come out sorted by id
 * as row_find needs, without sorting them again. */
static int lock_rows(struct sqltx *tx, const struct redeemevent *uses, size_t count,
                     struct couponuse_row *rows, size_t *row_count)
{
    *row_count = 0;
    int64_t *ids = malloc(count * sizeof(*ids));
    if (!ids) {
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        ids[i] = uses[i].user_coupon_id;
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
    return rc;
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
        snprintf(reason, len, "usedAt %" PRId64 " is beyond the range of DATETIME", ev->used_ms);
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

void couponuse_update_sql(struct sqltext *s, MYSQL *db, const struct redeemevent *const *uses,
                          size_t count)
{
    sqltext_reset(s);
    if (count == 1) {
        const struct redeemevent *ev = uses[0];
        sqltext_printf(s, "UPDATE user_coupon SET status='USED', order_ref=");
        sqltext_quoted(s, db, ev->order_ref);
        sqltext_printf(s, ", discount=");
        sqltext_cents(s, ev->discount);
        sqltext_printf(s, ", payable=");
        sqltext_cents(s, ev->payable);
        sqltext_printf(s, ", used_at=");
        sqltext_datetime(s, ev->used_ms);
        sqltext_printf(s, " WHERE id=%" PRId64 " AND user_id=%" PRId64 " AND status IN ('UNUSED','EXPIRED')",
                       ev->user_coupon_id, ev->user_id);
        return;
    }
    sqltext_printf(s, "UPDATE user_coupon uc JOIN (");
    for (size_t i = 0; i < count; i++) {
        const struct redeemevent *ev = uses[i];
        sqltext_printf(s, "%sSELECT %" PRId64 " AS id, %" PRId64 " AS user_id, ",
                       i ? " UNION ALL " : "", ev->user_coupon_id, ev->user_id);
        sqltext_quoted(s, db, ev->order_ref);
        sqltext_printf(s, " AS order_ref, ");
        sqltext_cents(s, ev->discount);
        sqltext_printf(s, " AS discount, ");
        sqltext_cents(s, ev->payable);
        sqltext_printf(s, " AS payable, ");
        sqltext_datetime(s, ev->used_ms);
        sqltext_printf(s, " AS used_at");
    }
    sqltext_printf(s, ") v ON uc.id = v.id AND uc.user_id = v.user_id "
                      "SET uc.status='USED', uc.order_ref=v.order_ref, "
                      "uc.discount=v.discount, uc.payable=v.payable, uc.used_at=v.used_at "
                      "WHERE uc.status IN ('UNUSED','EXPIRED')");
}

/* Writes the uses judged APPLIED, in statements of COUPONUSE_PER_STATEMENT. Each row is
 * locked by this transaction and was seen UNUSED (or EXPIRED), so each must change: anything else is
 * an error (and a rollback), never a silent miss. */
static int write_uses(struct sqltx *tx, const struct redeemevent *const *uses, size_t count)
{
    for (size_t start = 0; start < count; start += COUPONUSE_PER_STATEMENT) {
        size_t n = count - start < COUPONUSE_PER_STATEMENT ? count - start
                                                           : COUPONUSE_PER_STATEMENT;
        couponuse_update_sql(&tx->sql, tx->db, uses + start, n);
        uint64_t changed;
        if (sqltx_run(tx, "update user_coupon", &changed) != 0)
            return -1;
        if (changed != n) {
            snprintf(tx->err, tx->errlen, "update user_coupon: %" PRIu64 " of %zu rows locked "
                     "as UNUSED changed", changed, n);
            return -1;
        }
    }
    return 0;
}

int couponuse_apply(struct sqltx *tx, const struct redeemevent *uses, size_t count,
                    struct batch_use_result *results, struct sqltx_stats *stats)
{
    if (count == 0)
        return 0;
    struct couponuse_row *rows = malloc(count * sizeof(*rows));
    const struct redeemevent **apply = malloc(count * sizeof(*apply));
    if (!rows || !apply) {
        free(rows);
        free(apply);
        snprintf(tx->err, tx->errlen, "out of memory");
        return -1;
    }
    size_t row_count, applied = 0;
    int rc = lock_rows(tx, uses, count, rows, &row_count);
    for (size_t i = 0; i < count && rc == 0; i++) {
        const struct redeemevent *ev = &uses[i];
        struct couponuse_row *u = row_find(rows, row_count, ev->user_coupon_id);
        struct batch_use_result *res = &results[i];
        res->reason[0] = '\0';
        res->verdict = couponuse_judge(ev, u, res->reason, sizeof(res->reason));
        res->coupon_id = u ? u->coupon_id : 0;
        if (res->verdict == BATCH_USE_REPEATED) {
            stats->uses_repeated++;
        } else if (res->verdict == BATCH_USE_INCONSISTENT) {
            stats->uses_inconsistent++;
        } else if (counters_add(&tx->coupons, u->coupon_id, 0, 1) != 0) {
            snprintf(tx->err, tx->errlen, "out of memory");
            rc = -1;
        } else {
            strcpy(u->status, "USED");
            snprintf(u->order_ref, sizeof(u->order_ref), "%s", ev->order_ref);
            apply[applied++] = ev;
            stats->uses_applied++;
        }
    }
    if (rc == 0)
        rc = write_uses(tx, apply, applied);
    free(rows);
    free(apply);
    return rc;
}
