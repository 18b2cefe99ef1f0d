#include "ctl/ctlactivityupdate.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/holder.h"
#include "common/timeparse.h"
#include "store/db.h"

/* INT UNSIGNED column. */
#define CTLACTIVITYUPDATE_MAX_STOCK 4294967295LL

/* What the command line asks: each part absent (has_*) or a target. */
struct ctlactivityupdate_edit {
    const char *name;
    bool has_start, has_end, has_stock, has_per_user;
    int per_user;
    int64_t start_ms, end_ms;
    char stock_sign;        /* '+', '-' or 0 for an absolute --stock */
    int64_t stock_n;
};

/* The row as it will be, from row and the edit. */
struct ctlactivityupdate_target {
    int64_t start_ms, end_ms, stock;
    int per_user;
};

static int ctlactivityupdate_stock_arg(struct ctlrun *ctl, const char *s, struct ctlactivityupdate_edit *e)
{
    e->stock_sign = (s[0] == '+' || s[0] == '-') ? s[0] : 0;
    const char *digits = e->stock_sign ? s + 1 : s;
    int rc = ctlargs_count(ctl, "--stock", digits, e->stock_sign ? 1 : 0, CTLACTIVITYUPDATE_MAX_STOCK,
                           &e->stock_n);
    e->has_stock = rc == CTLRUN_OK;
    return rc;
}

/* The checks MySQL's row can answer (Redis checks again against its own clock). */
static int ctlactivityupdate_check(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                   const struct ctlactivityupdate_edit *e, int64_t now,
                                   struct ctlactivityupdate_target *t)
{
    char at[40];
    if (row->archived)
        return ctlout_fail(ctl, "activity %" PRId64 " is archived: it is over", row->id);
    if (ctlactivity_is_cancelled(row))
        return ctlout_fail(ctl, "activity %" PRId64 " is cancelled: create a new sale instead", row->id);
    if (now >= row->end_ms) {
        timeparse_format(row->end_ms, at, sizeof(at));
        return ctlout_fail(ctl, "activity %" PRId64 " ended at %s: an ended sale is not edited", row->id, at);
    }
    t->start_ms = e->has_start ? e->start_ms : row->start_ms;
    t->end_ms = e->has_end ? e->end_ms : row->end_ms;
    if (e->has_start && t->start_ms != row->start_ms) {
        if (now >= row->start_ms) {
            timeparse_format(row->start_ms, at, sizeof(at));
            return ctlout_fail(ctl, "activity %" PRId64 " started at %s: its start can no longer move",
                               row->id, at);
        }
        if (t->start_ms <= now)
            return ctlout_usage_error(ctl, "--start is in the past: a sale's start moves to a later time "
                                      "only");
    }
    if (e->has_end && t->end_ms != row->end_ms && t->end_ms <= now)
        return ctlout_usage_error(ctl, "--end is in the past: to stop a sale now, cancel it");
    if (t->end_ms <= t->start_ms)
        return ctlout_usage_error(ctl, "the end must be after the start");
    int rc = ctlactivity_check_length(ctl, t->start_ms, t->end_ms);
    if (rc != CTLRUN_OK)
        return rc;
    t->stock = row->stock;
    if (e->has_stock)
        t->stock = e->stock_sign == '+' ? row->stock + e->stock_n
                 : e->stock_sign == '-' ? row->stock - e->stock_n : e->stock_n;
    if (t->stock < row->sold_count || t->stock < 0)
        return ctlout_fail(ctl, "stock %" PRId64 " is below the %" PRId64 " already sold", t->stock,
                           row->sold_count);
    if (t->stock > CTLACTIVITYUPDATE_MAX_STOCK)
        return ctlout_usage_error(ctl, "stock %" PRId64 " is too large", t->stock);
    t->per_user = e->has_per_user ? e->per_user : row->per_user;
    return CTLRUN_OK;
}

