#include "ctl/ctlban.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/keys.h"
#include "common/timeparse.h"
#include "store/sqltime.h"

/* A prune reads at most this many HSCAN pages (of 100 fields) and removes at most this
 * many fields: each ban command does a bounded share of the cleaning. */
#define CTLBAN_PRUNE_PAGES 20
#define CTLBAN_PRUNE_MAX 1000

#define CTLBAN_COLUMNS                                                                                  \
    "id, kind, user_id, cidr, COALESCE(activity_id, 0), " SQLTIME_MS("starts_at") ", "                  \
    SQLTIME_MS("ends_at") ", reason, created_by, " SQLTIME_MS("created_at") ", " SQLTIME_MS("removed_at") \
    ", removed_by"

/* A row's columns (CTLBAN_COLUMNS) into *row; -1 when the row holds no valid ban. */
static int ctlban_parse(MYSQL_ROW r, struct ctlban_row *row)
{
    memset(row, 0, sizeof(*row));
    row->id = ctldb_int(r[0]);
    struct banrecord *rec = &row->rec;
    char err[160];
    if (r[1] && strcmp(r[1], "USER") == 0 && r[2]) {
        rec->kind = BANRECORD_USER;
        rec->user_id = ctldb_int(r[2]);
    } else if (r[1] && strcmp(r[1], "IP") == 0 && r[3] &&
               banrecord_cidr_parse(r[3], &rec->cidr, err, sizeof(err)) == 0) {
        rec->kind = BANRECORD_ADDRESS;
    } else {
        return -1;
    }
    rec->activity_id = ctldb_int(r[4]);
    rec->start_ms = ctldb_int(r[5]);
    rec->end_ms = ctldb_int(r[6]);
    snprintf(row->reason, sizeof(row->reason), "%s", r[7] ? r[7] : "");
    snprintf(row->created_by, sizeof(row->created_by), "%s", r[8] ? r[8] : "");
    row->created_ms = ctldb_int(r[9]);
    row->removed = r[10] != NULL;
    row->removed_ms = ctldb_int(r[10]);
    snprintf(row->removed_by, sizeof(row->removed_by), "%s", r[11] ? r[11] : "");
    return 0;
}

int ctlban_select(struct ctlrun *ctl, const char *tail, struct ctlban_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    size_t len = strlen(CTLBAN_COLUMNS) + strlen(tail) + 64;
    char *sql = malloc(len);
    if (!sql)
        return ctlout_fail(ctl, "out of memory");
    snprintf(sql, len, "SELECT " CTLBAN_COLUMNS " FROM seckill_ban %s", tail);
    MYSQL_RES *res = ctldb_query(ctl, sql);
    free(sql);
    if (!res)
        return CTLRUN_FAIL;
    size_t count = (size_t)mysql_num_rows(res);
    struct ctlban_row *out = calloc(count ? count : 1, sizeof(*out));
    if (!out) {
        mysql_free_result(res);
        return ctlout_fail(ctl, "out of memory");
    }
    int rc = CTLRUN_OK;
    MYSQL_ROW r;
    size_t i = 0;
    while (rc == CTLRUN_OK && i < count && (r = mysql_fetch_row(res))) {
        if (ctlban_parse(r, &out[i]) != 0)
            rc = ctlout_fail(ctl, "ban %s: malformed row in seckill_ban (kind, user_id, cidr)",
                             r[0] ? r[0] : "?");
        i++;
    }
    mysql_free_result(res);
    if (rc != CTLRUN_OK) {
        free(out);
        return rc;
    }
    *rows = out;
    *n = i;
    return CTLRUN_OK;
}

int ctlban_load(struct ctlrun *ctl, int64_t id, struct ctlban_row *row)
{
    char tail[64];
    snprintf(tail, sizeof(tail), "WHERE id = %" PRId64, id);
    struct ctlban_row *rows;
    size_t n;
    int rc = ctlban_select(ctl, tail, &rows, &n);
    if (rc != CTLRUN_OK)
        return rc;
    if (n == 0) {
        free(rows);
        return ctlout_missing(ctl, "ban %" PRId64 " does not exist", id);
    }
    *row = rows[0];
    free(rows);
    return CTLRUN_OK;
}

