#include "ctl/ctlactivity.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "store/sqltime.h"

/* ---- the row ---------------------------------------------------------------------- */

#define CTLACTIVITY_COLUMNS                                                                  \
    "id, coupon_id, stock, sold_count, " SQLTIME_MS("start_time") ", " SQLTIME_MS("end_time") \
    ", name, status, bucket_tags, (SELECT c.status FROM coupon c WHERE c.id = coupon_id), "          \
    SQLTIME_MS("archived_at") ", per_user"

static void ctlactivity_parse_row(MYSQL_ROW r, struct ctlactivity_row *row)
{
    memset(row, 0, sizeof(*row));
    row->id = ctldb_int(r[0]);
    row->coupon_id = ctldb_int(r[1]);
    row->stock = ctldb_int(r[2]);
    row->sold_count = ctldb_int(r[3]);
    row->start_ms = ctldb_int(r[4]);
    row->end_ms = ctldb_int(r[5]);
    snprintf(row->name, sizeof(row->name), "%s", r[6] ? r[6] : "");
    snprintf(row->status, sizeof(row->status), "%s", r[7] ? r[7] : "");
    snprintf(row->bucket_tags, sizeof(row->bucket_tags), "%s", r[8] ? r[8] : "");
    row->coupon_inactive = r[9] && strcmp(r[9], "INACTIVE") == 0;
    row->archived = r[10] != NULL;
    row->archived_ms = r[10] ? ctldb_int(r[10]) : 0;
    row->per_user = r[11] ? (int)ctldb_int(r[11]) : 1;
}

int ctlactivity_load(struct ctlrun *ctl, int64_t id, struct ctlactivity_row *row)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT " CTLACTIVITY_COLUMNS " FROM seckill_activity WHERE id = %" PRId64,
             id);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        return ctlout_missing(ctl, "activity %" PRId64 " does not exist", id);
    }
    ctlactivity_parse_row(r, row);
    mysql_free_result(res);
    return CTLRUN_OK;
}

int ctlactivity_list(struct ctlrun *ctl, int64_t coupon_id, bool lock, struct ctlactivity_row **rows,
                     size_t *n)
{
    char sql[512], where[64] = "";
    if (coupon_id > 0)
        snprintf(where, sizeof(where), " WHERE coupon_id = %" PRId64, coupon_id);
    snprintf(sql, sizeof(sql), "SELECT " CTLACTIVITY_COLUMNS " FROM seckill_activity%s ORDER BY id%s",
             where, lock ? " FOR UPDATE" : "");
    *rows = NULL;
    *n = 0;
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    size_t count = (size_t)mysql_num_rows(res);
    struct ctlactivity_row *out = calloc(count + 1, sizeof(*out));
    if (!out) {
        mysql_free_result(res);
        return ctlout_fail(ctl, "out of memory");
    }
    MYSQL_ROW r;
    size_t i = 0;
    while (i < count && (r = mysql_fetch_row(res)))
        ctlactivity_parse_row(r, &out[i++]);
    mysql_free_result(res);
    *rows = out;
    *n = i;
    return CTLRUN_OK;
}

int ctlactivity_check_length(struct ctlrun *ctl, int64_t start_ms, int64_t end_ms)
{
    if (end_ms - start_ms > ctl->cfg.max_seckill_duration * 1000)
        return ctlout_usage_error(ctl,
                                  "window of %" PRId64 " s exceeds seckill.max-seckill-duration "
                                  "(%" PRId64 " s)",
                                  (end_ms - start_ms + 999) / 1000, ctl->cfg.max_seckill_duration);
    return CTLRUN_OK;
}

const char *ctlactivity_status_at(const struct ctlactivity_row *row, int64_t now_ms)
{
    if (strcmp(row->status, "CANCELLED") == 0)
        return "CANCELLED";
    if (now_ms < row->start_ms)
        return "PENDING";
    if (now_ms < row->end_ms)
        return "ACTIVE";
    return "ENDED";
}

bool ctlactivity_is_cancelled(const struct ctlactivity_row *row)
{
    return strcmp(row->status, "CANCELLED") == 0;
}

/* ---- the Redis side ------------------------------------------------------------------ */

void ctlactivity_redis_cmds(const struct keys_set *keys, struct ctlredis_cmd *cmds)
{
    const struct ctlredis_cmd c[CTLACTIVITY_REDIS_CMDS] = {
        { 2, { "EXISTS", keys->name[KEYS_ACTIVITY] } },
        { 3, { "HGET", keys->name[KEYS_ACTIVITY], "status" } },
        { 2, { "GET", keys->name[KEYS_STOCK] } },
        { 3, { "HGET", keys->name[KEYS_ACTIVITY], "returned" } },
        { 2, { "ZCARD", keys->name[KEYS_RESERVED] } },
        { 2, { "SCARD", keys->name[KEYS_QUEUED] } },
        { 2, { "SCARD", keys->name[KEYS_CLAIMED] } },
    };
    memcpy(cmds, c, sizeof(c));
}

int ctlactivity_redis_parse(struct ctlrun *ctl, const redisReply *r, struct ctlactivity_redis *rd)
{
    if (ctlredis_exec_errors(ctl, r) != CTLRUN_OK)
        return CTLRUN_FAIL;
    redisReply **e = r->element;
    memset(rd, 0, sizeof(*rd));
    rd->warmed = e[0]->type == REDIS_REPLY_INTEGER && e[0]->integer > 0;
    rd->cancelled = e[1]->type == REDIS_REPLY_STRING && strcmp(e[1]->str, "CANCELLED") == 0;
    rd->has_stock = ctlredis_int(e[2], &rd->stock_left) == 0;
    if (ctlredis_int(e[3], &rd->returned) != 0 || rd->returned < 0)
        rd->returned = 0;
    rd->reservations = e[4]->integer;
    rd->queued = e[5]->integer;
    rd->claimed = e[6]->integer;
    return CTLRUN_OK;
}

