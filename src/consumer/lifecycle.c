#include "consumer/lifecycle.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "consumer/autoarchive.h"
#include "consumer/backend.h"
#include "consumer/consumer.h"
#include "consumer/outcomes.h"
#include "store/sqltext.h"

/* Rows changed by one UPDATE of user coupons: a coupon held by a million users expires in
 * short transactions instead of one that locks every row at once. */
#define LIFECYCLE_CHUNK 5000
/* Coupons looked at per pass; the rest wait for the next one. */
#define LIFECYCLE_COUPONS 100

/* Runs s (a statement built for now) and adds its affected rows to *changed. */
static int lifecycle_exec(struct consumer *c, struct sqltext *s, uint64_t *changed)
{
    if (s->failed) {
        LOG_WARN("lifecycle: out of memory building a statement");
        return -1;
    }
    if (mysql_query(c->db, s->data) != 0) {
        LOG_WARN("lifecycle: %s (retried in %" PRId64 " ms)", mysql_error(c->db),
                 c->cfg.consumer_lifecycle_interval_ms);
        return -1;
    }
    my_ulonglong n = mysql_affected_rows(c->db);
    if (n != (my_ulonglong)-1)
        *changed += (uint64_t)n;
    return 0;
}

/* Activities moved per pass and transition; the rest wait for the next one. */
#define LIFECYCLE_ACTIVITIES 1000

/* The ids a SELECT returns (at most cap): a consistent read, which locks nothing. */
static int lifecycle_ids(struct consumer *c, const struct sqltext *s, int64_t *ids, size_t cap, size_t *n)
{
    *n = 0;
    if (s->failed) {
        LOG_WARN("lifecycle: out of memory building a statement");
        return -1;
    }
    if (mysql_query(c->db, s->data) != 0) {
        LOG_WARN("lifecycle: %s", mysql_error(c->db));
        return -1;
    }
    MYSQL_RES *res = mysql_store_result(c->db);
    if (!res) {
        LOG_WARN("lifecycle: %s", mysql_error(c->db));
        return -1;
    }
    MYSQL_ROW row;
    while (*n < cap && (row = mysql_fetch_row(res)) != NULL)
        ids[(*n)++] = row[0] ? strtoll(row[0], NULL, 10) : 0;
    mysql_free_result(res);
    return 0;
}

/* Every activity that `cond` (a WHERE clause on seckill_activity) selects gets `status`.
 * The candidates come from a read that locks nothing, then each row is changed by its key
 * with the condition asked again. One UPDATE over the table would scan it: it would wait on
 * any row another session holds (a persist transaction raising a sale's sold_count, an
 * operator's transaction) while holding every row it had scanned, and so hold back the
 * persistence of every other sale behind that one row. */
static int lifecycle_move(struct consumer *c, const char *status, const char *cond, uint64_t *changed)
{
    int64_t ids[LIFECYCLE_ACTIVITIES];
    size_t n;
    struct sqltext s = { 0 };
    sqltext_printf(&s, "SELECT id FROM seckill_activity WHERE %s ORDER BY id LIMIT %d", cond,
                   LIFECYCLE_ACTIVITIES);
    int rc = lifecycle_ids(c, &s, ids, LIFECYCLE_ACTIVITIES, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqltext_reset(&s);
        sqltext_printf(&s, "UPDATE seckill_activity SET status = '%s' WHERE id = %" PRId64 " AND %s", status,
                       ids[i], cond);
        rc = lifecycle_exec(c, &s, changed);
    }
    sqltext_free(&s);
    return rc;
}

/* The window opens and closes by the gateways' clock, which the consumer's host shares:
 * the statements compare with the consumer's now, not MySQL's. */
static int lifecycle_activities(struct consumer *c, int64_t now, struct lifecycle_counts *out)
{
    struct sqltext ended = { 0 }, started = { 0 };
    sqltext_printf(&ended, "status IN ('PENDING', 'ACTIVE') AND end_time <= ");
    sqltext_datetime(&ended, now);
    sqltext_printf(&started, "status = 'PENDING' AND start_time <= ");
    sqltext_datetime(&started, now);
    sqltext_printf(&started, " AND end_time > ");
    sqltext_datetime(&started, now);
    int rc = -1;
    if (ended.failed || started.failed)
        LOG_WARN("lifecycle: out of memory building a statement");
    else if (lifecycle_move(c, "ENDED", ended.data, &out->activities_ended) == 0)
        rc = lifecycle_move(c, "ACTIVE", started.data, &out->activities_started);
    sqltext_free(&ended);
    sqltext_free(&started);
    return rc;
}