const char *ctlban_state(const struct ctlban_row *row, int64_t now_ms)
{
    if (row->removed)
        return "removed";
    if (now_ms >= row->rec.end_ms)
        return "expired";
    if (now_ms < row->rec.start_ms)
        return "scheduled";
    return "active";
}

void ctlban_subject(const struct ctlban_row *row, char *buf, size_t len)
{
    char net[BANRECORD_CIDR_LEN];
    if (row->rec.kind == BANRECORD_USER)
        snprintf(buf, len, "user %" PRId64, row->rec.user_id);
    else if (banrecord_cidr_format(&row->rec.cidr, net, sizeof(net)) >= 0)
        snprintf(buf, len, "ip %s", net);
    else
        snprintf(buf, len, "ip ?");
}

static void ctlban_add_time(cJSON *obj, const char *name, int64_t ms, bool present)
{
    char when[40];
    if (present && timeparse_format(ms, when, sizeof(when)) >= 0)
        cJSON_AddStringToObject(obj, name, when);
    else
        cJSON_AddNullToObject(obj, name);
}

void *ctlban_json(const struct ctlban_row *row, int64_t now_ms)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    const struct banrecord *rec = &row->rec;
    cJSON_AddNumberToObject(o, "id", (double)row->id);
    cJSON_AddStringToObject(o, "kind", rec->kind == BANRECORD_USER ? "user" : "ip");
    if (rec->kind == BANRECORD_USER)
        cJSON_AddNumberToObject(o, "userId", (double)rec->user_id);
    else
        cJSON_AddNullToObject(o, "userId");
    char net[BANRECORD_CIDR_LEN];
    if (rec->kind == BANRECORD_ADDRESS && banrecord_cidr_format(&rec->cidr, net, sizeof(net)) >= 0)
        cJSON_AddStringToObject(o, "cidr", net);
    else
        cJSON_AddNullToObject(o, "cidr");
    if (rec->activity_id > 0)
        cJSON_AddNumberToObject(o, "activityId", (double)rec->activity_id);
    else
        cJSON_AddNullToObject(o, "activityId");
    ctlban_add_time(o, "startsAt", rec->start_ms, true);
    ctlban_add_time(o, "endsAt", rec->end_ms, true);
    cJSON_AddStringToObject(o, "state", ctlban_state(row, now_ms));
    if (row->reason[0])
        cJSON_AddStringToObject(o, "reason", row->reason);
    else
        cJSON_AddNullToObject(o, "reason");
    cJSON_AddStringToObject(o, "createdBy", row->created_by);
    ctlban_add_time(o, "createdAt", row->created_ms, true);
    ctlban_add_time(o, "removedAt", row->removed_ms, row->removed);
    if (row->removed)
        cJSON_AddStringToObject(o, "removedBy", row->removed_by);
    else
        cJSON_AddNullToObject(o, "removedBy");
    return o;
}

/* A value no version field held before: the gateways compare it for equality only, and a
 * counter could meet its old value again after the hash was lost and rebuilt. Atomic:
 * seckill-admin's workers publish at once. */
static void ctlban_version(char *buf, size_t len)
{
    static atomic_uint counter;
    snprintf(buf, len, "%" PRId64 "-%ld-%" PRId64 "-%u", clock_wall_ms(), (long)getpid(), clock_mono_us(),
             atomic_fetch_add(&counter, 1));
}