static int ctlactivityupdate_refuse_lower(struct ctlrun *ctl, const struct ctlactivity_row *row, int per_user,
                                          const char *where)
{
    return ctlout_fail(ctl, "--per-user %d is below activity %" PRId64 "'s %d and it has orders (%s): a "
                       "user may hold more than %d already, so the limit can only be raised now", per_user,
                       row->id, row->per_user, where, per_user);
}

/* A lower limit would leave users holding more orders than it allows: it is taken only
 * while the sale has no order anywhere. MySQL's rows and Redis's hashes are looked at
 * here; update.lua looks again at each bucket's, atomically with its write, so an order
 * accepted meanwhile refuses the edit instead of slipping under the old limit. */
static int ctlactivityupdate_lowering(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                      const struct bucket_list *list, int per_user)
{
    char sql[256];
    int64_t rows;
    snprintf(sql, sizeof(sql), "SELECT (SELECT COUNT(*) FROM seckill_order WHERE activity_id = %" PRId64
             ") + (SELECT COUNT(*) FROM seckill_order_failed WHERE activity_id = %" PRId64 ")", row->id,
             row->id);
    if (ctldb_ints(ctl, sql, &rows, 1) != CTLRUN_OK)
        return CTLRUN_FAIL;
    if (rows > 0)
        return ctlactivityupdate_refuse_lower(ctl, row, per_user, "in MySQL");
    for (int b = 0; b < list->count; b++) {
        struct keys_set k;
        if (ctlbuckets_keys(ctl, row->id, list, b, &k) != CTLRUN_OK)
            return CTLRUN_FAIL;
        struct ctlredis_cmd cmds[] = {
            { 2, { "HLEN", k.name[KEYS_USERS] } },
            { 2, { "HLEN", k.name[KEYS_ORDERS] } },
        };
        redisReply *r = ctlredis_multi(ctl, cmds, 2);
        if (!r)
            return CTLRUN_FAIL;
        int rc = ctlredis_exec_errors(ctl, r);
        bool ordered = rc == CTLRUN_OK && (r->element[0]->integer > 0 || r->element[1]->integer > 0);
        freeReplyObject(r);
        if (rc != CTLRUN_OK)
            return rc;
        if (ordered)
            return ctlactivityupdate_refuse_lower(ctl, row, per_user, "in Redis");
    }
    return CTLRUN_OK;
}

/* The coupon side, inside the transaction: the window within its validity, and added
 * stock within what it has left (activity rows and the coupon row locked until COMMIT, as
 * activity create does). */
static int ctlactivityupdate_coupon(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                    const struct ctlactivityupdate_target *t, int64_t now)
{
    struct ctlallotment al;
    int rc = ctlallotment_read(ctl, row->coupon_id, now, true, &al);
    if (rc != CTLRUN_OK)
        return rc;
    if ((rc = ctlallotment_within_validity(ctl, &al, t->start_ms, t->end_ms)) != CTLRUN_OK)
        return rc;
    int64_t added = t->stock - row->stock;
    if (added > 0 && !ctlallotment_fits(&al.count, added))
        return ctlout_fail(ctl, "%" PRId64 " more units exceed what coupon %" PRId64 " has left: %" PRId64,
                           added, row->coupon_id, al.remaining);
    return CTLRUN_OK;
}

