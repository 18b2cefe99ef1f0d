#include "ctl/ctlorder.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/json.h"
#include "common/orderno.h"
#include "common/timeparse.h"
#include "store/sqltime.h"

#define CTLORDER_EVENTS 6

struct ctlorder_event {
    int64_t at_ms;
    char what[160];
};

struct ctlorder {
    char no[ORDERNO_LEN];
    int64_t activity_id, user_id, coupon_id;
    int slot;                   /* the user's slot in a sale of --per-user above 1; 0, 1: the first */
    int64_t accepted_ms;
    char status[16];            /* the outcome MySQL holds: SUCCESS, CANCELLED, FAILED, or "" */
    char reason[16];            /* FAILED */
    char redis_status[16];      /* "" when Redis does not know the order */
    bool archived;              /* its sale is archived: Redis keeps none of its orders */
    struct ctlorder_event ev[CTLORDER_EVENTS];
    size_t nev;
};

static void ctlorder_add(struct ctlorder *o, int64_t at_ms, const char *what)
{
    if (o->nev < CTLORDER_EVENTS) {
        o->ev[o->nev].at_ms = at_ms;
        snprintf(o->ev[o->nev].what, sizeof(o->ev[o->nev].what), "%s", what);
        o->nev++;
    }
}

static int ctlorder_by_time(const void *a, const void *b)
{
    const struct ctlorder_event *x = a, *y = b;
    return (x->at_ms > y->at_ms) - (x->at_ms < y->at_ms);
}

/* The row of seckill_order, or the record of seckill_order_failed. */
static int ctlorder_mysql(struct ctlrun *ctl, const char *qno, struct ctlorder *o)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT user_id, coupon_id, " SQLTIME_MS("created_at") ", "
             SQLTIME_MS("updated_at") ", status, " SQLTIME_MS("cancelled_at") ", cancel_reason, user_slot "
             "FROM seckill_order WHERE order_no = %s", qno);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (r) {
        o->user_id = ctldb_int(r[0]);
        o->coupon_id = ctldb_int(r[1]);
        o->slot = r[7] ? (int)ctldb_int(r[7]) : 1;
        snprintf(o->status, sizeof(o->status), "%s", r[4] ? r[4] : "SUCCESS");
        ctlorder_add(o, ctldb_int(r[2]), "SUCCESS: persisted in MySQL");
        if (r[5]) {
            char what[160];
            snprintf(what, sizeof(what), "CANCELLED by the shop%s%.128s", r[6] && r[6][0] ? ": " : "",
                     r[6] ? r[6] : "");
            ctlorder_add(o, ctldb_int(r[5]), what);
        } else if (ctldb_int(r[3]) != ctldb_int(r[2])) {
            ctlorder_add(o, ctldb_int(r[3]), "row updated");
        }
    }
    mysql_free_result(res);
    if (r)
        return CTLRUN_OK;
    snprintf(sql, sizeof(sql), "SELECT user_id, reason, " SQLTIME_MS("failed_at") ", "
             SQLTIME_MS("created_at") " FROM seckill_order_failed WHERE order_no = %s", qno);
    if (!(res = ctldb_query(ctl, sql)))
        return CTLRUN_FAIL;
    if ((r = mysql_fetch_row(res))) {
        o->user_id = ctldb_int(r[0]);
        strcpy(o->status, "FAILED");
        snprintf(o->reason, sizeof(o->reason), "%s", r[1] ? r[1] : "");
        char what[96];
        snprintf(what, sizeof(what), "FAILED: %s", o->reason);
        ctlorder_add(o, ctldb_int(r[2]), what);
        ctlorder_add(o, ctldb_int(r[3]), "FAILED recorded in MySQL");
    }
    mysql_free_result(res);
    return CTLRUN_OK;
}

