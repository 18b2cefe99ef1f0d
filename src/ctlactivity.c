#include "ctlactivity.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "keys.h"
#include "orderno.h"
#include "timeparse.h"

/* INT UNSIGNED column. */
#define CTLACTIVITY_MAX_STOCK 4294967295LL
/* Orders per HSET while rebuilding the per-user and order-status hashes. */
#define CTLACTIVITY_CHUNK 500
/* A warmup that keeps losing its WATCH to a concurrent warmup gives up after this. */
#define CTLACTIVITY_WARM_ATTEMPTS 3

/* ---- the row ---------------------------------------------------------------------- */

int ctlactivity_load(struct ctl *ctl, int64_t id, struct ctlactivity_row *row)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT id, coupon_id, stock, sold_count, " CTL_SQL_MS("start_time") ", "
             CTL_SQL_MS("end_time") ", name, status FROM seckill_activity WHERE id = %" PRId64,
             id);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        return ctl_fail(ctl, "activity %" PRId64 " does not exist", id);
    }
    memset(row, 0, sizeof(*row));
    row->id = ctl_db_int(r[0]);
    row->coupon_id = ctl_db_int(r[1]);
    row->stock = ctl_db_int(r[2]);
    row->sold_count = ctl_db_int(r[3]);
    row->start_ms = ctl_db_int(r[4]);
    row->end_ms = ctl_db_int(r[5]);
    snprintf(row->name, sizeof(row->name), "%s", r[6] ? r[6] : "");
    snprintf(row->status, sizeof(row->status), "%s", r[7] ? r[7] : "");
    mysql_free_result(res);
    return CTL_OK;
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

/* ---- warmup ------------------------------------------------------------------------- */

struct ctlactivity_keys {
    char activity[KEYS_LEN], stock[KEYS_LEN], users[KEYS_LEN], orders[KEYS_LEN];
    char resv[KEYS_LEN], queued[KEYS_LEN], claimed[KEYS_LEN];
};

static void ctlactivity_keys(const struct config *cfg, int64_t id, struct ctlactivity_keys *k)
{
    keys_activity(k->activity, sizeof(k->activity), cfg, KEYS_ACTIVITY, id);
    keys_activity(k->stock, sizeof(k->stock), cfg, KEYS_STOCK, id);
    keys_activity(k->users, sizeof(k->users), cfg, KEYS_USERS, id);
    keys_activity(k->orders, sizeof(k->orders), cfg, KEYS_ORDERS, id);
    keys_activity(k->resv, sizeof(k->resv), cfg, KEYS_RESERVED, id);
    keys_activity(k->queued, sizeof(k->queued), cfg, KEYS_QUEUED, id);
    keys_activity(k->claimed, sizeof(k->claimed), cfg, KEYS_CLAIMED, id);
}

/* The activity hash, as the gateway's cache and the execute script read it. */
struct ctlactivity_meta {
    char id[24], coupon[24], stock[24], start[24], end[24];
    const char *argv[14];
};

static void ctlactivity_meta(const struct ctlactivity_row *row, const char *key,
                             struct ctlactivity_meta *m)
{
    snprintf(m->id, sizeof(m->id), "%" PRId64, row->id);
    snprintf(m->coupon, sizeof(m->coupon), "%" PRId64, row->coupon_id);
    snprintf(m->stock, sizeof(m->stock), "%" PRId64, row->stock);
    snprintf(m->start, sizeof(m->start), "%" PRId64, row->start_ms);
    snprintf(m->end, sizeof(m->end), "%" PRId64, row->end_ms);
    const char *argv[14] = {
        "HSET", key, "name", row->name, "couponId", m->coupon, "stock", m->stock,
        "start", m->start, "end", m->end,
        "status", ctlactivity_status_at(row, ctl_now_ms()),
    };
    memcpy(m->argv, argv, sizeof(argv));
}

