#include "ctl/ctlactivitywarmup.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlbuckets.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "common/clock.h"
#include "common/holder.h"
#include "common/keys.h"
#include "common/orderno.h"

/* Orders per HSET while rebuilding the per-user and order-status hashes. */
#define CTLACTIVITYWARMUP_CHUNK 500
/* A warmup that keeps losing its WATCH to a concurrent warmup gives up after this. */
#define CTLACTIVITYWARMUP_ATTEMPTS 3

/* Which bucket a warmup writes (bucket.h): all of an activity's buckets are warmed one
 * after the other, each in a transaction of its own master. */
struct ctlactivitywarmup_part {
    const struct bucket_list *list;
    int b;
    int64_t share;   /* a bucketed rebuild: the stock this bucket gets */
    const char *coupon;  /* the coupon's record (usercoupon.h) for GET /seckill/activities */
};

/* The activity hash, as the gateway's cache and the execute script read it; a bucket's
 * copy also names the bucket and lists them all. */
struct ctlactivitywarmup_meta {
    char id[24], coupon[24], stock[24], start[24], end[24], bucket[8], buckets[8], per_user[8];
    char tags[BUCKET_LIST_LEN];
    const char *argv[28];
    int argc;
};

/* with_stock false leaves the hash's 'stock' as it is: it moves only with the stock key
 * (update.lua), so a refresh must not set it from a MySQL row that an interrupted
 * `activity update` has not reached yet. */
static void ctlactivitywarmup_meta(const struct ctlactivity_row *row, const char *key,
                                   const struct ctlactivitywarmup_part *part, bool with_stock,
                                   struct ctlactivitywarmup_meta *m)
{
    snprintf(m->id, sizeof(m->id), "%" PRId64, row->id);
    snprintf(m->coupon, sizeof(m->coupon), "%" PRId64, row->coupon_id);
    snprintf(m->stock, sizeof(m->stock), "%" PRId64, row->stock);
    snprintf(m->start, sizeof(m->start), "%" PRId64, row->start_ms);
    snprintf(m->end, sizeof(m->end), "%" PRId64, row->end_ms);
    const char *argv[16] = {
        "HSET", key, "name", row->name, "couponId", m->coupon, "stock", m->stock,
        "start", m->start, "end", m->end,
        "status", ctlactivity_status_at(row, clock_wall_ms()),
        "paused", row->coupon_inactive ? "1" : "0",
    };
    memcpy(m->argv, argv, sizeof(argv));
    m->argc = 16;
    if (!with_stock) {
        memmove(m->argv + 6, m->argv + 8, 8 * sizeof(m->argv[0]));  /* drops "stock", its value */
        m->argc -= 2;
    }
    m->argv[m->argc++] = "coupon";
    m->argv[m->argc++] = part->coupon;
    snprintf(m->per_user, sizeof(m->per_user), "%d", row->per_user);
    m->argv[m->argc++] = "perUser";
    m->argv[m->argc++] = m->per_user;
    if (part->list->count > 1) {
        snprintf(m->bucket, sizeof(m->bucket), "%d", part->b);
        snprintf(m->buckets, sizeof(m->buckets), "%d", part->list->count);
        bucket_list_format(part->list, m->tags, sizeof(m->tags));
        const char *more[] = { "bucket", m->bucket, "buckets", m->buckets, "tags", m->tags };
        memcpy(m->argv + m->argc, more, sizeof(more));
        m->argc += 6;
    }
}

/* One command inside MULTI: Redis must answer QUEUED. */
static int ctlactivitywarmup_queue(struct ctlrun *ctl, redisContext *c, int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r)
        return ctlout_fail(ctl, "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
    int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "QUEUED") == 0;
    if (!ok)
        ctlout_fail(ctl, "redis %s: %s", argv[0], r->type == REDIS_REPLY_ERROR ? r->str : "not queued");
    freeReplyObject(r);
    return ok ? CTLRUN_OK : CTLRUN_FAIL;
}

static void ctlactivitywarmup_discard(redisContext *c)
{
    redisReply *r = redisCommand(c, "DISCARD");
    if (r)
        freeReplyObject(r);
}

/* A chunk of order rows on their way into two HSETs. */
struct ctlactivitywarmup_chunk {
    size_t n;
    char order_no[CTLACTIVITYWARMUP_CHUNK][ORDERNO_LEN];
    char holder[CTLACTIVITYWARMUP_CHUNK][HOLDER_LEN];
    const char *argv[2 + 2 * CTLACTIVITYWARMUP_CHUNK];
};