/* The user coupon the order issued (source_ref is the order number) and its redemption. */
static int ctlorder_coupon(struct ctlrun *ctl, const char *qno, struct ctlorder *o)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT id, status, order_ref, " SQLTIME_MS("created_at") ", "
             SQLTIME_MS("used_at") " FROM user_coupon WHERE source_ref = %s", qno);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (r) {
        char what[160];
        snprintf(what, sizeof(what), "user coupon %s issued (now %s)", r[0], r[1] ? r[1] : "?");
        ctlorder_add(o, ctldb_int(r[3]), what);
        if (r[4]) {
            snprintf(what, sizeof(what), "user coupon %s used by checkout %s", r[0], r[2] ? r[2] : "?");
            ctlorder_add(o, ctldb_int(r[4]), what);
        }
    }
    mysql_free_result(res);
    return CTLRUN_OK;
}

/* The status in the order's bucket: its user's when MySQL named the user, else each
 * bucket in turn (the order number does not name it). */
static int ctlorder_redis(struct ctlrun *ctl, struct ctlorder *o)
{
    struct ctlactivity_row row;
    struct bucket_list list;
    if (ctlactivity_load(ctl, o->activity_id, &row) != CTLRUN_OK)
        bucket_list_single(&list, o->activity_id);   /* no row: a sale Redis alone knows */
    else if ((o->archived = row.archived))
        return CTLRUN_OK;
    else if (ctlactivity_buckets(ctl, &row, &list) != CTLRUN_OK)
        return CTLRUN_FAIL;
    int only = o->user_id ? bucket_of_user(o->user_id, list.count) : -1;
    for (int b = 0; b < list.count && !o->redis_status[0]; b++) {
        if (only >= 0 && b != only)
            continue;
        struct keys_set k;
        if (ctlbuckets_keys(ctl, o->activity_id, &list, b, &k) != CTLRUN_OK)
            return CTLRUN_FAIL;
        const char *hget[] = { "HGET", k.name[KEYS_ORDERS], o->no };
        redisReply *r = ctlredis_argv(ctl, 3, hget);
        if (!r)
            return CTLRUN_FAIL;
        if (r->type == REDIS_REPLY_STRING)
            snprintf(o->redis_status, sizeof(o->redis_status), "%s", r->str);
        freeReplyObject(r);
    }
    return CTLRUN_OK;
}

static int ctlorder_print(struct ctlrun *ctl, const struct ctlorder *o)
{
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "orderNo", o->no);
        cJSON_AddNumberToObject(obj, "activityId", (double)o->activity_id);
        if (o->user_id)
            json_add_int(obj, "userId", o->user_id);  /* exact above 2^53 too */
        if (o->slot > 1)
            cJSON_AddNumberToObject(obj, "userSlot", o->slot);
        if (o->status[0])
            cJSON_AddStringToObject(obj, "status", o->status);
        else
            cJSON_AddNullToObject(obj, "status");
        if (o->reason[0])
            cJSON_AddStringToObject(obj, "reason", o->reason);
        if (o->redis_status[0])
            cJSON_AddStringToObject(obj, "redisStatus", o->redis_status);
        else
            cJSON_AddNullToObject(obj, "redisStatus");
        cJSON_AddBoolToObject(obj, "archived", o->archived);
        cJSON *hist = cJSON_AddArrayToObject(obj, "history");
        for (size_t i = 0; i < o->nev; i++) {
            char at[40];
            timeparse_format(o->ev[i].at_ms, at, sizeof(at));
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "at", at);
            cJSON_AddStringToObject(e, "event", o->ev[i].what);
            cJSON_AddItemToArray(hist, e);
        }
        return ctlout_json(ctl, obj);
    }
    printf("order %s  activity %" PRId64, o->no, o->activity_id);
    if (o->user_id)
        printf("  user %" PRId64, o->user_id);
    if (o->slot > 1)
        printf(" (slot %d)", o->slot);
    if (o->coupon_id)
        printf("  coupon %" PRId64, o->coupon_id);
    printf("\n");
    for (size_t i = 0; i < o->nev; i++) {
        char at[40];
        timeparse_format(o->ev[i].at_ms, at, sizeof(at));
        printf("  %s  %s\n", at, o->ev[i].what);
    }
    printf("MySQL: %s  Redis: %s\n", o->status[0] ? o->status : "no outcome yet",
           o->archived ? "archived (the sale's orders are in MySQL alone)"
                       : o->redis_status[0] ? o->redis_status : "unknown");
    return CTLRUN_OK;
}

