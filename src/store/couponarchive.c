#include "store/couponarchive.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/usercoupon.h"
#include "store/db.h"
#include "store/sqltime.h"

/* The order in which a user coupon can change status (couponarchive.h). */
static const char *const couponarchive_statuses[COUPONARCHIVE_STATUSES] = { "UNUSED", "EXPIRED", "USED" };

struct couponarchive_row {
    int64_t id;
    char key[64];           /* its user's hash */
    redisContext *master;   /* NULL once its removal is sent */
};

void couponarchive_begin(struct couponarchive_walk *w, int64_t coupon_id)
{
    memset(w, 0, sizeof(*w));
    w->coupon_id = coupon_id;
}

bool couponarchive_past(int64_t end_ms, int64_t after_ms, int64_t now_ms)
{
    return after_ms > 0 && end_ms <= now_ms - after_ms;
}

int couponarchive_due(MYSQL *db, int64_t now_ms, int64_t after_ms, int64_t *id, char *err, size_t errlen)
{
    char sql[384];
    snprintf(sql, sizeof(sql),
             "SELECT id FROM coupon WHERE archived_at IS NULL AND end_time <= " SQLTIME_AT
             " ORDER BY end_time, id LIMIT 1", now_ms - (after_ms > 0 ? after_ms : 0));
    MYSQL_RES *res = db_select(db, sql, err, errlen);
    if (!res)
        return -1;
    MYSQL_ROW r = mysql_fetch_row(res);
    int found = r && r[0];
    if (found)
        *id = strtoll(r[0], NULL, 10);
    mysql_free_result(res);
    return found;
}

/* The next page of the walk's current status into rows; how many, or -1 with err. */
static int couponarchive_page(MYSQL *db, const struct couponarchive_walk *w, struct couponarchive_row *rows,
                              char *err, size_t errlen)
{
    char sql[384];
    snprintf(sql, sizeof(sql),
             "SELECT id, user_id FROM user_coupon WHERE coupon_id = %" PRId64 " AND status = '%s' AND id > %"
             PRId64 " ORDER BY id LIMIT %d", w->coupon_id, couponarchive_statuses[w->status], w->after_id,
             COUPONARCHIVE_PAGE);
    MYSQL_RES *res = db_select(db, sql, err, errlen);
    if (!res)
        return -1;
    int n = 0;
    MYSQL_ROW r;
    while (n < COUPONARCHIVE_PAGE && (r = mysql_fetch_row(res)) != NULL) {
        if (!r[0] || !r[1])
            continue;
        rows[n].id = strtoll(r[0], NULL, 10);
        usercoupon_key(rows[n].key, sizeof(rows[n].key), strtoll(r[1], NULL, 10));
        rows[n].master = NULL;
        n++;
    }
    mysql_free_result(res);
    return n;
}

/* One HDEL per row, pipelined master by master; adds the fields removed to *fields. Every
 * master is looked up before any command is sent: a lookup can reload the slot map, which
 * closes the connections of nodes that left it. */
static int couponarchive_remove(struct redisroute *redis, struct couponarchive_row *rows, int n,
                                int64_t *fields, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (!(rows[i].master = redisroute_for_key(redis, rows[i].key, strlen(rows[i].key), err, errlen)))
            return -1;
    for (int first = 0; first < n; first++) {
        redisContext *master = rows[first].master;
        if (!master)
            continue;
        int sent = 0;
        for (int i = first; i < n; i++) {
            if (rows[i].master != master)
                continue;
            /* every field usercoupon.h lists */
            static const char *const suffixes[] = { "", ":used", ":pending", ":seq", ":refunded",
                                                    ":revoked" };
            enum { NFIELDS = sizeof(suffixes) / sizeof(suffixes[0]) };
            char fields_text[NFIELDS][32];
            const char *argv[2 + NFIELDS] = { "HDEL", rows[i].key };
            for (int f = 0; f < NFIELDS; f++) {
                snprintf(fields_text[f], sizeof(fields_text[f]), "%" PRId64 "%s", rows[i].id, suffixes[f]);
                argv[2 + f] = fields_text[f];
            }
            if (redisAppendCommandArgv(master, 2 + NFIELDS, argv, NULL) != REDIS_OK) {
                snprintf(err, errlen, "redis: out of memory");
                redisroute_failed(redis, master);
                return -1;
            }
            rows[i].master = NULL;
            sent++;
        }
        int rc = 0;
        for (int i = 0; i < sent; i++) {
            redisReply *r = NULL;
            if (redisGetReply(master, (void **)&r) != REDIS_OK || !r) {
                snprintf(err, errlen, "redis: %s", master->errstr[0] ? master->errstr : "no reply");
                redisroute_failed(redis, master);
                return -1;   /* the connection is closed: its other replies are gone with it */
            }
            if (r->type == REDIS_REPLY_INTEGER)
                *fields += r->integer;
            else if (rc == 0) {
                snprintf(err, errlen, "redis HDEL: %s",
                         r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
                rc = -1;
            }
            freeReplyObject(r);
        }
        if (rc != 0) {
            /* a MOVED: the map is reloaded before the next command, and the page is sent again */
            redisroute_failed(redis, master);
            return -1;
        }
    }
    return 0;
}

static int couponarchive_finish(MYSQL *db, const struct couponarchive_walk *w, int64_t now_ms, char *err,
                                size_t errlen)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "UPDATE coupon SET archived_at = " SQLTIME_AT " WHERE id = %" PRId64
             " AND archived_at IS NULL", now_ms, w->coupon_id);
    if (mysql_query(db, sql) != 0) {
        snprintf(err, errlen, "mysql: %s", mysql_error(db));
        return -1;
    }
    return 0;
}

int couponarchive_step(MYSQL *db, struct redisroute *redis, struct couponarchive_walk *w, int64_t now_ms,
                       char *err, size_t errlen)
{
    if (w->status >= COUPONARCHIVE_STATUSES) {
        int rc = couponarchive_finish(db, w, now_ms, err, errlen);
        return rc == 0 ? COUPONARCHIVE_DONE : COUPONARCHIVE_ERROR;
    }
    struct couponarchive_row *rows = malloc(COUPONARCHIVE_PAGE * sizeof(*rows));
    if (!rows) {
        snprintf(err, errlen, "out of memory");
        return COUPONARCHIVE_ERROR;
    }
    int n = couponarchive_page(db, w, rows, err, errlen);
    int rc = n < 0 ? -1 : couponarchive_remove(redis, rows, n, &w->fields, err, errlen);
    if (rc == 0) {
        w->user_coupons += n;
        if (n == COUPONARCHIVE_PAGE) {
            w->after_id = rows[n - 1].id;
        } else {
            w->status++;
            w->after_id = 0;
        }
    }
    free(rows);
    return rc == 0 ? COUPONARCHIVE_MORE : COUPONARCHIVE_ERROR;
}