/* The rebuilt users and orders hashes are written under these names first, a chunk per
 * command, and renamed into place in the final transaction: one EXEC holding every order
 * of a big sale would stall Redis for every client (a second per million orders). The
 * suffix keeps the key's {tag}, so they share its slot. */
struct ctlactivitywarmup_staging {
    char users[KEYS_LEN + 8], orders[KEYS_LEN + 8];
};

static int ctlactivitywarmup_staging_names(struct ctlrun *ctl, const struct keys_set *k,
                                           struct ctlactivitywarmup_staging *st)
{
    int a = snprintf(st->users, sizeof(st->users), "%s:warmup", k->name[KEYS_USERS]);
    int b = snprintf(st->orders, sizeof(st->orders), "%s:warmup", k->name[KEYS_ORDERS]);
    if (a < 0 || (size_t)a >= sizeof(st->users) || b < 0 || (size_t)b >= sizeof(st->orders))
        return ctlout_fail(ctl, "activity %" PRId64 ": key too long", k->activity_id);
    return CTLRUN_OK;
}

/* A command outside the transaction that must not fail. */
static int ctlactivitywarmup_plain(struct ctlrun *ctl, redisContext *c, int argc, const char **argv)
{
    redisReply *r = ctlredis_on(ctl, c, argc, argv);
    if (!r)
        return CTLRUN_FAIL;
    freeReplyObject(r);
    return CTLRUN_OK;
}

static int ctlactivitywarmup_flush_chunk(struct ctlrun *ctl, redisContext *c,
                                         const struct ctlactivitywarmup_staging *st,
                                         struct ctlactivitywarmup_chunk *ch)
{
    if (ch->n == 0)
        return CTLRUN_OK;
    int argc = (int)(2 + 2 * ch->n);
    ch->argv[0] = "HSET";
    ch->argv[1] = st->users;
    for (size_t i = 0; i < ch->n; i++) {
        ch->argv[2 + 2 * i] = ch->holder[i];
        ch->argv[3 + 2 * i] = ch->order_no[i];
    }
    if (ctlactivitywarmup_plain(ctl, c, argc, ch->argv) != CTLRUN_OK)
        return CTLRUN_FAIL;
    ch->argv[1] = st->orders;
    for (size_t i = 0; i < ch->n; i++) {
        ch->argv[2 + 2 * i] = ch->order_no[i];
        ch->argv[3 + 2 * i] = "SUCCESS";
    }
    if (ctlactivitywarmup_plain(ctl, c, argc, ch->argv) != CTLRUN_OK)
        return CTLRUN_FAIL;
    ch->n = 0;
    return CTLRUN_OK;
}

enum { CTLACTIVITYWARMUP_RETRY = 3 };