static int ctlactivityupdate_mysql(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                   const struct ctlactivityupdate_edit *e,
                                   const struct ctlactivityupdate_target *t, int64_t now)
{
    char *qname = e->name ? ctldb_quote(ctl, e->name) : NULL;
    if (e->name && !qname)
        return CTLRUN_FAIL;
    char s_start[32], s_end[32];
    timeparse_format_sql(t->start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(t->end_ms, s_end, sizeof(s_end));
    size_t len = (qname ? strlen(qname) : 0) + 512;
    char *sql = malloc(len);
    if (!sql) {
        free(qname);
        return ctlout_fail(ctl, "out of memory");
    }
    snprintf(sql, len, "UPDATE seckill_activity SET %s%s%sstart_time = '%s', end_time = '%s', "
             "stock = %" PRId64 ", per_user = %d, status = '%s' WHERE id = %" PRId64, qname ? "name = " : "",
             qname ? qname : "", qname ? ", " : "", s_start, s_end, t->stock, t->per_user,
             t->start_ms > now ? "PENDING" : "ACTIVE", row->id);
    free(qname);
    int rc = ctldb_exec(ctl, sql);
    free(sql);
    return rc;
}

/* Units taken back from a bucketed sale come out of bucket 0's stock key (update.lua
 * 'carry'): what it lacks of them is moved there from the other buckets first. */
static int ctlactivityupdate_gather(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                    const struct bucket_list *list, int64_t take)
{
    struct keys_set k;
    if (ctlbuckets_keys(ctl, row->id, list, 0, &k) != CTLRUN_OK)
        return CTLRUN_FAIL;
    const char *get[] = { "GET", k.name[KEYS_STOCK] };
    redisReply *r = ctlredis_argv(ctl, 2, get);
    if (!r)
        return CTLRUN_FAIL;
    int64_t left = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    int64_t moved;
    return left >= take ? CTLRUN_OK : ctlbuckets_gather(ctl, row->id, list, take - left, &moved);
}

/* update.lua on bucket b. CTLRUN_OK with *added; else printed (a refusal changes nothing;
 * *ordered when it was a lower --per-user on a bucket holding orders). */
static int ctlactivityupdate_redis(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                   const struct bucket_list *list, int b,
                                   const struct ctlactivityupdate_edit *e,
                                   const struct ctlactivityupdate_target *t, int64_t *added, bool *unknown,
                                   bool *ordered)
{
    struct keys_set k;
    if (ctlbuckets_keys(ctl, row->id, list, b, &k) != CTLRUN_OK)
        return CTLRUN_FAIL;
    char s_start[24] = "", s_end[24] = "", s_stock[24] = "", s_per_user[8] = "";
    if (e->has_start)
        snprintf(s_start, sizeof(s_start), "%" PRId64, t->start_ms);
    if (e->has_end)
        snprintf(s_end, sizeof(s_end), "%" PRId64, t->end_ms);
    if (e->has_stock)
        snprintf(s_stock, sizeof(s_stock), "%" PRId64, t->stock);
    if (e->has_per_user)
        snprintf(s_per_user, sizeof(s_per_user), "%d", t->per_user);
    const char *keys[4] = { k.name[KEYS_ACTIVITY], k.name[KEYS_STOCK], k.name[KEYS_USERS],
                            k.name[KEYS_ORDERS] };
    const char *args[6] = { e->name ? e->name : "", s_start, s_end, s_stock,
                            b == 0 ? "carry" : "describe", s_per_user };
    redisReply *r = ctlredis_script(ctl, LUASCRIPT_UPDATE, 4, keys, 6, args);
    if (!r) {
        *unknown = true;  /* sent, maybe applied: only a repeat can tell */
        return CTLRUN_FAIL;
    }
    int rc = CTLRUN_FAIL;
    bool array = r->type == REDIS_REPLY_ARRAY;
    const char *verdict = array && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_STRING
                              ? r->element[0]->str : "";
    const char *detail = array && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING
                             ? r->element[1]->str : "";
    char at[40] = "";
    if (detail[0] && strcmp(verdict, "SHORT") != 0)
        timeparse_format(strtoll(detail, NULL, 10), at, sizeof(at));
    if (strcmp(verdict, "OK") == 0 && r->elements == 3 && r->element[1]->type == REDIS_REPLY_INTEGER) {
        *added = r->element[1]->integer;
        rc = CTLRUN_OK;
    } else if (strcmp(verdict, "MISSING") == 0) {
        ctlout_fail(ctl, "activity %" PRId64 " is not warmed in Redis: run 'seckillctl activity warmup %"
                    PRId64 "' first", row->id, row->id);
    } else if (strcmp(verdict, "NOKEY") == 0) {
        ctlout_fail(ctl, "activity %" PRId64 " has no stock key in Redis: run 'seckillctl activity warmup %"
                    PRId64 "' first", row->id, row->id);
    } else if (strcmp(verdict, "SHORT") == 0) {
        ctlout_fail(ctl, "only %s unit(s) of activity %" PRId64 " are unsold and unreserved%s: that many "
                    "can be taken back now", detail, row->id,
                    list->count > 1 ? " (its other buckets' moved to bucket 0)" : "");
    } else if (strcmp(verdict, "STARTED") == 0) {
        ctlout_fail(ctl, "activity %" PRId64 " started at %s: its start can no longer move", row->id, at);
    } else if (strcmp(verdict, "ENDED") == 0) {
        ctlout_fail(ctl, "activity %" PRId64 " ended at %s: an ended sale is not edited", row->id, at);
    } else if (strcmp(verdict, "PAST") == 0) {
        ctlout_fail(ctl, "the new time is not after Redis's clock (%s)", at);
    } else if (strcmp(verdict, "ORDERED") == 0) {
        *ordered = true;
        ctlactivityupdate_refuse_lower(ctl, row, t->per_user, "in Redis");
    } else if (strcmp(verdict, "WINDOW") == 0) {
        ctlout_fail(ctl, "the end must be after the start");
    } else if (strcmp(verdict, "CANCELLED") == 0 || strcmp(verdict, "ARCHIVED") == 0) {
        ctlout_fail(ctl, "activity %" PRId64 " is %s in Redis", row->id,
                    verdict[0] == 'C' ? "cancelled" : "archived");
    } else {
        ctlout_fail(ctl, "update.lua: unexpected answer");
    }
    freeReplyObject(r);
    return rc;
}

static int ctlactivityupdate_print(struct ctlrun *ctl, const struct ctlactivity_row *before,
                                   const struct ctlactivity_row *after, int64_t added)
{
    char start[40], end[40];
    timeparse_format(after->start_ms, start, sizeof(start));
    timeparse_format(after->end_ms, end, sizeof(end));
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)after->id);
        cJSON_AddStringToObject(obj, "name", after->name);
        cJSON_AddStringToObject(obj, "start", start);
        cJSON_AddStringToObject(obj, "end", end);
        cJSON_AddNumberToObject(obj, "stock", (double)after->stock);
        cJSON_AddNumberToObject(obj, "perUser", after->per_user);
        cJSON_AddNumberToObject(obj, "added", (double)added);
        cJSON_AddStringToObject(obj, "status", ctlactivity_status_at(after, clock_wall_ms()));
        return ctlout_json(ctl, obj);
    }
    printf("activity %" PRId64 " updated: '%s', %s .. %s, stock %" PRId64 ", per user %d", after->id,
           after->name, start, end, after->stock, after->per_user);
    if (added > 0)
        printf(" (%" PRId64 " more on sale now)", added);
    else if (added < 0)
        printf(" (%" PRId64 " taken back to coupon %" PRId64 ")", -added, before->coupon_id);
    printf("\n");
    return CTLRUN_OK;
}

