#include "ctl/ctlcouponrevoke.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/json.h"
#include "common/usercoupon.h"
#include "ctl/ctlargs.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "store/db.h"
#include "store/outbox.h"

/* The row as MySQL has it; FOR UPDATE inside the transaction. */
static int ctlcouponrevoke_read(struct ctlrun *ctl, struct ctlcouponrevoke *r, bool lock)
{
    char sql[320];
    snprintf(sql, sizeof(sql),
             "SELECT uc.user_id, uc.coupon_id, uc.status, uc.order_ref, c.archived_at IS NOT NULL "
             "FROM user_coupon uc JOIN coupon c ON c.id = uc.coupon_id WHERE uc.id = %" PRId64 "%s",
             r->id, lock ? " FOR UPDATE" : "");
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (row) {
        r->user_id = ctldb_int(row[0]);
        r->coupon_id = ctldb_int(row[1]);
        snprintf(r->status, sizeof(r->status), "%s", row[2] ? row[2] : "");
        snprintf(r->order_ref, sizeof(r->order_ref), "%s", row[3] ? row[3] : "");
        r->archived = ctldb_int(row[4]) != 0;
    }
    mysql_free_result(res);
    if (!row)
        return ctlout_missing(ctl, "user coupon %" PRId64 " does not exist", r->id);
    if (strcmp(r->status, "USED") == 0)
        return ctlout_fail(ctl, "user coupon %" PRId64 " is used by order '%s': refund it first "
                           "(POST /coupons/%" PRId64 "/refund); nothing was changed", r->id, r->order_ref,
                           r->id);
    return CTLRUN_OK;
}

int ctlcouponrevoke_load(struct ctlrun *ctl, struct ctlcouponrevoke *r)
{
    return ctlcouponrevoke_read(ctl, r, false);
}

/* revoke.lua, then WAIT for the replicas redis.wait-replicas asks: a mark a failover lost
 * would let the holder redeem a coupon MySQL is about to call REVOKED. */
int ctlcouponrevoke_mark(struct ctlrun *ctl, const struct ctlcouponrevoke *r)
{
    if (r->archived)
        return CTLRUN_OK;
    char key[64], id[24], now[24];
    usercoupon_key(key, sizeof(key), r->user_id);
    snprintf(id, sizeof(id), "%" PRId64, r->id);
    snprintf(now, sizeof(now), "%" PRId64, clock_wall_ms());
    const char *keys[] = { key }, *args[] = { id, now };
    redisReply *v = ctlredis_script(ctl, LUASCRIPT_REVOKE, 1, keys, 2, args);
    if (!v)
        return CTLRUN_FAIL;
    int rc = CTLRUN_OK;
    const char *verdict = v->type == REDIS_REPLY_ARRAY && v->elements > 0 &&
                          v->element[0]->type == REDIS_REPLY_STRING ? v->element[0]->str : "";
    const char *by = v->type == REDIS_REPLY_ARRAY && v->elements > 1 &&
                     v->element[1]->type == REDIS_REPLY_STRING ? v->element[1]->str : "?";
    if (strcmp(verdict, "USED") == 0)
        rc = ctlout_fail(ctl, "user coupon %" PRId64 " is used by order '%s' (its redemption is not in "
                         "MySQL yet): refund it first; nothing was changed", r->id, by);
    else if (strcmp(verdict, "PENDING") == 0)
        rc = ctlout_fail(ctl, "user coupon %" PRId64 ": its last redemption or refund is still being "
                         "recorded; run this again in a moment; nothing was changed", r->id);
    else if (strcmp(verdict, "OK") != 0)
        rc = ctlout_fail(ctl, "revoke.lua: unexpected answer");
    freeReplyObject(v);
    if (rc != CTLRUN_OK || ctl->cfg.redis_wait_replicas <= 0)
        return rc;
    redisContext *c = ctlredis_for_key(ctl, key);
    char want[24], timeout[24];
    snprintf(want, sizeof(want), "%" PRId64, ctl->cfg.redis_wait_replicas);
    snprintf(timeout, sizeof(timeout), "%" PRId64, ctl->cfg.redis_wait_timeout_ms);
    const char *wait[] = { "WAIT", want, timeout };
    redisReply *w = c ? ctlredis_on(ctl, c, 3, wait) : NULL;
    int64_t got = -1;
    if (!w || ctlredis_int(w, &got) != 0 || got < ctl->cfg.redis_wait_replicas)
        rc = ctlout_unavailable(ctl, "user coupon %" PRId64 ": the revocation reached %" PRId64 " Redis "
                                "replica(s) of %" PRId64 "; MySQL was not changed: run this again", r->id,
                                got < 0 ? 0 : got, ctl->cfg.redis_wait_replicas);
    if (w)
        freeReplyObject(w);
    return rc;
}