static int ctlactivitywarmup_multi(struct ctlrun *ctl, redisContext *c)
{
    redisReply *r = redisCommand(c, "MULTI");
    if (!r || r->type != REDIS_REPLY_STATUS) {
        ctlout_fail(ctl, "redis MULTI: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        if (r)
            freeReplyObject(r);
        return CTLRUN_FAIL;
    }
    freeReplyObject(r);
    return CTLRUN_OK;
}

/* EXEC of a transaction under WATCH: CTLRUN_OK with the array reply in *out (caller frees),
 * CTLACTIVITYWARMUP_RETRY when a watched key changed, or CTLRUN_FAIL after printing. */
static int ctlactivitywarmup_exec(struct ctlrun *ctl, redisContext *c, redisReply **out)
{
    *out = NULL;
    redisReply *r = redisCommand(c, "EXEC");
    if (!r)
        return ctlout_fail(ctl, "redis EXEC: %s", c->errstr);
    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return CTLACTIVITYWARMUP_RETRY;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        int rc = ctlout_fail(ctl, "redis EXEC: %s",
                             r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        return rc;
    }
    if (ctlredis_exec_errors(ctl, r) != CTLRUN_OK) {
        freeReplyObject(r);
        return CTLRUN_FAIL;
    }
    *out = r;
    return CTLRUN_OK;
}

/* The stock key is missing: the Redis side of the sale is rebuilt from MySQL, the one
 * durable record. The orders are written to staging hashes first, then one MULTI, which
 * the WATCH on the stock key aborts if another warmup creates the key meanwhile, drops
 * the old keys and renames the staging ones into place, so that no script ever sees a
 * half-rebuilt sale. Every command is bounded (a chunk, an UNLINK, a RENAME onto a key
 * just unlinked), so a rebuild of a big sale does not stall Redis. Reservations and queue
 * marks left in a Redis that lost its stock key cannot be trusted and are dropped; orders
 * still in Kafka are claimed again by the consumer's confirm script against the rebuilt
 * stock. A cancelled sale gets a stock key of 0 and its unsold stock as 'returned' (see
 * ctlallotment.h): it must not go back on sale, and I3 must still add up. The orders
 * rebuilt are all SUCCESS (their rows are in MySQL): 'sold' starts at their number. */
static int ctlactivitywarmup_rebuild(struct ctlrun *ctl, redisContext *c,
                                     const struct ctlactivity_row *row, const struct keys_set *k,
                                     const struct ctlactivitywarmup_part *part, char *report,
                                     size_t reportlen)
{
    struct ctlactivitywarmup_staging st;
    if (ctlactivitywarmup_staging_names(ctl, k, &st) != CTLRUN_OK)
        return CTLRUN_FAIL;
    /* Left by an attempt that lost its WATCH, or by a warmup that died. */
    const char *unstage[] = { "UNLINK", st.users, st.orders };
    if (ctlactivitywarmup_plain(ctl, c, 3, unstage) != CTLRUN_OK)
        return CTLRUN_FAIL;

    int rc = CTLRUN_FAIL;
    bool in_multi = false;
    MYSQL_RES *res = NULL;
    struct ctlactivitywarmup_chunk *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        ctlout_fail(ctl, "out of memory");
        goto out;
    }
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT order_no, user_id, user_slot FROM seckill_order WHERE activity_id = %"
             PRId64, row->id);
    res = ctldb_stream(ctl, sql);
    if (!res)
        goto out;
    int64_t orders = 0;
    MYSQL_ROW mr;
    while ((mr = mysql_fetch_row(res))) {
        /* The users hash is keyed by holder: a user's slot s >= 2 is its own field, as the
         * execute script writes it (holder.h). */
        if (!mr[0] || !mr[1] || !mr[2] || strlen(mr[0]) >= ORDERNO_LEN ||
            holder_format(ch->holder[ch->n], sizeof(ch->holder[0]), ctldb_int(mr[1]),
                          (int)ctldb_int(mr[2])) < 0) {
            ctlout_fail(ctl, "activity %" PRId64 ": malformed seckill_order row", row->id);
            goto out;
        }
        /* A bucketed sale's orders go to their users' buckets. */
        if (part->list->count > 1 && bucket_of_user_str(mr[1], part->list->count) != part->b)
            continue;
        strcpy(ch->order_no[ch->n], mr[0]);
        ch->n++;
        orders++;
        if (ch->n == CTLACTIVITYWARMUP_CHUNK && ctlactivitywarmup_flush_chunk(ctl, c, &st, ch) != CTLRUN_OK)
            goto out;
    }
    if (mysql_errno(ctl->db)) {
        ctlout_fail(ctl, "mysql: %s", mysql_error(ctl->db));
        goto out;
    }
    mysql_free_result(res);
    res = NULL;
    if (ctlactivitywarmup_flush_chunk(ctl, c, &st, ch) != CTLRUN_OK)
        goto out;

    int64_t left = part->list->count > 1 ? part->share : row->stock - orders;
    if (left < 0) {
        ctlout_note(ctl, "activity %" PRId64 ": %" PRId64 " orders in MySQL exceed the stock of %" PRId64
                    " (oversold); stock set to 0", row->id, orders, row->stock);
        left = 0;
    }
    bool cancelled = ctlactivity_is_cancelled(row);
    char s_left[24], s_sold[24];
    snprintf(s_left, sizeof(s_left), "%" PRId64, left);
    snprintf(s_sold, sizeof(s_sold), "%" PRId64, orders);
    struct ctlactivitywarmup_meta meta;
    ctlactivitywarmup_meta(row, k->name[KEYS_ACTIVITY], part, true, &meta);
    /* Transfers recorded by a Redis that lost the stock key are void with it. UNLINK: the
     * old hashes may be big, and are freed off Redis's main thread. */
    const char *del[] = { "UNLINK", k->name[KEYS_USERS], k->name[KEYS_ORDERS], k->name[KEYS_RESERVED],
                          k->name[KEYS_QUEUED], k->name[KEYS_CLAIMED], k->name[KEYS_XFER_OUT],
                          k->name[KEYS_XFER_IN] };
    const char *rename_users[] = { "RENAME", st.users, k->name[KEYS_USERS] };
    const char *rename_orders[] = { "RENAME", st.orders, k->name[KEYS_ORDERS] };
    const char *set[] = { "SET", k->name[KEYS_STOCK], cancelled ? "0" : s_left };
    /* 'returned' is rewritten, not added to: it describes this rebuilt stock key. */
    const char *returned_set[] = { "HSET", k->name[KEYS_ACTIVITY], "returned", s_left };
    const char *returned_del[] = { "HDEL", k->name[KEYS_ACTIVITY], "returned" };
    const char *sold_set[] = { "HSET", k->name[KEYS_ACTIVITY], "sold", s_sold };
    if (ctlactivitywarmup_multi(ctl, c) != CTLRUN_OK)
        goto out;
    in_multi = true;
    if (ctlactivitywarmup_queue(ctl, c, 8, del) != CTLRUN_OK ||
        (orders > 0 && (ctlactivitywarmup_queue(ctl, c, 3, rename_users) != CTLRUN_OK ||
                        ctlactivitywarmup_queue(ctl, c, 3, rename_orders) != CTLRUN_OK)) ||
        ctlactivitywarmup_queue(ctl, c, 3, set) != CTLRUN_OK ||
        ctlactivitywarmup_queue(ctl, c, meta.argc, meta.argv) != CTLRUN_OK ||
        ctlactivitywarmup_queue(ctl, c, 4, sold_set) != CTLRUN_OK ||
        (cancelled ? ctlactivitywarmup_queue(ctl, c, 4, returned_set)
                   : ctlactivitywarmup_queue(ctl, c, 3, returned_del)) != CTLRUN_OK)
        goto out;
    free(ch);
    ch = NULL;

    redisReply *r;
    rc = ctlactivitywarmup_exec(ctl, c, &r);
    if (rc != CTLRUN_OK)
        return rc;   /* a retry (or the next warmup) unlinks the staging hashes first */
    freeReplyObject(r);
    if (cancelled)
        snprintf(report, reportlen, "stock set to 0 (cancelled: %" PRId64 " unsold returned to the "
                 "coupon, %" PRId64 " orders rebuilt from MySQL)", left, orders);
    else
        snprintf(report, reportlen, "stock set to %" PRId64 " (stock %" PRId64 ", %" PRId64
                 " orders rebuilt from MySQL)", left, row->stock, orders);
    return CTLRUN_OK;