int ctlactivityupdate_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { NAME, START, END, STOCK, PER_USER, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [NAME] = { "--name", false, NULL },
        [START] = { "--start", false, NULL },
        [END] = { "--end", false, NULL },
        [STOCK] = { "--stock", false, NULL },
        [PER_USER] = { "--per-user", false, NULL },
    };
    const char *pos[1];
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, pos, 1, 1, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t id, per_user = 0, now = clock_wall_ms();
    struct ctlactivityupdate_edit e = { 0 };
    if ((rc = ctlargs_id(ctl, "activity id", pos[0], &id)) != CTLRUN_OK ||
        (opts[NAME].value && (rc = ctlargs_name(ctl, "--name", opts[NAME].value)) != CTLRUN_OK) ||
        (opts[START].value && (rc = ctlargs_time(ctl, "--start", opts[START].value, now, &e.start_ms)) !=
                                  CTLRUN_OK) ||
        (opts[END].value &&
         (rc = ctlargs_time(ctl, "--end", opts[END].value, now, &e.end_ms)) != CTLRUN_OK) ||
        (opts[STOCK].value && (rc = ctlactivityupdate_stock_arg(ctl, opts[STOCK].value, &e)) != CTLRUN_OK) ||
        (opts[PER_USER].value && (rc = ctlargs_count(ctl, "--per-user", opts[PER_USER].value, 1,
                                                     HOLDER_MAX_SLOT, &per_user)) != CTLRUN_OK))
        return rc;
    e.has_per_user = opts[PER_USER].value != NULL;
    e.per_user = (int)per_user;
    e.name = opts[NAME].value;
    e.has_start = opts[START].value != NULL;
    e.has_end = opts[END].value != NULL;
    if (!e.name && !e.has_start && !e.has_end && !e.has_stock && !e.has_per_user)
        return ctlout_usage_error(ctl, "nothing to change: give --name, --start, --end, --stock or "
                                  "--per-user");
    if (!ctlredis_conn(ctl))
        return CTLRUN_FAIL;

    struct ctlactivity_row row;
    struct ctlactivityupdate_target t;
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT id FROM seckill_activity WHERE id = %" PRId64 " FOR UPDATE", id);
    if ((rc = ctldb_exec(ctl, "START TRANSACTION")) != CTLRUN_OK)
        return rc;
    /* Locked first, read after: the row cannot change (a consumer's sold_count, another
     * edit) between the checks and the COMMIT. */
    MYSQL_RES *locked = ctldb_query(ctl, sql);
    if (locked)
        mysql_free_result(locked);
    struct bucket_list list;
    int64_t added = 0;
    bool unknown = false, ordered = false;
    rc = locked ? ctlactivity_load(ctl, id, &row) : CTLRUN_FAIL;
    if (rc == CTLRUN_OK)
        rc = ctlactivityupdate_check(ctl, &row, &e, now, &t);
    if (rc == CTLRUN_OK)
        rc = ctlactivityupdate_coupon(ctl, &row, &t, now);
    if (rc == CTLRUN_OK)
        rc = ctlactivity_buckets(ctl, &row, &list);
    if (rc == CTLRUN_OK && t.per_user < row.per_user)
        rc = ctlactivityupdate_lowering(ctl, &row, &list, t.per_user);
    if (rc == CTLRUN_OK)
        rc = ctlactivityupdate_mysql(ctl, &row, &e, &t, now);
    if (rc == CTLRUN_OK && e.has_stock && t.stock < row.stock && list.count > 1)
        rc = ctlactivityupdate_gather(ctl, &row, &list, row.stock - t.stock);
    if (rc == CTLRUN_OK)
        rc = ctlactivityupdate_redis(ctl, &row, &list, 0, &e, &t, &added, &unknown, &ordered);
    if (rc == CTLRUN_OK && (rc = ctldb_exec(ctl, "COMMIT")) != CTLRUN_OK)
        unknown = true;
    if (rc != CTLRUN_OK) {
        char err[256];
        db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
        if (unknown)
            ctlout_note(ctl, "activity %" PRId64 ": Redis may hold the edit while MySQL does not: run the "
                        "same command again to finish it (it sets targets, so a repeat lands the same)", id);
        return rc;
    }
    /* The other buckets' hashes describe the sale too (their own stock keys keep their
     * units: the rebalance moves stock between buckets). */
    for (int b = 1; b < list.count; b++) {
        int64_t none;
        rc = ctlactivityupdate_redis(ctl, &row, &list, b, &e, &t, &none, &unknown, &ordered);
        if (rc != CTLRUN_OK) {
            if (ordered)
                ctlout_note(ctl, "activity %" PRId64 " is updated but its bucket %d took an order meanwhile "
                            "and keeps per user %d: run it again with --per-user %d to make them agree",
                            id, b, row.per_user, row.per_user);
            else
                ctlout_note(ctl, "activity %" PRId64 " is updated but its bucket %d is not: run the same "
                            "command again to finish it", id, b);
            return rc;
        }
    }
    struct ctlactivity_row after;
    if ((rc = ctlactivity_load(ctl, id, &after)) != CTLRUN_OK)
        return rc;
    return ctlactivityupdate_print(ctl, &row, &after, added);
}