int ctlactivity_buckets(struct ctlrun *ctl, const struct ctlactivity_row *row, struct bucket_list *list)
{
    return ctlbuckets_parse(ctl, row->id, row->bucket_tags, list);
}

static int ctlactivity_read_bucket(struct ctlrun *ctl, const struct keys_set *k, struct ctlactivity_redis *rd)
{
    struct ctlredis_cmd cmds[CTLACTIVITY_REDIS_CMDS];
    ctlactivity_redis_cmds(k, cmds);
    redisReply *r = ctlredis_multi(ctl, cmds, CTLACTIVITY_REDIS_CMDS);
    if (!r)
        return CTLRUN_FAIL;
    int rc = ctlactivity_redis_parse(ctl, r, rd);
    freeReplyObject(r);
    return rc;
}

/* Bucket by bucket: each is one instant of its own master, so a live sale's sum may be a
 * little off; at quiescence (verify's I3) it is exact. */
int ctlactivity_read_redis(struct ctlrun *ctl, const struct ctlactivity_row *row,
                           struct ctlactivity_redis *rd)
{
    struct bucket_list list;
    if (ctlactivity_buckets(ctl, row, &list) != CTLRUN_OK)
        return CTLRUN_FAIL;
    memset(rd, 0, sizeof(*rd));
    for (int b = 0; b < list.count; b++) {
        struct keys_set k;
        struct ctlactivity_redis one;
        if (ctlbuckets_keys(ctl, row->id, &list, b, &k) != CTLRUN_OK ||
            ctlactivity_read_bucket(ctl, &k, &one) != CTLRUN_OK)
            return CTLRUN_FAIL;
        if (b == 0) {
            *rd = one;
            continue;
        }
        rd->warmed = rd->warmed && one.warmed;
        rd->cancelled = rd->cancelled && one.cancelled;
        rd->has_stock = rd->has_stock && one.has_stock;
        rd->stock_left += one.stock_left;
        rd->returned += one.returned;
        rd->reservations += one.reservations;
        rd->queued += one.queued;
        rd->claimed += one.claimed;
    }
    rd->nbuckets = list.count;
    if (ctlbuckets_in_transit(ctl, row->id, &list, &rd->in_transit) != CTLRUN_OK)
        return CTLRUN_FAIL;
    rd->stock_left += rd->in_transit;
    return CTLRUN_OK;
}

static int ctlactivity_cancel_bucket(struct ctlrun *ctl, const struct keys_set *k,
                                     struct ctlactivity_cancelled *out)
{
    const char *keys[] = { k->name[KEYS_ACTIVITY], k->name[KEYS_STOCK] };
    redisReply *r = ctlredis_script(ctl, LUASCRIPT_CANCEL, 2, keys, 0, NULL);
    if (!r)
        return CTLRUN_FAIL;
    memset(out, 0, sizeof(*out));
    int rc = CTLRUN_OK;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == -1) {
        out->warmed = false;
    } else if (r->type == REDIS_REPLY_INTEGER && r->integer == -2) {
        rc = ctlout_fail(ctl, "activity %" PRId64 " is archived in Redis: nothing to cancel", k->activity_id);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER &&
               r->element[2]->type == REDIS_REPLY_INTEGER) {
        out->warmed = true;
        out->moved = r->element[0]->integer;
        out->returned = r->element[1]->integer;
        out->was_cancelled = r->element[2]->integer == 1;
    } else {
        rc = ctlout_fail(ctl, "redis cancel.lua: unexpected reply (is seckill.lua-dir current?)");
    }
    freeReplyObject(r);
    return rc;
}

/* Every bucket is closed first, so that no gateway starts a new transfer ('out' refuses a
 * cancelled bucket); then the transfers already started are delivered, and the buckets
 * cancelled again to take what arrived. */
int ctlactivity_cancel_redis(struct ctlrun *ctl, const struct ctlactivity_row *row,
                             struct ctlactivity_cancelled *out)
{
    struct bucket_list list;
    if (ctlactivity_buckets(ctl, row, &list) != CTLRUN_OK)
        return CTLRUN_FAIL;
    memset(out, 0, sizeof(*out));
    int rounds = list.count > 1 ? 2 : 1;
    for (int round = 0; round < rounds; round++) {
        int64_t returned = 0;
        for (int b = 0; b < list.count; b++) {
            struct keys_set k;
            struct ctlactivity_cancelled one;
            if (ctlbuckets_keys(ctl, row->id, &list, b, &k) != CTLRUN_OK ||
                ctlactivity_cancel_bucket(ctl, &k, &one) != CTLRUN_OK)
                return CTLRUN_FAIL;
            if (round == 0 && b == 0) {
                out->warmed = one.warmed;
                out->was_cancelled = one.was_cancelled;
            }
            out->moved += one.moved;
            returned += one.returned;
        }
        out->returned = returned;
        int64_t arrived;
        if (round + 1 < rounds && ctlbuckets_finish(ctl, row->id, &list, &arrived) != CTLRUN_OK)
            return CTLRUN_FAIL;
    }
    return CTLRUN_OK;
}

int ctlactivity_load_arg(struct ctlrun *ctl, int argc, char **argv, struct ctlactivity_row *row)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "activity id", &id);
    if (rc != CTLRUN_OK)
        return rc;
    return ctlactivity_load(ctl, id, row);
}