out:
    if (res)
        mysql_free_result(res);
    free(ch);
    if (in_multi)
        ctlactivitywarmup_discard(c);
    return CTLRUN_FAIL;
}

/* The stock key exists: the sale may be live, so only the description is refreshed and
 * the stock, the users and the orders are left as they are. Under the caller's WATCH. */
static int ctlactivitywarmup_refresh(struct ctlrun *ctl, redisContext *c,
                                     const struct ctlactivity_row *row, const struct keys_set *k,
                                     const struct ctlactivitywarmup_part *part, char *report,
                                     size_t reportlen)
{
    if (ctlactivitywarmup_multi(ctl, c) != CTLRUN_OK)
        return CTLRUN_FAIL;
    struct ctlactivitywarmup_meta meta;
    ctlactivitywarmup_meta(row, k->name[KEYS_ACTIVITY], part, false, &meta);
    const char *get[] = { "GET", k->name[KEYS_STOCK] };
    if (ctlactivitywarmup_queue(ctl, c, meta.argc, meta.argv) != CTLRUN_OK ||
        ctlactivitywarmup_queue(ctl, c, 2, get) != CTLRUN_OK) {
        ctlactivitywarmup_discard(c);
        return CTLRUN_FAIL;
    }
    redisReply *r;
    int rc = ctlactivitywarmup_exec(ctl, c, &r);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t left;
    if (r->elements == 2 && ctlredis_int(r->element[1], &left) == 0)
        snprintf(report, reportlen, "stock key kept: %" PRId64 " left", left);
    else
        snprintf(report, reportlen, "stock key kept (it vanished meanwhile: run warmup again)");
    freeReplyObject(r);
    return CTLRUN_OK;
}