/* One command inside MULTI: Redis must answer QUEUED. */
static int ctlactivity_queue(struct ctl *ctl, redisContext *c, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r)
        return ctl_fail(ctl, "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
    int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "QUEUED") == 0;
    if (!ok)
        ctl_fail(ctl, "redis %s: %s", argv[0], r->type == REDIS_REPLY_ERROR ? r->str : "not queued");
    freeReplyObject(r);
    return ok ? CTL_OK : CTL_FAIL;
}

static void ctlactivity_discard(redisContext *c)
{
    redisReply *r = redisCommand(c, "DISCARD");
    if (r)
        freeReplyObject(r);
}

/* A chunk of order rows on their way into two HSETs. */
struct ctlactivity_chunk {
    size_t n;
    char order_no[CTLACTIVITY_CHUNK][ORDERNO_LEN];
    char user[CTLACTIVITY_CHUNK][24];
    const char *argv[2 + 2 * CTLACTIVITY_CHUNK];
};

static int ctlactivity_flush_chunk(struct ctl *ctl, redisContext *c,
                                   const struct ctlactivity_keys *k, struct ctlactivity_chunk *ch)
{
    if (ch->n == 0)
        return CTL_OK;
    int argc = (int)(2 + 2 * ch->n);
    ch->argv[0] = "HSET";
    ch->argv[1] = k->users;
    for (size_t i = 0; i < ch->n; i++) {
        ch->argv[2 + 2 * i] = ch->user[i];
        ch->argv[3 + 2 * i] = ch->order_no[i];
    }
    if (ctlactivity_queue(ctl, c, argc, ch->argv) != CTL_OK)
        return CTL_FAIL;
    ch->argv[1] = k->orders;
    for (size_t i = 0; i < ch->n; i++) {
        ch->argv[2 + 2 * i] = ch->order_no[i];
        ch->argv[3 + 2 * i] = "SUCCESS";
    }
    if (ctlactivity_queue(ctl, c, argc, ch->argv) != CTL_OK)
        return CTL_FAIL;
    ch->n = 0;
    return CTL_OK;
}

enum { CTLACTIVITY_RETRY = 3 };

/* Any error element in an EXEC answer (a key of the wrong type). */
static int ctlactivity_exec_errors(struct ctl *ctl, const redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            return ctl_fail(ctl, "redis: %s", r->element[i]->str);
    return CTL_OK;
}

/* The stock key is missing: the Redis side of the sale is rebuilt from MySQL, the one
 * durable record, inside one MULTI that the WATCH on the stock key aborts if another
 * warmup creates the key meanwhile. Reservations and queue marks left in a Redis that
 * lost its stock key cannot be trusted and are dropped; orders still in Kafka are
 * claimed again by the consumer's confirm script against the rebuilt stock. */
