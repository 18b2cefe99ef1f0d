#include "ctl/ctlcouponarchive.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/timeparse.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "store/couponarchive.h"

static int ctlcouponarchive_print(struct ctlrun *ctl, const struct ctlcoupon_row *before,
                                  const struct ctlcoupon_row *after, const struct couponarchive_walk *w)
{
    char at[40];
    timeparse_format(after->archived_ms, at, sizeof(at));
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)after->id);
        cJSON_AddBoolToObject(obj, "archived", true);
        cJSON_AddStringToObject(obj, "archivedAt", at);
        cJSON_AddBoolToObject(obj, "alreadyArchived", before->archived_ms > 0);
        cJSON_AddNumberToObject(obj, "userCoupons", (double)w->user_coupons);
        cJSON_AddNumberToObject(obj, "fieldsRemoved", (double)w->fields);
        return ctlout_json(ctl, obj);
    }
    printf("coupon %" PRId64 " %s at %s: %" PRId64 " user coupon(s) walked, %" PRId64 " Redis field(s) "
           "removed; MySQL keeps them all\n", after->id,
           before->archived_ms > 0 ? "was archived" : "archived", at, w->user_coupons, w->fields);
    return CTLRUN_OK;
}

int ctlcouponarchive_run(struct ctlrun *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "coupon id", &id);
    if (rc != CTLRUN_OK)
        return rc;
    MYSQL *db = ctldb_conn(ctl);
    struct redisroute *rr = db ? ctlredis_conn(ctl) : NULL;
    if (!rr)
        return CTLRUN_FAIL;
    struct ctlcoupon_row before, after;
    if ((rc = ctlcoupon_load(ctl, id, false, &before)) != CTLRUN_OK)
        return rc;
    int64_t now = clock_wall_ms();
    if (now < before.end_ms) {
        char end[40];
        timeparse_format(before.end_ms, end, sizeof(end));
        return ctlout_fail(ctl, "coupon %" PRId64 " is valid until %s: its user coupons can still be "
                           "redeemed; nothing was changed", id, end);
    }
    struct couponarchive_walk w;
    couponarchive_begin(&w, id);
    char err[512];
    do
        rc = couponarchive_step(db, rr, &w, clock_wall_ms(), err, sizeof(err));
    while (rc == COUPONARCHIVE_MORE);
    if (rc != COUPONARCHIVE_DONE)
        return ctlout_unavailable(ctl, "coupon %" PRId64 ": %s after %" PRId64 " user coupon(s); running it "
                                  "again finishes it", id, err, w.user_coupons);
    if ((rc = ctlcoupon_load(ctl, id, false, &after)) != CTLRUN_OK)
        return rc;
    return ctlcouponarchive_print(ctl, &before, &after, &w);
}
