#include "ctl/ctlcouponstatus.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/keys.h"
#include "common/timeparse.h"

struct ctlcouponstatus_done {
    bool already;           /* MySQL said so before this command */
    size_t sales;           /* warmed sales paused or resumed */
    size_t cold;            /* sales not (yet) warmed: warmup applies the status */
};

/* Every sale of the coupon that has not ended or been cancelled: the rest sell nothing
 * whatever the coupon's status. */
static int ctlcouponstatus_sales(struct ctlrun *ctl, int64_t coupon_id, bool pause,
                                 struct ctlcouponstatus_done *done)
{
    struct ctlactivity_row *rows;
    size_t n;
    int rc = ctlactivity_list(ctl, coupon_id, false, &rows, &n);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < n && rc == CTLRUN_OK; i++) {
        if (ctlactivity_is_cancelled(&rows[i]) || now >= rows[i].end_ms)
            continue;
        /* Every bucket's activity hash is read by execute.lua on its own master. */
        struct bucket_list list;
        if ((rc = ctlactivity_buckets(ctl, &rows[i], &list)) != CTLRUN_OK)
            break;
        bool warmed = false;
        for (int b = 0; b < list.count && rc == CTLRUN_OK; b++) {
            struct keys_set k;
            if ((rc = ctlbuckets_keys(ctl, rows[i].id, &list, b, &k)) != CTLRUN_OK)
                break;
            const char *keys[] = { k.name[KEYS_ACTIVITY] };
            const char *args[] = { pause ? "1" : "0" };
            redisReply *r = ctlredis_script(ctl, LUASCRIPT_PAUSE, 1, keys, 1, args);
            if (!r) {
                rc = CTLRUN_FAIL;
                break;
            }
            warmed = warmed || (r->type == REDIS_REPLY_INTEGER && r->integer == 1);
            freeReplyObject(r);
        }
        if (warmed)
            done->sales++;
        else
            done->cold++;
    }
    free(rows);
    return rc;
}

static int ctlcouponstatus_print(struct ctlrun *ctl, int64_t id, const char *status,
                                 const struct ctlcouponstatus_done *done)
{
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "status", status);
        cJSON_AddBoolToObject(obj, "already", done->already);
        cJSON_AddNumberToObject(obj, "sales", (double)done->sales);
        cJSON_AddNumberToObject(obj, "notWarmed", (double)done->cold);
        return ctlout_json(ctl, obj);
    }
    bool pause = strcmp(status, "INACTIVE") == 0;
    printf("coupon %" PRId64 " %s%s: %zu running or coming sale(s) %s\n", id,
           done->already ? "was already " : "", pause ? "deactivated" : "activated", done->sales,
           pause ? "paused (their unsold stock stays with them)" : "selling again");
    return CTLRUN_OK;
}

static int ctlcouponstatus_set(struct ctlrun *ctl, int argc, char **argv, const char *status)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "coupon id", &id);
    if (rc != CTLRUN_OK)
        return rc;
    if (!ctldb_conn(ctl))
        return CTLRUN_FAIL;
    struct ctlcoupon_row row;
    if ((rc = ctlcoupon_load(ctl, id, false, &row)) != CTLRUN_OK)
        return rc;
    if (strcmp(row.status, "EXPIRED") == 0 || clock_wall_ms() >= row.end_ms) {
        char end[40];
        timeparse_format(row.end_ms, end, sizeof(end));
        return ctlout_fail(ctl, "coupon %" PRId64 " expired at %s: it can no longer be activated or "
                           "deactivated", id, end);
    }
    struct ctlcouponstatus_done done = { .already = strcmp(row.status, status) == 0 };
    char sql[160];
    /* Only between ACTIVE and INACTIVE: a coupon the lifecycle pass expired meanwhile
     * stays EXPIRED, and the row count says so. */
    snprintf(sql, sizeof(sql), "UPDATE coupon SET status = '%s' WHERE id = %" PRId64
             " AND status IN ('ACTIVE', 'INACTIVE')", status, id);
    if ((rc = ctldb_exec(ctl, sql)) != CTLRUN_OK)
        return rc;
    if (mysql_affected_rows(ctl->db) == 0 && !done.already)
        return ctlout_fail(ctl, "coupon %" PRId64 " expired meanwhile: left as it is", id);

    char key[KEYS_LEN];
    keys_coupon(key, sizeof(key), id);
    const char *hset[] = { "HSET", key, "status", status };
    redisReply *r = ctlredis_argv(ctl, 4, hset);
    if (!r)
        rc = CTLRUN_FAIL;
    else
        freeReplyObject(r);
    if (rc == CTLRUN_OK)
        rc = ctlcouponstatus_sales(ctl, id, strcmp(status, "INACTIVE") == 0, &done);
    if (rc != CTLRUN_OK) {
        ctlout_note(ctl, "coupon %" PRId64 " is %s in MySQL but not yet everywhere in Redis: run "
                    "'seckillctl coupon %s %" PRId64 "' again", id, status,
                    strcmp(status, "INACTIVE") == 0 ? "deactivate" : "activate", id);
        return rc;
    }
    return ctlcouponstatus_print(ctl, id, status, &done);
}

int ctlcouponstatus_deactivate(struct ctlrun *ctl, int argc, char **argv)
{
    return ctlcouponstatus_set(ctl, argc, argv, "INACTIVE");
}

int ctlcouponstatus_activate(struct ctlrun *ctl, int argc, char **argv)
{
    return ctlcouponstatus_set(ctl, argc, argv, "ACTIVE");
}
