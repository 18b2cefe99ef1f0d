#include "ctl/ctlactivityshow.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "ctl/ctlrefused.h"
#include "common/clock.h"
#include "common/timeparse.h"

/* One bucket as `activity show` lists it. */
struct ctlactivityshow_bucket {
    char tag[BUCKET_TAG_LEN];
    char master[80];
    bool has_stock;
    int64_t stock_left;
};

struct ctlactivityshow_live {
    struct ctlactivity_redis rd;
    int64_t success, failed, processing;  /* success, failed -1: unknown */
    int nbuckets;
    struct ctlactivityshow_bucket buckets[BUCKET_MAX];
};

/* One MULTI per bucket: a bucket's numbers add up as of one instant. The orders by status
 * come from counters, not a walk of the orders hash (an admin dashboard may poll this on a
 * sale of millions): SUCCESS is the activity hash's 'sold', PROCESSING the live orders
 * (reserved, queued or claimed), FAILED the rest of the hash. A bucket without the counter
 * (warmed before it existed) leaves SUCCESS and FAILED unknown. */
static int ctlactivityshow_bucket(struct ctlrun *ctl, const struct keys_set *k,
                                  struct ctlactivityshow_live *lv, struct ctlactivity_redis *rd)
{
    struct ctlredis_cmd cmds[CTLACTIVITY_REDIS_CMDS + 2];
    ctlactivity_redis_cmds(k, cmds);
    cmds[CTLACTIVITY_REDIS_CMDS] = (struct ctlredis_cmd){ 3, { "HGET", k->name[KEYS_ACTIVITY], "sold" } };
    cmds[CTLACTIVITY_REDIS_CMDS + 1] = (struct ctlredis_cmd){ 2, { "HLEN", k->name[KEYS_ORDERS] } };
    redisReply *r = ctlredis_multi(ctl, cmds, CTLACTIVITY_REDIS_CMDS + 2);
    if (!r)
        return CTLRUN_FAIL;
    int rc = ctlactivity_redis_parse(ctl, r, rd);
    if (rc == CTLRUN_OK) {
        int64_t sold, all = r->element[CTLACTIVITY_REDIS_CMDS + 1]->integer;
        int64_t live = rd->reservations + rd->queued + rd->claimed;
        lv->processing += live;
        if (lv->success < 0 || ctlredis_int(r->element[CTLACTIVITY_REDIS_CMDS], &sold) != 0) {
            lv->success = lv->failed = -1;
        } else {
            lv->success += sold;
            lv->failed += all - sold - live;
        }
    }
    freeReplyObject(r);
    return rc;
}

static int ctlactivityshow_live(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                struct ctlactivityshow_live *lv)
{
    memset(lv, 0, sizeof(*lv));
    struct bucket_list list;
    if (ctlactivity_buckets(ctl, row, &list) != CTLRUN_OK)
        return CTLRUN_FAIL;
    lv->nbuckets = list.count;
    for (int b = 0; b < list.count; b++) {
        struct keys_set k;
        struct ctlactivity_redis one;
        struct ctlactivityshow_bucket *sb = &lv->buckets[b];
        if (ctlbuckets_keys(ctl, row->id, &list, b, &k) != CTLRUN_OK ||
            ctlactivityshow_bucket(ctl, &k, lv, &one) != CTLRUN_OK)
            return CTLRUN_FAIL;
        snprintf(sb->tag, sizeof(sb->tag), "%s", k.tag);
        sb->has_stock = one.has_stock;
        sb->stock_left = one.stock_left;
        if (list.count > 1 && ctlbuckets_master(ctl, &k, sb->master, sizeof(sb->master)) != CTLRUN_OK)
            return CTLRUN_FAIL;
    }
    /* The sums (and the units in transit) as every other command reads them. */
    return ctlactivity_read_redis(ctl, row, &lv->rd);
}

/* An archived sale's orders by status, from MySQL: Redis keeps only the activity hash. */
static int ctlactivityshow_archived(struct ctlrun *ctl, const struct ctlactivity_row *row, int64_t *success,
                                    int64_t *failed)
{
    char sql[256];
    int64_t v[2];
    snprintf(sql, sizeof(sql),
             "SELECT (SELECT COUNT(*) FROM seckill_order WHERE activity_id = %" PRId64 "), "
             "(SELECT COUNT(*) FROM seckill_order_failed WHERE activity_id = %" PRId64 ")",
             row->id, row->id);
    if (ctldb_ints(ctl, sql, v, 2) != CTLRUN_OK)
        return CTLRUN_FAIL;
    *success = v[0];
    *failed = v[1];
    return CTLRUN_OK;
}