/* The report of order o->no (activity_id set): its history and statuses, printed. */
static int ctlorder_report(struct ctlrun *ctl, struct ctlorder *o, uint64_t id)
{
    o->accepted_ms = (int64_t)(id >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS)) + ORDERNO_EPOCH_MS;
    MYSQL *db = ctldb_conn(ctl);
    if (!db)
        return CTLRUN_FAIL;
    char qno[2 * ORDERNO_LEN + 3];
    qno[0] = '\'';
    unsigned long n = mysql_real_escape_string(db, qno + 1, o->no, (unsigned long)strlen(o->no));
    qno[n + 1] = '\'';
    qno[n + 2] = '\0';
    int rc;
    if ((rc = ctlorder_mysql(ctl, qno, o)) != CTLRUN_OK || (rc = ctlorder_coupon(ctl, qno, o)) != CTLRUN_OK ||
        (rc = ctlorder_redis(ctl, o)) != CTLRUN_OK)
        return rc;
    if (!o->status[0] && !o->redis_status[0])
        return ctlout_missing(ctl, "order %s is unknown to MySQL and Redis", o->no);
    ctlorder_add(o, o->accepted_ms, "accepted by a gateway (reserved in Redis)");
    qsort(o->ev, o->nev, sizeof(o->ev[0]), ctlorder_by_time);
    return ctlorder_print(ctl, o);
}

int ctlorder_show_run(struct ctlrun *ctl, int argc, char **argv)
{
    const char *pos[1];
    int rc = ctlargs_parse(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    struct ctlorder o;
    memset(&o, 0, sizeof(o));
    uint64_t id;
    if ((rc = ctlargs_order_no(ctl, pos[0], o.no, &id, &o.activity_id)) != CTLRUN_OK)
        return rc;
    return ctlorder_report(ctl, &o, id);
}

/* The order number on the first row of sql, into o->no and *id (*found false: none). */
static int ctlorder_first(struct ctlrun *ctl, const char *sql, struct ctlorder *o, uint64_t *id, bool *found)
{
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    int64_t of_activity = 0;
    *found = r && r[0] && strlen(r[0]) < sizeof(o->no) && orderno_parse(r[0], id, &of_activity) == 0;
    if (*found)
        snprintf(o->no, sizeof(o->no), "%s", r[0]);
    mysql_free_result(res);
    return CTLRUN_OK;
}

int ctlorder_find_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { ACTIVITY, USER, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [ACTIVITY] = { "--activity", true, NULL },
        [USER] = { "--user", true, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t activity_id, user_id;
    if ((rc = ctlargs_id(ctl, "--activity", opts[ACTIVITY].value, &activity_id)) != CTLRUN_OK ||
        (rc = ctlargs_id(ctl, "--user", opts[USER].value, &user_id)) != CTLRUN_OK)
        return rc;
    /* UNIQUE(user_id, activity_id, user_slot): the order a user holds in a sale, their
     * first slot's when the sale lets them hold several (`order list --user` lists them
     * all). A user without one was freed by every attempt that FAILED: their last, as
     * Redis answers it while the sale is live (result.lua), else nothing. */
    char held[256], failed[256];
    snprintf(held, sizeof(held), "SELECT order_no FROM seckill_order WHERE activity_id = %" PRId64
             " AND user_id = %" PRId64 " ORDER BY user_slot LIMIT 1", activity_id, user_id);
    snprintf(failed, sizeof(failed), "SELECT order_no FROM seckill_order_failed WHERE activity_id = %" PRId64
             " AND user_id = %" PRId64 " ORDER BY failed_at DESC, id DESC LIMIT 1", activity_id, user_id);
    struct ctlorder o;
    memset(&o, 0, sizeof(o));
    uint64_t id = 0;
    bool found = false;
    if ((rc = ctlorder_first(ctl, held, &o, &id, &found)) != CTLRUN_OK ||
        (!found && (rc = ctlorder_first(ctl, failed, &o, &id, &found)) != CTLRUN_OK))
        return rc;
    if (!found)
        return ctlout_missing(ctl, "user %" PRId64 " holds no order in activity %" PRId64, user_id,
                              activity_id);
    o.activity_id = activity_id;
    return ctlorder_report(ctl, &o, id);
}