/* One coupon past its validity: its unused user coupons first, then the coupon, so a pass
 * cut short in between finds the coupon still to do. */
static int lifecycle_coupon(struct consumer *c, int64_t coupon_id, struct lifecycle_counts *out)
{
    struct sqltext s = { 0 };
    sqltext_printf(&s, "UPDATE user_coupon SET status = 'EXPIRED' WHERE coupon_id = %" PRId64
                       " AND status = 'UNUSED' LIMIT %d", coupon_id, LIFECYCLE_CHUNK);
    int rc = 0;
    for (;;) {
        uint64_t before = out->user_coupons_expired;
        if ((rc = lifecycle_exec(c, &s, &out->user_coupons_expired)) != 0)
            break;
        if (out->user_coupons_expired - before < LIFECYCLE_CHUNK)
            break;
    }
    if (rc == 0) {
        sqltext_reset(&s);
        sqltext_printf(&s, "UPDATE coupon SET status = 'EXPIRED' WHERE id = %" PRId64
                           " AND status <> 'EXPIRED'", coupon_id);
        rc = lifecycle_exec(c, &s, &out->coupons_expired);
    }
    sqltext_free(&s);
    return rc;
}

/* Coupons past their end that are not EXPIRED yet, or that are but still have unused user
 * coupons: an order of a sale persisted after the coupon's end (consumer lag) issues its
 * user coupon UNUSED, and the next pass expires it. */
static int lifecycle_coupons(struct consumer *c, int64_t now, struct lifecycle_counts *out)
{
    struct sqltext s = { 0 };
    sqltext_printf(&s, "SELECT c.id FROM coupon c WHERE c.end_time <= ");
    sqltext_datetime(&s, now);
    sqltext_printf(&s, " AND (c.status <> 'EXPIRED' OR EXISTS (SELECT 1 FROM user_coupon u "
                       "WHERE u.coupon_id = c.id AND u.status = 'UNUSED')) ORDER BY c.id LIMIT %d",
                   LIFECYCLE_COUPONS);
    int64_t ids[LIFECYCLE_COUPONS];
    size_t n;
    int rc = lifecycle_ids(c, &s, ids, LIFECYCLE_COUPONS, &n);
    sqltext_free(&s);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = lifecycle_coupon(c, ids[i], out);
    return rc;
}

int lifecycle_run(struct consumer *c, struct lifecycle_counts *changed)
{
    *changed = (struct lifecycle_counts){ 0 };
    char err[256];
    if (backend_db(c, err, sizeof(err)) != 0) {
        LOG_WARN("lifecycle: %s", err);
        return -1;
    }
    int64_t now = clock_wall_ms();
    if (lifecycle_activities(c, now, changed) != 0 || lifecycle_coupons(c, now, changed) != 0) {
        /* The next batch reconnects; a statement MySQL refused only repeats. */
        if (mysql_errno(c->db) == 0 || mysql_errno(c->db) >= 2000)
            backend_db_drop(c);
        return -1;
    }
    return 0;
}

void lifecycle_tick(struct consumer *c)
{
    int64_t interval = c->cfg.consumer_lifecycle_interval_ms;
    int64_t now = clock_mono_ms();
    if (interval == 0 || (c->lifecycle_ms != 0 && now - c->lifecycle_ms < interval))
        return;
    c->lifecycle_ms = now;
    struct lifecycle_counts n;
    if (lifecycle_run(c, &n) != 0)
        return;
    if (n.activities_started || n.activities_ended)
        LOG_INFO("lifecycle: %" PRIu64 " activities ACTIVE, %" PRIu64 " ENDED",
                 n.activities_started, n.activities_ended);
    if (n.coupons_expired || n.user_coupons_expired)
        LOG_INFO("lifecycle: %" PRIu64 " coupons and %" PRIu64 " user coupons EXPIRED",
                 n.coupons_expired, n.user_coupons_expired);
    int64_t failed = outcomes_run(c);
    if (failed > 0)
        LOG_INFO("lifecycle: %" PRId64 " FAILED orders recorded", failed);
    /* After the outcomes: an ended sale's last FAILED orders are recorded first, which
     * the archive requires. */
    autoarchive_run(c);
    autoarchive_coupons(c, true);
}