int ctlactivityshow_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlactivity_row row;
    int rc = ctlactivity_load_arg(ctl, argc, argv, &row);
    if (rc != CTLRUN_OK)
        return rc;
    char sql[256], coupon_name[CTLACTIVITY_NAME_BYTES] = "?", coupon_type[16] = "?";
    snprintf(sql, sizeof(sql), "SELECT name, type FROM coupon WHERE id = %" PRId64, row.coupon_id);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (r) {
        snprintf(coupon_name, sizeof(coupon_name), "%s", r[0] ? r[0] : "");
        snprintf(coupon_type, sizeof(coupon_type), "%s", r[1] ? r[1] : "");
    }
    mysql_free_result(res);

    struct ctlactivityshow_live lv;
    int64_t a_success = 0, a_failed = 0;
    int live_rc = row.archived ? ctlactivityshow_archived(ctl, &row, &a_success, &a_failed)
                               : ctlactivityshow_live(ctl, &row, &lv);
    struct ctlrefused refused = { 0 };
    if (live_rc == CTLRUN_OK)
        live_rc = ctlrefused_read(ctl, row.id, &refused);
    const struct ctlactivity_redis *rd = &lv.rd;
    int64_t now = clock_wall_ms();
    const char *status = ctlactivity_status_at(&row, now);
    char start[40], end[40], archived_at[40] = "";
    timeparse_format(row.start_ms, start, sizeof(start));
    timeparse_format(row.end_ms, end, sizeof(end));
    if (row.archived)
        timeparse_format(row.archived_ms, archived_at, sizeof(archived_at));

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)row.id);
        cJSON_AddStringToObject(obj, "name", row.name);
        cJSON_AddNumberToObject(obj, "couponId", (double)row.coupon_id);
        cJSON_AddStringToObject(obj, "couponName", coupon_name);
        cJSON_AddStringToObject(obj, "couponType", coupon_type);
        cJSON_AddNumberToObject(obj, "stock", (double)row.stock);
        cJSON_AddNumberToObject(obj, "soldCount", (double)row.sold_count);
        cJSON_AddNumberToObject(obj, "perUser", row.per_user);
        cJSON_AddStringToObject(obj, "start", start);
        cJSON_AddStringToObject(obj, "end", end);
        cJSON_AddNumberToObject(obj, "startMs", (double)row.start_ms);
        cJSON_AddNumberToObject(obj, "endMs", (double)row.end_ms);
        cJSON_AddStringToObject(obj, "status", status);
        cJSON_AddBoolToObject(obj, "archived", row.archived);
        if (row.archived)
            cJSON_AddStringToObject(obj, "archivedAt", archived_at);
        else
            cJSON_AddNullToObject(obj, "archivedAt");
        if (row.archived && live_rc == CTLRUN_OK) {
            cJSON_AddNumberToObject(obj, "holds", 0);
            cJSON *redis = cJSON_AddObjectToObject(obj, "redis");
            cJSON_AddBoolToObject(redis, "archived", true);
            cJSON *orders = cJSON_AddObjectToObject(obj, "orders");
            cJSON_AddNumberToObject(orders, "SUCCESS", (double)a_success);
            cJSON_AddNumberToObject(orders, "FAILED", (double)a_failed);
        } else if (live_rc == CTLRUN_OK) {
            cJSON_AddNumberToObject(obj, "holds", (double)ctlallotment_holds(&row, now, rd));
            cJSON *redis = cJSON_AddObjectToObject(obj, "redis");
            cJSON_AddBoolToObject(redis, "warmed", rd->warmed);
            if (rd->has_stock)
                cJSON_AddNumberToObject(redis, "stockLeft", (double)rd->stock_left);
            else
                cJSON_AddNullToObject(redis, "stockLeft");
            cJSON_AddNumberToObject(redis, "returned", (double)rd->returned);
            cJSON_AddNumberToObject(redis, "reservations", (double)rd->reservations);
            cJSON_AddNumberToObject(redis, "queued", (double)rd->queued);
            cJSON_AddNumberToObject(redis, "claimed", (double)rd->claimed);
            cJSON *orders = cJSON_AddObjectToObject(redis, "orders");
            if (lv.success >= 0) {
                cJSON_AddNumberToObject(orders, "SUCCESS", (double)lv.success);
                cJSON_AddNumberToObject(orders, "FAILED", (double)lv.failed);
            } else {
                cJSON_AddNullToObject(orders, "SUCCESS");
                cJSON_AddNullToObject(orders, "FAILED");
            }
            cJSON_AddNumberToObject(orders, "PROCESSING", (double)lv.processing);
            if (lv.nbuckets > 1) {
                cJSON_AddNumberToObject(redis, "inTransit", (double)rd->in_transit);
                cJSON *arr = cJSON_AddArrayToObject(redis, "buckets");
                for (int b = 0; b < lv.nbuckets; b++) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddNumberToObject(o, "bucket", b);
                    cJSON_AddStringToObject(o, "tag", lv.buckets[b].tag);
                    cJSON_AddStringToObject(o, "master", lv.buckets[b].master);
                    if (lv.buckets[b].has_stock)
                        cJSON_AddNumberToObject(o, "stockLeft", (double)lv.buckets[b].stock_left);
                    else
                        cJSON_AddNullToObject(o, "stockLeft");
                    cJSON_AddItemToArray(arr, o);
                }
            }
        } else {
            cJSON_AddNullToObject(obj, "redis");
        }
        if (live_rc == CTLRUN_OK)
            ctlrefused_json(&refused, obj);
        int prc = ctlout_json(ctl, obj);
        return live_rc != CTLRUN_OK ? live_rc : prc;
    }

    printf("activity   %" PRId64 " \"%s\"\n", row.id, row.name);
    printf("coupon     %" PRId64 " \"%s\" (%s)\n", row.coupon_id, coupon_name, coupon_type);
    printf("window     %s .. %s (%" PRId64 " s)\n", start, end, (row.end_ms - row.start_ms) / 1000);
    printf("status     %s\n", status);
    printf("stock      %" PRId64 ", sold %" PRId64 " (MySQL)\n", row.stock, row.sold_count);
    printf("per user   %d order%s\n", row.per_user, row.per_user == 1 ? "" : "s");
    if (row.archived && live_rc == CTLRUN_OK) {
        printf("archived   %s: Redis keeps only the activity hash\n", archived_at);
        printf("orders     SUCCESS %" PRId64 ", FAILED %" PRId64 " (MySQL)\n", a_success, a_failed);
        ctlrefused_print(&refused);
        return CTLRUN_OK;
    }
    if (live_rc != CTLRUN_OK) {
        printf("redis      unreadable (error on stderr)\n");
        return live_rc;
    }
    if (!rd->warmed)
        printf("redis      not warmed: run 'seckillctl activity warmup %" PRId64 "'\n", row.id);
    if (rd->has_stock)
        printf("redis      stock left %" PRId64 ", reservations %" PRId64 ", queued %" PRId64
               ", claimed %" PRId64 "\n",
               rd->stock_left, rd->reservations, rd->queued, rd->claimed);
    else
        printf("redis      no stock key, reservations %" PRId64 ", queued %" PRId64
               ", claimed %" PRId64 "\n",
               rd->reservations, rd->queued, rd->claimed);
    if (rd->returned > 0 || rd->cancelled)
        printf("returned   %" PRId64 " unsold to the coupon by the cancel\n", rd->returned);
    printf("holds      %" PRId64 " of coupon %" PRId64 "'s count\n", ctlallotment_holds(&row, now, rd),
           row.coupon_id);
    if (lv.success >= 0)
        printf("orders     SUCCESS %" PRId64 ", FAILED %" PRId64 ", PROCESSING %" PRId64 "\n", lv.success,
               lv.failed, lv.processing);
    else
        printf("orders     SUCCESS and FAILED unknown (warmed before the sold counter existed: "
               "'seckillctl verify' counts them), PROCESSING %" PRId64 "\n", lv.processing);
    ctlrefused_print(&refused);
    if (lv.nbuckets > 1) {
        printf("buckets    %d, %" PRId64 " unit(s) in transit between them\n", lv.nbuckets, rd->in_transit);
        for (int b = 0; b < lv.nbuckets; b++) {
            char left[24] = "no stock key";
            if (lv.buckets[b].has_stock)
                snprintf(left, sizeof(left), "%" PRId64, lv.buckets[b].stock_left);
            printf("  bucket %-2d {%s} on %s, stock left %s\n", b, lv.buckets[b].tag, lv.buckets[b].master,
                   left);
        }
    }
    return CTLRUN_OK;
}