int ctlban_publish(struct ctlrun *ctl, const struct ctlban_row *rows, size_t n, const int64_t *drop,
                   size_t ndrop, bool replace)
{
    size_t ncmds = (replace ? 1 : 0) + n + ndrop + 1;
    struct ctlredis_cmd *cmds = calloc(ncmds, sizeof(*cmds));
    char (*ids)[24] = calloc(n + ndrop + 1, sizeof(*ids));
    char (*values)[BANRECORD_LEN] = calloc(n + 1, sizeof(*values));
    char version[96];
    int rc = CTLRUN_OK;
    if (!cmds || !ids || !values) {
        rc = ctlout_fail(ctl, "out of memory");
        goto out;
    }
    size_t k = 0;
    if (replace)
        cmds[k++] = (struct ctlredis_cmd){ 2, { "DEL", KEYS_BANS } };
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "%" PRId64, rows[i].id);
        if (banrecord_encode(&rows[i].rec, values[i], sizeof(values[i])) < 0) {
            rc = ctlout_fail(ctl, "ban %" PRId64 ": cannot encode its record", rows[i].id);
            goto out;
        }
        cmds[k++] = (struct ctlredis_cmd){ 4, { "HSET", KEYS_BANS, ids[i], values[i] } };
    }
    for (size_t i = 0; i < ndrop; i++) {
        snprintf(ids[n + i], sizeof(ids[n + i]), "%" PRId64, drop[i]);
        cmds[k++] = (struct ctlredis_cmd){ 3, { "HDEL", KEYS_BANS, ids[n + i] } };
    }
    ctlban_version(version, sizeof(version));
    cmds[k++] = (struct ctlredis_cmd){ 4, { "HSET", KEYS_BANS, BANRECORD_VERSION, version } };
    redisReply *r = ctlredis_multi(ctl, cmds, k);
    rc = r ? ctlredis_exec_errors(ctl, r) : CTLRUN_FAIL;
    if (r)
        freeReplyObject(r);
out:
    free(cmds);
    free(ids);
    free(values);
    return rc;
}

long ctlban_prune(struct ctlrun *ctl, int64_t now_ms)
{
    char cursor[32] = "0";
    char **ended = calloc(CTLBAN_PRUNE_MAX + 2, sizeof(*ended));
    size_t nended = 0;
    long removed = -1;
    if (!ended)
        return -1;
    ended[nended++] = (char *)"HDEL";
    ended[nended++] = (char *)KEYS_BANS;
    for (int page = 0; page < CTLBAN_PRUNE_PAGES; page++) {
        const char *argv[] = { "HSCAN", KEYS_BANS, cursor, "COUNT", "100" };
        redisReply *r = ctlredis_argv(ctl, 5, argv);
        if (!r)
            goto out;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            goto out;
        }
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        const redisReply *pairs = r->element[1];
        for (size_t i = 0; i + 1 < pairs->elements && nended < CTLBAN_PRUNE_MAX + 2; i += 2) {
            const redisReply *f = pairs->element[i], *v = pairs->element[i + 1];
            struct banrecord rec;
            if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
                strcmp(f->str, BANRECORD_VERSION) == 0 || banrecord_decode(v->str, &rec) != 0 ||
                rec.end_ms > now_ms)
                continue;  /* in force, or not ours to judge: a malformed field stays for a person */
            if (!(ended[nended] = strdup(f->str))) {
                freeReplyObject(r);
                goto out;
            }
            nended++;
        }
        freeReplyObject(r);
        if (strcmp(cursor, "0") == 0 || nended >= CTLBAN_PRUNE_MAX + 2)
            break;
    }
    removed = 0;
    if (nended > 2) {
        redisReply *r = ctlredis_argv(ctl, (int)nended, (const char **)ended);
        removed = r && r->type == REDIS_REPLY_INTEGER ? (long)r->integer : -1;
        if (r)
            freeReplyObject(r);
    }
out:
    for (size_t i = 2; i < nended; i++)
        free(ended[i]);
    free(ended);
    if (removed < 0)
        ctlout_note(ctl, "the ended bans were not removed from Redis this time (the gateways ignore them)");
    return removed;
}