/* The MySQL half, in the caller's transaction: the row REVOKED and its unit back to the
 * coupon, or nothing when it is REVOKED already (a repeat, or a run that finishes an
 * interrupted one). */
int ctlcouponrevoke_apply(struct ctlrun *ctl, struct ctlcouponrevoke *r)
{
    int rc = ctlcouponrevoke_read(ctl, r, true);
    if (rc != CTLRUN_OK)
        return rc;
    if (strcmp(r->status, "REVOKED") == 0)
        return CTLRUN_OK;
    char *qreason = ctldb_quote(ctl, r->reason);
    if (!qreason)
        return CTLRUN_FAIL;
    char sql[512];
    snprintf(sql, sizeof(sql), "UPDATE user_coupon SET status = 'REVOKED', revoked_at = UTC_TIMESTAMP(3), "
             "revoke_reason = %s WHERE id = %" PRId64, qreason, r->id);
    free(qreason);
    if ((rc = ctldb_exec(ctl, sql)) != CTLRUN_OK)
        return rc;
    snprintf(sql, sizeof(sql), "UPDATE coupon SET issued_count = issued_count - 1 WHERE id = %" PRId64,
             r->coupon_id);
    if ((rc = ctldb_exec(ctl, sql)) != CTLRUN_OK)
        return rc;
    struct outbox_event ev = { .type = OUTBOX_COUPON_REVOKED, .at_ms = clock_wall_ms(),
                               .user_id = r->user_id, .coupon_id = r->coupon_id,
                               .user_coupon_id = r->id, .note = r->reason };
    if ((rc = ctldb_outcomes(ctl, &ev, 1)) != CTLRUN_OK)
        return rc;
    r->revoked = true;
    return CTLRUN_OK;
}

int ctlcouponrevoke_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlcouponrevoke r;
    memset(&r, 0, sizeof(r));
    const char *arg;
    int rc = ctlargs_reasoned(ctl, argc, argv, &arg, &r.reason);
    if (rc != CTLRUN_OK || (rc = ctlargs_id(ctl, "user coupon id", arg, &r.id)) != CTLRUN_OK)
        return rc;
    if (!ctldb_conn(ctl) || !ctlredis_conn(ctl))
        return CTLRUN_FAIL;
    if ((rc = ctlcouponrevoke_load(ctl, &r)) != CTLRUN_OK)
        return rc;
    /* Redis before MySQL, even for a row REVOKED already: that run may have been the one
     * interrupted, and the mark is written once (HSETNX). An archived coupon's records
     * have left Redis: nothing there to redeem. */
    if ((rc = ctlcouponrevoke_mark(ctl, &r)) != CTLRUN_OK)
        return rc;
    char err[256];
    if ((rc = ctldb_exec(ctl, "START TRANSACTION")) != CTLRUN_OK)
        return rc;
    if ((rc = ctlcouponrevoke_apply(ctl, &r)) != CTLRUN_OK ||
        (rc = ctldb_exec(ctl, "COMMIT")) != CTLRUN_OK) {
        db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
        if (strcmp(r.status, "USED") == 0)
            ctlout_note(ctl, "Redis has it revoked already and refuses its redemptions; once its refund "
                        "is in MySQL, run this again to finish");
        return rc;
    }
    if (!r.revoked && !ctl->json)
        ctlout_note(ctl, "user coupon %" PRId64 " was revoked before: nothing changed", r.id);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)r.id);
        cJSON_AddNumberToObject(obj, "couponId", (double)r.coupon_id);
        json_add_int(obj, "userId", r.user_id);
        cJSON_AddStringToObject(obj, "status", "REVOKED");
        cJSON_AddBoolToObject(obj, "revoked", r.revoked);
        return ctlout_json(ctl, obj);
    }
    printf("%" PRId64 " REVOKED\n", r.id);
    return CTLRUN_OK;
}