static int ctlactivity_rebuild(struct ctl *ctl, redisContext *c, const struct ctlactivity_row *row,
                               const struct ctlactivity_keys *k, char *report, size_t reportlen)
{
    redisReply *r = redisCommand(c, "MULTI");
    if (!r || r->type != REDIS_REPLY_STATUS) {
        ctl_fail(ctl, "redis MULTI: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        return CTL_FAIL;
    }
    freeReplyObject(r);

    int rc = CTL_FAIL;
    MYSQL_RES *res = NULL;
    struct ctlactivity_chunk *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        ctl_fail(ctl, "out of memory");
        goto out;
    }
    const char *del[] = { "DEL", k->users, k->orders, k->resv, k->queued, k->claimed };
    if (ctlactivity_queue(ctl, c, 6, del) != CTL_OK)
        goto out;

    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT order_no, user_id FROM seckill_order WHERE activity_id = %" PRId64,
             row->id);
    res = ctl_db_stream(ctl, sql);
    if (!res)
        goto out;
    int64_t orders = 0;
    MYSQL_ROW mr;
    while ((mr = mysql_fetch_row(res))) {
        if (!mr[0] || !mr[1] || strlen(mr[0]) >= ORDERNO_LEN || strlen(mr[1]) >= sizeof(ch->user[0])) {
            ctl_fail(ctl, "activity %" PRId64 ": malformed seckill_order row", row->id);
            goto out;
        }
        strcpy(ch->order_no[ch->n], mr[0]);
        strcpy(ch->user[ch->n], mr[1]);
        ch->n++;
        orders++;
        if (ch->n == CTLACTIVITY_CHUNK && ctlactivity_flush_chunk(ctl, c, k, ch) != CTL_OK)
            goto out;
    }
    if (mysql_errno(ctl->db)) {
        ctl_fail(ctl, "mysql: %s", mysql_error(ctl->db));
        goto out;
    }
    mysql_free_result(res);
    res = NULL;
    if (ctlactivity_flush_chunk(ctl, c, k, ch) != CTL_OK)
        goto out;

    int64_t left = row->stock - orders;
    if (left < 0) {
        ctl_note(ctl, "activity %" PRId64 ": %" PRId64 " orders in MySQL exceed the stock of %" PRId64
                 " (oversold); stock set to 0", row->id, orders, row->stock);
        left = 0;
    }
    char s_left[24], s_id[24];
    snprintf(s_left, sizeof(s_left), "%" PRId64, left);
    snprintf(s_id, sizeof(s_id), "%" PRId64, row->id);
    struct ctlactivity_meta meta;
    ctlactivity_meta(row, k->activity, &meta);
    const char *set[] = { "SET", k->stock, s_left };
    const char *sadd[] = { "SADD", KEYS_ACTIVITIES, s_id };
    if (ctlactivity_queue(ctl, c, 3, set) != CTL_OK || ctlactivity_queue(ctl, c, 14, meta.argv) != CTL_OK ||
        ctlactivity_queue(ctl, c, 3, sadd) != CTL_OK)
        goto out;

    r = redisCommand(c, "EXEC");
    if (!r) {
        ctl_fail(ctl, "redis EXEC: %s", c->errstr);
        free(ch);
        return CTL_FAIL;
    }
    if (r->type == REDIS_REPLY_NIL) {
        rc = CTLACTIVITY_RETRY;
    } else if (r->type != REDIS_REPLY_ARRAY) {
        rc = ctl_fail(ctl, "redis EXEC: %s", r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    } else if ((rc = ctlactivity_exec_errors(ctl, r)) == CTL_OK) {
        snprintf(report, reportlen, "stock set to %" PRId64 " (stock %" PRId64 ", %" PRId64
                 " orders rebuilt from MySQL)", left, row->stock, orders);
    }
    freeReplyObject(r);
    free(ch);
    return rc;

out:
    if (res)
        mysql_free_result(res);
    free(ch);
    ctlactivity_discard(c);
    return CTL_FAIL;
}

/* The stock key exists: the sale may be live, so only the description is refreshed and
 * the stock, the users and the orders are left as they are. */
static int ctlactivity_refresh(struct ctl *ctl, const struct ctlactivity_row *row,
                               const struct ctlactivity_keys *k, char *report, size_t reportlen)
{
    struct ctlactivity_meta meta;
    ctlactivity_meta(row, k->activity, &meta);
    char s_id[24];
    snprintf(s_id, sizeof(s_id), "%" PRId64, row->id);
    struct ctl_redis_cmd cmds[3] = {
        { 14, { 0 } },
        { 3, { "SADD", KEYS_ACTIVITIES, s_id } },
        { 2, { "GET", k->stock } },
    };
    memcpy(cmds[0].argv, meta.argv, sizeof(meta.argv));
    redisReply *r = ctl_redis_multi(ctl, cmds, 3);
    if (!r)
        return CTL_FAIL;
    int rc = ctlactivity_exec_errors(ctl, r);
    int64_t left;
    if (rc == CTL_OK && ctl_redis_int(r->element[2], &left) == 0)
        snprintf(report, reportlen, "stock key kept: %" PRId64 " left", left);
    else if (rc == CTL_OK)
        snprintf(report, reportlen, "stock key kept (it vanished meanwhile: run warmup again)");
    freeReplyObject(r);
    return rc;
}