/* One bucket's warmup (the one bucket of an unbucketed activity). */
static int ctlactivitywarmup_bucket(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                    const struct ctlactivitywarmup_part *part, char *report, size_t reportlen)
{
    struct keys_set k;
    if (ctlbuckets_keys(ctl, row->id, part->list, part->b, &k) != CTLRUN_OK)
        return CTLRUN_FAIL;
    /* The WATCH, the reads and the MULTI stay on the master of the activity's slot. */
    redisContext *c = ctlredis_for_key(ctl, k.name[KEYS_STOCK]);
    if (!c)
        return CTLRUN_FAIL;
    bool cancelled = ctlactivity_is_cancelled(row);
    struct ctlactivity_row now = *row;
    int rc = CTLACTIVITYWARMUP_RETRY;
    for (int attempt = 0; attempt < CTLACTIVITYWARMUP_ATTEMPTS && rc == CTLACTIVITYWARMUP_RETRY; attempt++) {
        /* The activity hash is watched too: a cancel running meanwhile must not be undone
         * by this warmup writing the status it read from MySQL before the cancel. */
        const char *watch[] = { "WATCH", k.name[KEYS_STOCK], k.name[KEYS_ACTIVITY] };
        redisReply *r = ctlredis_on(ctl, c, 3, watch);
        if (!r)
            return CTLRUN_FAIL;
        freeReplyObject(r);
        const char *exists[] = { "EXISTS", k.name[KEYS_STOCK] };
        const char *status[] = { "HGET", k.name[KEYS_ACTIVITY], "status" };
        redisReply *e = ctlredis_on(ctl, c, 2, exists);
        redisReply *st = e ? ctlredis_on(ctl, c, 3, status) : NULL;
        if (!e || !st) {
            if (e)
                freeReplyObject(e);
            return CTLRUN_FAIL;
        }
        bool present = e->type == REDIS_REPLY_INTEGER && e->integer > 0;
        bool redis_cancelled = st->type == REDIS_REPLY_STRING && strcmp(st->str, "CANCELLED") == 0;
        freeReplyObject(e);
        freeReplyObject(st);
        /* The coupon's status is read again under the WATCH: a deactivate that ran since the
         * row was read has set it in MySQL before it paused the sale in Redis, so either
         * this read sees INACTIVE or the pause, coming later, aborts the EXEC (the next
         * attempt reads again), or lands after it. With the status read before the WATCH,
         * a later attempt wrote paused = 0 over the deactivate's pause. */
        struct ctlcoupon_row cp;
        if (ctlcoupon_load(ctl, row->coupon_id, false, &cp) != CTLRUN_OK) {
            const char *unwatch[] = { "UNWATCH" };
            r = ctlredis_on(ctl, c, 1, unwatch);
            if (r)
                freeReplyObject(r);
            return CTLRUN_FAIL;
        }
        now.coupon_inactive = strcmp(cp.status, "INACTIVE") == 0;
        if (redis_cancelled && !cancelled) {
            const char *unwatch[] = { "UNWATCH" };
            r = ctlredis_on(ctl, c, 1, unwatch);
            if (r)
                freeReplyObject(r);
            return ctlout_fail(ctl, "activity %" PRId64 " is cancelled in Redis but not in MySQL (an "
                               "interrupted 'activity cancel'?): run 'seckillctl activity cancel %" PRId64
                               "' to finish it; warming it would reopen the sale", row->id, row->id);
        }
        rc = present ? ctlactivitywarmup_refresh(ctl, c, &now, &k, part, report, reportlen)
                     : ctlactivitywarmup_rebuild(ctl, c, &now, &k, part, report, reportlen);
    }
    if (rc == CTLACTIVITYWARMUP_RETRY)
        return ctlout_fail(ctl, "activity %" PRId64 ": the activity kept changing during warmup; "
                           "is another warmup or cancel running?", row->id);
    return rc;
}

/* A bucketed sale is rebuilt whole or not at all: MySQL knows what was sold, not where
 * the unsold units were, so a bucket that lost its stock key while the others kept
 * theirs cannot be given its share without risking units that exist twice. */
static int ctlactivitywarmup_split(struct ctlrun *ctl, const struct ctlactivity_row *row,
                                   const struct bucket_list *list, int64_t *left, bool *rebuild)
{
    int present = 0;
    for (int b = 0; b < list->count; b++) {
        struct keys_set k;
        if (ctlbuckets_keys(ctl, row->id, list, b, &k) != CTLRUN_OK)
            return CTLRUN_FAIL;
        const char *exists[] = { "EXISTS", k.name[KEYS_STOCK] };
        redisReply *e = ctlredis_argv(ctl, 2, exists);
        if (!e)
            return CTLRUN_FAIL;
        present += e->type == REDIS_REPLY_INTEGER && e->integer > 0;
        freeReplyObject(e);
    }
    if (present != 0 && present != list->count)
        return ctlout_fail(ctl, "activity %" PRId64 ": %d of its %d buckets lost their stock key; a "
                           "bucketed sale is rebuilt only when all have (cancel it, or restore Redis)",
                           row->id, list->count - present, list->count);
    *rebuild = present == 0;
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM seckill_order WHERE activity_id = %" PRId64, row->id);
    int64_t orders;
    if (ctldb_ints(ctl, sql, &orders, 1) != CTLRUN_OK)
        return CTLRUN_FAIL;
    *left = row->stock - orders > 0 ? row->stock - orders : 0;
    return CTLRUN_OK;
}

