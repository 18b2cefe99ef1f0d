#include "ctl/ctlactivitycreate.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlactivitywarmup.h"
#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "ctl/ctlutf8.h"
#include "store/db.h"
#include "common/clock.h"
#include "common/holder.h"
#include "common/timeparse.h"

/* INT UNSIGNED column. */
#define CTLACTIVITYCREATE_MAX_STOCK 4294967295LL

/* Everything between START TRANSACTION and COMMIT; the caller rolls back on failure. */
static int ctlactivitycreate_insert(struct ctlrun *ctl, int64_t coupon_id, int64_t stock,
                                    int64_t start_ms, int64_t end_ms, const char *given_name,
                                    int64_t now_ms, int buckets, int per_user, int64_t *id)
{
    struct ctlallotment al;
    int rc = ctlallotment_read(ctl, coupon_id, now_ms, true, &al);
    if (rc != CTLRUN_OK)
        return rc;
    struct ctlcoupon_row *cp = &al.coupon;
    if (strcmp(cp->status, "ACTIVE") != 0)
        return ctlout_fail(ctl, "coupon %" PRId64 " is %s, not ACTIVE", coupon_id, cp->status);
    if ((rc = ctlallotment_within_validity(ctl, &al, start_ms, end_ms)) != CTLRUN_OK)
        return rc;
    if (!ctlallotment_fits(&al.count, stock))
        return ctlout_fail(ctl,
                           "--stock %" PRId64 " exceeds what coupon %" PRId64 " has left: %" PRId64
                           " (total %" PRId64 " - issued %" PRId64 " - %" PRId64
                           " allotted to its other activities)",
                           stock, coupon_id, al.remaining, al.count.total, al.count.issued, al.count.held);

    char name[CTLACTIVITY_NAME_BYTES + 16];
    if (given_name) {
        snprintf(name, sizeof(name), "%s", given_name);
    } else {
        /* " seckill" is 8 characters of the 128 the column holds. */
        ctlutf8_truncate(cp->name, 120);
        snprintf(name, sizeof(name), "%s seckill", cp->name);
    }
    char *qname = ctldb_quote(ctl, name);
    if (!qname)
        return CTLRUN_FAIL;
    char s_start[32], s_end[32];
    timeparse_format_sql(start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(end_ms, s_end, sizeof(s_end));
    size_t sqllen = strlen(qname) + 512;
    char *sql = malloc(sqllen);
    if (!sql) {
        free(qname);
        return ctlout_fail(ctl, "out of memory");
    }
    snprintf(sql, sqllen,
             "INSERT INTO seckill_activity (name, coupon_id, stock, per_user, start_time, end_time, status) "
             "VALUES (%s, %" PRId64 ", %" PRId64 ", %d, '%s', '%s', '%s')",
             qname, coupon_id, stock, per_user, s_start, s_end, start_ms > now_ms ? "PENDING" : "ACTIVE");
    free(qname);
    rc = ctldb_exec(ctl, sql);
    free(sql);
    if (rc != CTLRUN_OK)
        return rc;
    *id = (int64_t)mysql_insert_id(ctl->db);
    if (buckets > 1) {
        /* The tags name the id, so they are chosen once it is known, in the same
         * transaction: a row never exists without its buckets. */
        struct bucket_list list;
        char tags[BUCKET_LIST_LEN], update[BUCKET_LIST_LEN + 128];
        if ((rc = ctlbuckets_choose(ctl, *id, buckets, &list)) != CTLRUN_OK)
            return rc;
        if (bucket_list_format(&list, tags, sizeof(tags)) != 0)
            return ctlout_fail(ctl, "activity %" PRId64 ": bucket tags too long", *id);
        snprintf(update, sizeof(update), "UPDATE seckill_activity SET bucket_tags = '%s' WHERE id = %" PRId64,
                 tags, *id);
        if ((rc = ctldb_exec(ctl, update)) != CTLRUN_OK)
            return rc;
    }
    return ctldb_exec(ctl, "COMMIT");
}

int ctlactivitycreate_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { COUPON, STOCK, START, END, NAME, BUCKETS, PER_USER, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [COUPON] = { "--coupon", true, NULL },
        [STOCK] = { "--stock", true, NULL },
        [START] = { "--start", true, NULL },
        [END] = { "--end", true, NULL },
        [NAME] = { "--name", false, NULL },
        [BUCKETS] = { "--buckets", false, NULL },
        [PER_USER] = { "--per-user", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t coupon_id, stock, start_ms, end_ms, now = clock_wall_ms();
    if ((rc = ctlargs_id(ctl, "--coupon", opts[COUPON].value, &coupon_id)) != CTLRUN_OK ||
        (rc = ctlargs_count(ctl, "--stock", opts[STOCK].value, 1, CTLACTIVITYCREATE_MAX_STOCK,
                            &stock)) != CTLRUN_OK ||
        (rc = ctlargs_window(ctl, opts[START].value, opts[END].value, now, &start_ms, &end_ms)) !=
            CTLRUN_OK)
        return rc;
    if (opts[NAME].value && (rc = ctlargs_name(ctl, "--name", opts[NAME].value)) != CTLRUN_OK)
        return rc;
    int64_t buckets = 1;
    if (opts[BUCKETS].value &&
        (rc = ctlargs_count(ctl, "--buckets", opts[BUCKETS].value, 1, BUCKET_MAX, &buckets)) != CTLRUN_OK)
        return rc;
    int64_t per_user = 1;
    if (opts[PER_USER].value && (rc = ctlargs_count(ctl, "--per-user", opts[PER_USER].value, 1,
                                                    HOLDER_MAX_SLOT, &per_user)) != CTLRUN_OK)
        return rc;
    if (buckets > stock)
        return ctlout_usage_error(ctl, "--buckets %" PRId64 " exceeds --stock %" PRId64
                                  ": every bucket starts with at least one unit", buckets, stock);
    if (end_ms <= start_ms)
        return ctlout_usage_error(ctl, "--end must be after --start");
    if (end_ms <= now)
        return ctlout_usage_error(ctl, "--end '%s' is in the past: the sale would already be over",
                                  opts[END].value);
    if ((rc = ctlactivity_check_length(ctl, start_ms, end_ms)) != CTLRUN_OK)
        return rc;

    /* Redis is needed for the warmup: better refused now than created cold. */
    if (!ctlredis_conn(ctl))
        return CTLRUN_FAIL;
    if ((rc = ctldb_exec(ctl, "START TRANSACTION")) != CTLRUN_OK)
        return rc;
    int64_t id = 0;
    rc = ctlactivitycreate_insert(ctl, coupon_id, stock, start_ms, end_ms, opts[NAME].value, now,
                                  (int)buckets, (int)per_user, &id);
    if (rc != CTLRUN_OK) {
        char err[256];
        db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
        return rc;
    }

    struct ctlactivity_row row;
    memset(&row, 0, sizeof(row));
    char report[256] = "";
    rc = ctlactivity_load(ctl, id, &row);
    if (rc == CTLRUN_OK)
        rc = ctlactivitywarmup_warm(ctl, &row, report, sizeof(report));
    if (rc != CTLRUN_OK)
        ctlout_note(ctl, "activity %" PRId64 " was created but is not warmed: run "
                    "'seckillctl activity warmup %" PRId64 "'", id, id);
    else if (!ctl->json)
        ctlout_note(ctl, "activity %" PRId64 " warmed: %s", id, report);

    if (ctl->json) {
        char iso_start[40], iso_end[40];
        timeparse_format(start_ms, iso_start, sizeof(iso_start));
        timeparse_format(end_ms, iso_end, sizeof(iso_end));
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", row.name);
        cJSON_AddNumberToObject(obj, "couponId", (double)coupon_id);
        cJSON_AddNumberToObject(obj, "stock", (double)stock);
        cJSON_AddNumberToObject(obj, "buckets", (double)buckets);
        cJSON_AddNumberToObject(obj, "perUser", (double)per_user);
        cJSON_AddStringToObject(obj, "start", iso_start);
        cJSON_AddStringToObject(obj, "end", iso_end);
        cJSON_AddBoolToObject(obj, "warmed", rc == CTLRUN_OK);
        if (rc == CTLRUN_OK)
            cJSON_AddStringToObject(obj, "warmup", report);
        int prc = ctlout_json(ctl, obj);
        return rc != CTLRUN_OK ? rc : prc;
    }
    printf("%" PRId64 "\n", id);
    return rc;
}