int ctlactivity_warm(struct ctl *ctl, const struct ctlactivity_row *row, char *report,
                     size_t reportlen)
{
    redisContext *c = ctl_redis(ctl);
    if (!c)
        return CTL_FAIL;
    struct ctlactivity_keys k;
    ctlactivity_keys(&ctl->cfg, row->id, &k);
    for (int attempt = 0; attempt < CTLACTIVITY_WARM_ATTEMPTS; attempt++) {
        const char *watch[] = { "WATCH", k.stock };
        redisReply *r = ctl_redis_argv(ctl, 2, watch);
        if (!r)
            return CTL_FAIL;
        freeReplyObject(r);
        const char *exists[] = { "EXISTS", k.stock };
        r = ctl_redis_argv(ctl, 2, exists);
        if (!r)
            return CTL_FAIL;
        bool present = r->type == REDIS_REPLY_INTEGER && r->integer > 0;
        freeReplyObject(r);
        if (present) {
            const char *unwatch[] = { "UNWATCH" };
            r = ctl_redis_argv(ctl, 1, unwatch);
            if (!r)
                return CTL_FAIL;
            freeReplyObject(r);
            return ctlactivity_refresh(ctl, row, &k, report, reportlen);
        }
        int rc = ctlactivity_rebuild(ctl, c, row, &k, report, reportlen);
        if (rc != CTLACTIVITY_RETRY)
            return rc;
    }
    return ctl_fail(ctl, "activity %" PRId64 ": the stock key kept changing during warmup; "
                    "is another warmup running?", row->id);
}

int ctlactivity_warmup(struct ctl *ctl, int argc, char **argv)
{
    const char *pos[1];
    int64_t id;
    int rc = ctl_parse_opts(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    if (rc != CTL_OK || (rc = ctl_parse_id(ctl, "activity id", pos[0], &id)) != CTL_OK)
        return rc;
    struct ctlactivity_row row;
    if ((rc = ctlactivity_load(ctl, id, &row)) != CTL_OK)
        return rc;
    char report[256] = "";
    if ((rc = ctlactivity_warm(ctl, &row, report, sizeof(report))) != CTL_OK)
        return rc;
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "status", ctlactivity_status_at(&row, ctl_now_ms()));
        cJSON_AddStringToObject(obj, "warmup", report);
        return ctl_print_json(ctl, obj);
    }
    printf("activity %" PRId64 " warmed: %s\n", id, report);
    return CTL_OK;
}

/* ---- create ------------------------------------------------------------------------- */

struct ctlactivity_coupon {
    int64_t total, issued, start_ms, end_ms;
    char name[CTLACTIVITY_NAME_BYTES];
    char status[16];
};

/* Stock of the coupon already promised to its other activities. A live or future sale
 * holds its unsold stock. An ended one holds only what may still turn into orders: stock
 * Redis has handed out that MySQL has not recorded yet (reservations, orders queued in
 * Kafka). Its stock key gone, nothing more can be confirmed, so it holds nothing. Sold
 * orders are already in issued_count. */
static int ctlactivity_allotted(struct ctl *ctl, int64_t coupon_id, int64_t now_ms,
                                int64_t *allotted)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT id, stock, sold_count, " CTL_SQL_MS("end_time") " FROM seckill_activity "
             "WHERE coupon_id = %" PRId64 " AND status <> 'CANCELLED' FOR UPDATE",
             coupon_id);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    int64_t sum = 0;
    MYSQL_ROW r;
    while ((r = mysql_fetch_row(res))) {
        int64_t id = ctl_db_int(r[0]);
        int64_t unsold = ctl_db_int(r[1]) - ctl_db_int(r[2]);
        if (unsold < 0)
            unsold = 0;
        if (ctl_db_int(r[3]) > now_ms) {
            sum += unsold;
            continue;
        }
        char key[KEYS_LEN];
        keys_activity(key, sizeof(key), &ctl->cfg, KEYS_STOCK, id);
        const char *get[] = { "GET", key };
        redisReply *g = ctl_redis_argv(ctl, 2, get);
        if (!g) {
            mysql_free_result(res);
            return CTL_FAIL;
        }
        int64_t left;
        if (ctl_redis_int(g, &left) == 0) {
            int64_t in_flight = unsold - (left > 0 ? left : 0);
            sum += in_flight < 0 ? 0 : in_flight;
        }
        freeReplyObject(g);
    }
    mysql_free_result(res);
    *allotted = sum;
    return CTL_OK;
}