int ctlactivitywarmup_warm(struct ctlrun *ctl, const struct ctlactivity_row *row, char *report,
                           size_t reportlen)
{
    /* Its orders are answered from MySQL; warming it would bring back a sale that is over
     * (and every key the archive removed). */
    if (row->archived)
        return ctlout_fail(ctl, "activity %" PRId64 " is archived: it is over and stays out of Redis",
                           row->id);
    struct bucket_list list;
    if (ctlactivity_buckets(ctl, row, &list) != CTLRUN_OK)
        return CTLRUN_FAIL;
    int64_t left = 0;
    bool rebuild = false;
    if (list.count > 1 && ctlactivitywarmup_split(ctl, row, &list, &left, &rebuild) != CTLRUN_OK)
        return CTLRUN_FAIL;
    bool cancelled = ctlactivity_is_cancelled(row);
    /* The coupon's terms and name, for the sale's listing: they never change after the
     * coupon is created. */
    struct usercoupon terms;
    if (ctlcoupon_terms(ctl, row->coupon_id, &terms) != CTLRUN_OK)
        return CTLRUN_FAIL;
    char *coupon = usercoupon_encode(&terms);
    if (!coupon)
        return ctlout_fail(ctl, "out of memory");
    int rc = CTLRUN_OK;
    for (int b = 0; b < list.count && rc == CTLRUN_OK; b++) {
        struct ctlactivitywarmup_part part = { &list, b,
                                               left / list.count + (b < left % list.count ? 1 : 0), coupon };
        char one[256] = "";
        rc = ctlactivitywarmup_bucket(ctl, row, &part, one, sizeof(one));
        if (b == 0)
            snprintf(report, reportlen, "%s", one);
    }
    free(coupon);
    if (rc != CTLRUN_OK)
        return rc;
    if (list.count > 1) {
        if (rebuild)
            snprintf(report, reportlen, "%" PRId64 " unit(s) split over %d buckets", left, list.count);
        else
            snprintf(report, reportlen, "stock keys of its %d buckets kept", list.count);
    }
    /* The list of warmed activities has a slot of its own, so in a Redis Cluster it cannot
     * join the activity's transaction: it is added after it (idempotent; a failure here
     * fails the warmup, which can be run again). */
    char s_id[24];
    snprintf(s_id, sizeof(s_id), "%" PRId64, row->id);
    const char *sadd[] = { "SADD", KEYS_ACTIVITIES, s_id };
    redisReply *added = ctlredis_argv(ctl, 3, sadd);
    if (!added)
        return CTLRUN_FAIL;
    freeReplyObject(added);
    if (!cancelled)
        return rc;
    /* A kept stock key of a cancelled sale may hold units the reaper released after the
     * cancel; cancel.lua moves them into 'returned' and makes sure the hash says
     * CANCELLED. Idempotent. */
    struct ctlactivity_cancelled cc;
    if ((rc = ctlactivity_cancel_redis(ctl, row, &cc)) != CTLRUN_OK)
        return rc;
    if (cc.moved > 0) {
        size_t used = strlen(report);
        snprintf(report + used, reportlen - used, "; cancelled: %" PRId64 " released unit(s) moved "
                 "to returned (%" PRId64 " in all)", cc.moved, cc.returned);
    }
    return CTLRUN_OK;
}

int ctlactivitywarmup_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlactivity_row row;
    int rc = ctlactivity_load_arg(ctl, argc, argv, &row);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t id = row.id;
    char report[256] = "";
    if ((rc = ctlactivitywarmup_warm(ctl, &row, report, sizeof(report))) != CTLRUN_OK)
        return rc;
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "status", ctlactivity_status_at(&row, clock_wall_ms()));
        cJSON_AddStringToObject(obj, "warmup", report);
        return ctlout_json(ctl, obj);
    }
    printf("activity %" PRId64 " warmed: %s\n", id, report);
    return CTLRUN_OK;
}