static int ctlactivity_lock_coupon(struct ctl *ctl, int64_t coupon_id, struct ctlactivity_coupon *cp)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT name, status, total_count, issued_count, " CTL_SQL_MS("start_time") ", "
             CTL_SQL_MS("end_time") " FROM coupon WHERE id = %" PRId64 " FOR UPDATE",
             coupon_id);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (!r) {
        mysql_free_result(res);
        return ctl_fail(ctl, "coupon %" PRId64 " does not exist", coupon_id);
    }
    snprintf(cp->name, sizeof(cp->name), "%s", r[0] ? r[0] : "");
    snprintf(cp->status, sizeof(cp->status), "%s", r[1] ? r[1] : "");
    cp->total = ctl_db_int(r[2]);
    cp->issued = ctl_db_int(r[3]);
    cp->start_ms = ctl_db_int(r[4]);
    cp->end_ms = ctl_db_int(r[5]);
    mysql_free_result(res);
    return CTL_OK;
}

/* Everything between START TRANSACTION and COMMIT; the caller rolls back on failure. */
static int ctlactivity_insert(struct ctl *ctl, int64_t coupon_id, int64_t stock, int64_t start_ms,
                              int64_t end_ms, const char *given_name, int64_t now_ms, int64_t *id)
{
    struct ctlactivity_coupon cp;
    int rc = ctlactivity_lock_coupon(ctl, coupon_id, &cp);
    if (rc != CTL_OK)
        return rc;
    if (strcmp(cp.status, "ACTIVE") != 0)
        return ctl_fail(ctl, "coupon %" PRId64 " is %s, not ACTIVE", coupon_id, cp.status);
    if (start_ms < cp.start_ms || end_ms > cp.end_ms) {
        char a[40], b[40], c[40], d[40];
        timeparse_format(start_ms, a, sizeof(a));
        timeparse_format(end_ms, b, sizeof(b));
        timeparse_format(cp.start_ms, c, sizeof(c));
        timeparse_format(cp.end_ms, d, sizeof(d));
        return ctl_fail(ctl, "window %s .. %s is not inside coupon %" PRId64 "'s validity %s .. %s",
                        a, b, coupon_id, c, d);
    }
    int64_t allotted;
    if ((rc = ctlactivity_allotted(ctl, coupon_id, now_ms, &allotted)) != CTL_OK)
        return rc;
    int64_t remaining = cp.total - cp.issued - allotted;
    if (stock > remaining)
        return ctl_fail(ctl,
                        "--stock %" PRId64 " exceeds what coupon %" PRId64 " has left: %" PRId64
                        " (total %" PRId64 " - issued %" PRId64 " - %" PRId64
                        " allotted to its other activities)",
                        stock, coupon_id, remaining < 0 ? 0 : remaining, cp.total, cp.issued,
                        allotted);

    char name[CTLACTIVITY_NAME_BYTES + 16];
    if (given_name) {
        snprintf(name, sizeof(name), "%s", given_name);
    } else {
        /* " seckill" is 8 characters of the 128 the column holds. */
        ctl_utf8_truncate(cp.name, 120);
        snprintf(name, sizeof(name), "%s seckill", cp.name);
    }
    char *qname = ctl_db_quote(ctl, name);
    if (!qname)
        return CTL_FAIL;
    char s_start[32], s_end[32];
    timeparse_format_sql(start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(end_ms, s_end, sizeof(s_end));
    size_t sqllen = strlen(qname) + 512;
    char *sql = malloc(sqllen);
    if (!sql) {
        free(qname);
        return ctl_fail(ctl, "out of memory");
    }
    snprintf(sql, sqllen,
             "INSERT INTO seckill_activity (name, coupon_id, stock, start_time, end_time, status) "
             "VALUES (%s, %" PRId64 ", %" PRId64 ", '%s', '%s', '%s')",
             qname, coupon_id, stock, s_start, s_end, start_ms > now_ms ? "PENDING" : "ACTIVE");
    free(qname);
    rc = ctl_db_exec(ctl, sql);
    free(sql);
    if (rc != CTL_OK)
        return rc;
    *id = (int64_t)mysql_insert_id(ctl->db);
    return ctl_db_exec(ctl, "COMMIT");
}

int ctlactivity_create(struct ctl *ctl, int argc, char **argv)
{
    enum { COUPON, STOCK, START, END, NAME, NOPTS };
    struct ctl_opt opts[NOPTS] = {
        [COUPON] = { "--coupon", true, NULL },
        [STOCK] = { "--stock", true, NULL },
        [START] = { "--start", true, NULL },
        [END] = { "--end", true, NULL },
        [NAME] = { "--name", false, NULL },
    };
    int rc = ctl_parse_opts(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    int64_t coupon_id, stock, start_ms, end_ms, now = ctl_now_ms();
    if ((rc = ctl_parse_id(ctl, "--coupon", opts[COUPON].value, &coupon_id)) != CTL_OK ||
        (rc = ctl_parse_count(ctl, "--stock", opts[STOCK].value, 1, CTLACTIVITY_MAX_STOCK, &stock)) != CTL_OK ||
        (rc = ctl_parse_time(ctl, "--start", opts[START].value, now, &start_ms)) != CTL_OK ||
        (rc = ctl_parse_time(ctl, "--end", opts[END].value, now, &end_ms)) != CTL_OK)
        return rc;
    if (opts[NAME].value && (rc = ctl_parse_name(ctl, "--name", opts[NAME].value)) != CTL_OK)
        return rc;
    if (end_ms <= start_ms)
        return ctl_usage_error(ctl, "--end must be after --start");
    if (end_ms <= now)
        return ctl_usage_error(ctl, "--end '%s' is in the past: the sale would already be over",
                               opts[END].value);
    if (end_ms - start_ms > ctl->cfg.max_seckill_duration * 1000)
        return ctl_usage_error(ctl,
                               "window of %" PRId64 " s exceeds seckill.max-seckill-duration (%" PRId64 " s)",
                               (end_ms - start_ms + 999) / 1000, ctl->cfg.max_seckill_duration);

    /* Redis is needed for the warmup: better refused now than created cold. */
    if (!ctl_redis(ctl))
        return CTL_FAIL;
    if ((rc = ctl_db_exec(ctl, "START TRANSACTION")) != CTL_OK)
        return rc;
    int64_t id = 0;
    rc = ctlactivity_insert(ctl, coupon_id, stock, start_ms, end_ms, opts[NAME].value, now, &id);
    if (rc != CTL_OK) {
        char err[256];
        db_exec(ctl->db, "ROLLBACK", err, sizeof(err));
        return rc;
    }

    struct ctlactivity_row row;
    memset(&row, 0, sizeof(row));
    char report[256] = "";
    rc = ctlactivity_load(ctl, id, &row);
    if (rc == CTL_OK)
        rc = ctlactivity_warm(ctl, &row, report, sizeof(report));
    if (rc != CTL_OK)
        ctl_note(ctl, "activity %" PRId64 " was created but is not warmed: run "
                 "'seckillctl activity warmup %" PRId64 "'", id, id);
    else if (!ctl->json)
        ctl_note(ctl, "activity %" PRId64 " warmed: %s", id, report);

    if (ctl->json) {
        char iso_start[40], iso_end[40];
        timeparse_format(start_ms, iso_start, sizeof(iso_start));
        timeparse_format(end_ms, iso_end, sizeof(iso_end));
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", row.name);
        cJSON_AddNumberToObject(obj, "couponId", (double)coupon_id);
        cJSON_AddNumberToObject(obj, "stock", (double)stock);
        cJSON_AddStringToObject(obj, "start", iso_start);
        cJSON_AddStringToObject(obj, "end", iso_end);
        cJSON_AddBoolToObject(obj, "warmed", rc == CTL_OK);
        if (rc == CTL_OK)
            cJSON_AddStringToObject(obj, "warmup", report);
        int prc = ctl_print_json(ctl, obj);
        return rc != CTL_OK ? rc : prc;
    }
    printf("%" PRId64 "\n", id);
    return rc;
}

/* ---- show --------------------------------------------------------------------------- */

struct ctlactivity_live {
    bool warmed;            /* the activity hash exists */
    bool has_stock;         /* the stock key exists */
    int64_t stock_left, reservations, queued, claimed;
    int64_t success, failed, processing, other;
};

/* One MULTI: the numbers add up as of one instant. HVALS is O(orders), fine for an
 * operator's look at one sale. */
static int ctlactivity_live(struct ctl *ctl, int64_t id, struct ctlactivity_live *lv)
{
    struct ctlactivity_keys k;
    ctlactivity_keys(&ctl->cfg, id, &k);
    struct ctl_redis_cmd cmds[] = {
        { 2, { "EXISTS", k.activity } },
        { 2, { "GET", k.stock } },
        { 2, { "ZCARD", k.resv } },
        { 2, { "SCARD", k.queued } },
        { 2, { "SCARD", k.claimed } },
        { 2, { "HVALS", k.orders } },
    };
    redisReply *r = ctl_redis_multi(ctl, cmds, sizeof(cmds) / sizeof(cmds[0]));
    if (!r)
        return CTL_FAIL;
    int rc = ctlactivity_exec_errors(ctl, r);
    if (rc == CTL_OK) {
        memset(lv, 0, sizeof(*lv));
        lv->warmed = r->element[0]->integer > 0;
        lv->has_stock = ctl_redis_int(r->element[1], &lv->stock_left) == 0;
        lv->reservations = r->element[2]->integer;
        lv->queued = r->element[3]->integer;
        lv->claimed = r->element[4]->integer;
        const redisReply *vals = r->element[5];
        for (size_t i = 0; i < vals->elements; i++) {
            const char *v = vals->element[i]->str ? vals->element[i]->str : "";
            if (strcmp(v, "SUCCESS") == 0)
                lv->success++;
            else if (strcmp(v, "FAILED") == 0)
                lv->failed++;
            else if (strcmp(v, "PROCESSING") == 0)
                lv->processing++;
            else
                lv->other++;
        }
    }
    freeReplyObject(r);
    return rc;
}

int ctlactivity_show(struct ctl *ctl, int argc, char **argv)
{
    const char *pos[1];
    int64_t id;
    int rc = ctl_parse_opts(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    if (rc != CTL_OK || (rc = ctl_parse_id(ctl, "activity id", pos[0], &id)) != CTL_OK)
        return rc;
    struct ctlactivity_row row;
    if ((rc = ctlactivity_load(ctl, id, &row)) != CTL_OK)
        return rc;
    char sql[256], coupon_name[CTLACTIVITY_NAME_BYTES] = "?", coupon_type[16] = "?";
    snprintf(sql, sizeof(sql), "SELECT name, type FROM coupon WHERE id = %" PRId64, row.coupon_id);
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW r = mysql_fetch_row(res);
    if (r) {
        snprintf(coupon_name, sizeof(coupon_name), "%s", r[0] ? r[0] : "");
        snprintf(coupon_type, sizeof(coupon_type), "%s", r[1] ? r[1] : "");
    }
    mysql_free_result(res);

    struct ctlactivity_live lv;
    int live_rc = ctlactivity_live(ctl, id, &lv);
    const char *status = ctlactivity_status_at(&row, ctl_now_ms());
    char start[40], end[40];
    timeparse_format(row.start_ms, start, sizeof(start));
    timeparse_format(row.end_ms, end, sizeof(end));

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)row.id);
        cJSON_AddStringToObject(obj, "name", row.name);
        cJSON_AddNumberToObject(obj, "couponId", (double)row.coupon_id);
        cJSON_AddStringToObject(obj, "couponName", coupon_name);
        cJSON_AddStringToObject(obj, "couponType", coupon_type);
        cJSON_AddNumberToObject(obj, "stock", (double)row.stock);
        cJSON_AddNumberToObject(obj, "soldCount", (double)row.sold_count);
        cJSON_AddStringToObject(obj, "start", start);
        cJSON_AddStringToObject(obj, "end", end);
        cJSON_AddNumberToObject(obj, "startMs", (double)row.start_ms);
        cJSON_AddNumberToObject(obj, "endMs", (double)row.end_ms);
        cJSON_AddStringToObject(obj, "status", status);
        if (live_rc == CTL_OK) {
            cJSON *redis = cJSON_AddObjectToObject(obj, "redis");
            cJSON_AddBoolToObject(redis, "warmed", lv.warmed);
            if (lv.has_stock)
                cJSON_AddNumberToObject(redis, "stockLeft", (double)lv.stock_left);
            else
                cJSON_AddNullToObject(redis, "stockLeft");
            cJSON_AddNumberToObject(redis, "reservations", (double)lv.reservations);
            cJSON_AddNumberToObject(redis, "queued", (double)lv.queued);
            cJSON_AddNumberToObject(redis, "claimed", (double)lv.claimed);
            cJSON *orders = cJSON_AddObjectToObject(redis, "orders");
            cJSON_AddNumberToObject(orders, "SUCCESS", (double)lv.success);
            cJSON_AddNumberToObject(orders, "FAILED", (double)lv.failed);
            cJSON_AddNumberToObject(orders, "PROCESSING", (double)lv.processing);
        } else {
            cJSON_AddNullToObject(obj, "redis");
        }
        int prc = ctl_print_json(ctl, obj);
        return live_rc != CTL_OK ? live_rc : prc;
    }

    printf("activity   %" PRId64 " \"%s\"\n", row.id, row.name);
    printf("coupon     %" PRId64 " \"%s\" (%s)\n", row.coupon_id, coupon_name, coupon_type);
    printf("window     %s .. %s (%" PRId64 " s)\n", start, end, (row.end_ms - row.start_ms) / 1000);
    printf("status     %s\n", status);
    printf("stock      %" PRId64 ", sold %" PRId64 " (MySQL)\n", row.stock, row.sold_count);
    if (live_rc != CTL_OK) {
        printf("redis      unreadable (error on stderr)\n");
        return live_rc;
    }
    if (!lv.warmed)
        printf("redis      not warmed: run 'seckillctl activity warmup %" PRId64 "'\n", row.id);
    if (lv.has_stock)
        printf("redis      stock left %" PRId64 ", reservations %" PRId64 ", queued %" PRId64
               ", claimed %" PRId64 "\n",
               lv.stock_left, lv.reservations, lv.queued, lv.claimed);
    else
        printf("redis      no stock key, reservations %" PRId64 ", queued %" PRId64
               ", claimed %" PRId64 "\n",
               lv.reservations, lv.queued, lv.claimed);
    printf("orders     SUCCESS %" PRId64 ", FAILED %" PRId64 ", PROCESSING %" PRId64 "%s\n",
           lv.success, lv.failed, lv.processing, lv.other ? " (and unknown statuses)" : "");
    return CTL_OK;
}
