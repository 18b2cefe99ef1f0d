#include "ctl/ctlverify.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
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
#include "store/db.h"
#include "common/clock.h"
#include "common/holder.h"
#include "common/keys.h"
#include "common/orderno.h"
#include "common/parse.h"

/* A reservation older than pre-reduce-timeout plus this margin should have been expired
 * by the reaper (it runs every reaper-interval-ms): it is stuck. */
#define CTLVERIFY_STUCK_MARGIN_MS 10000
#define CTLVERIFY_SAMPLES 3
#define CTLVERIFY_DETAIL 768

/* Examples of what a failing check found, for the operator to look up. */
struct ctlverify_samples {
    int n;
    char s[CTLVERIFY_SAMPLES][ORDERNO_LEN + 32];
};

static void ctlverify_sample(struct ctlverify_samples *sm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ctlverify_sample(struct ctlverify_samples *sm, const char *fmt, ...)
{
    if (sm->n >= CTLVERIFY_SAMPLES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sm->s[sm->n++], sizeof(sm->s[0]), fmt, ap);
    va_end(ap);
}

struct ctlverify_check {
    const char *id;
    const char *name;
    bool ok;
    char detail[CTLVERIFY_DETAIL];
};

static void ctlverify_add(struct ctlverify_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ctlverify_add(struct ctlverify_check *c, const char *fmt, ...)
{
    size_t used = strlen(c->detail);
    if (used + 1 >= sizeof(c->detail))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail + used, sizeof(c->detail) - used, fmt, ap);
    va_end(ap);
}

static void ctlverify_add_samples(struct ctlverify_check *c, const struct ctlverify_samples *sm)
{
    for (int i = 0; i < sm->n; i++)
        ctlverify_add(c, "%s%s", i == 0 ? " (e.g. " : ", ", sm->s[i]);
    if (sm->n > 0)
        ctlverify_add(c, ")");
}

/* ---- the Redis side --------------------------------------------------------------------- */

/* One field of a users hash: a holder (holder.h), a slot of a user. */
struct ctlverify_user {
    int64_t user_id;
    int slot;
    const char *order_no;   /* points into an HSCAN page */
};

struct ctlverify_order {
    const char *order_no;   /* points into an HSCAN page */
    const char *status;
};

/* Summed over the buckets of a bucketed activity (bucket.h), whose users and orders are
 * merged into one list each. */
struct ctlverify_redis {
    redisReply **pages;     /* MULTI answers and HSCAN pages: they own every string below */
    size_t npages, pages_cap;
    int nbuckets;
    bool has_stock;         /* every bucket has its stock key */
    bool stock_negative;    /* some bucket's stock key is below 0 */
    int64_t stock_left, reservations, stuck, queued, claimed;
    int64_t success;        /* orders SUCCESS in the orders hash */
    int64_t sold;           /* the activity hashes' 'sold' counters, -1: some bucket has none */
    int64_t returned;       /* unsold stock a cancel took off (activity hash), else 0 */
    int64_t in_transit;     /* units moving between buckets (rebalance.lua) */
    int per_user;           /* MySQL's limit, which every field's slot must be within */
    struct ctlverify_user *users;
    size_t nusers, users_cap;
    size_t bad_users;       /* fields that are not holders */
    size_t over_limit;      /* holders in a slot above per_user */
    struct ctlverify_samples s_over;
    int hash_mismatch;      /* buckets whose activity hash has another perUser (absent: 1) */
    char hash_per_user[8];  /* the first such bucket's */
    size_t wrong_bucket;    /* users held by a bucket that is not theirs */
    struct ctlverify_order *orders;
    size_t norders, orders_cap;
};

static int ctlverify_cmp_user(const void *a, const void *b)
{
    const struct ctlverify_user *x = a, *y = b;
    if (x->user_id != y->user_id)
        return (x->user_id > y->user_id) - (x->user_id < y->user_id);
    return (x->slot > y->slot) - (x->slot < y->slot);
}

static int ctlverify_cmp_order(const void *a, const void *b)
{
    return strcmp(((const struct ctlverify_order *)a)->order_no,
                  ((const struct ctlverify_order *)b)->order_no);
}

static int ctlverify_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void ctlverify_redis_free(struct ctlverify_redis *rd)
{
    free(rd->users);
    free(rd->orders);
    for (size_t i = 0; i < rd->npages; i++)
        freeReplyObject(rd->pages[i]);
    free(rd->pages);
}

static int ctlverify_grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    void *grown = realloc(*items, need * size);
    if (!grown)
        return -1;
    *items = grown;
    *cap = need;
    return 0;
}

static int ctlverify_keep(struct ctlrun *ctl, struct ctlverify_redis *rd, redisReply *r)
{
    if (ctlverify_grow((void **)&rd->pages, &rd->pages_cap, rd->npages + 1 > rd->pages_cap
                       ? rd->pages_cap * 2 + 16 : 0, sizeof(*rd->pages))) {
        freeReplyObject(r);
        return ctlout_fail(ctl, "out of memory");
    }
    rd->pages[rd->npages++] = r;
    return CTLRUN_OK;
}

/* One hash, HSCAN page by page: verify may run against a live sale, and one HGETALL of a
 * sale's million orders would stall Redis for every client. Calls fn on each page's
 * field/value array. */
typedef int (*ctlverify_page_fn)(struct ctlrun *ctl, struct ctlverify_redis *rd, int b, const redisReply *fv);

static int ctlverify_scan(struct ctlrun *ctl, redisContext *c, const char *key, int b,
                          struct ctlverify_redis *rd, ctlverify_page_fn fn)
{
    char cursor[32] = "0";
    do {
        const char *argv[] = { "HSCAN", key, cursor, "COUNT", KEYS_SCAN_PAGE };
        redisReply *r = ctlredis_on(ctl, c, 5, argv);
        if (!r)
            return CTLRUN_FAIL;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return ctlout_fail(ctl, "redis HSCAN %s: unexpected reply", key);
        }
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        if (ctlverify_keep(ctl, rd, r) != CTLRUN_OK || fn(ctl, rd, b, r->element[1]) != CTLRUN_OK)
            return CTLRUN_FAIL;
    } while (strcmp(cursor, "0") != 0);
    return CTLRUN_OK;
}

static int ctlverify_users_page(struct ctlrun *ctl, struct ctlverify_redis *rd, int b, const redisReply *uh)
{
    if (ctlverify_grow((void **)&rd->users, &rd->users_cap,
                       rd->nusers + uh->elements / 2 > rd->users_cap ? (rd->nusers + uh->elements / 2) * 2
                       : 0, sizeof(*rd->users)))
        return ctlout_fail(ctl, "out of memory");
    for (size_t i = 0; i + 1 < uh->elements; i += 2) {
        int64_t user;
        int slot;
        const redisReply *field = uh->element[i];
        if (holder_parse_n(field->str, field->len, &user, &slot) != 0) {
            rd->bad_users++;
            continue;
        }
        if (slot > rd->per_user) {
            rd->over_limit++;
            ctlverify_sample(&rd->s_over, "%s", field->str);
        }
        if (rd->nbuckets > 1 && bucket_of_user(user, rd->nbuckets) != b)
            rd->wrong_bucket++;
        rd->users[rd->nusers].user_id = user;
        rd->users[rd->nusers].slot = slot;
        rd->users[rd->nusers++].order_no = uh->element[i + 1]->str;
    }
    return CTLRUN_OK;
}

static int ctlverify_orders_page(struct ctlrun *ctl, struct ctlverify_redis *rd, int b, const redisReply *oh)
{
    (void)b;
    if (ctlverify_grow((void **)&rd->orders, &rd->orders_cap,
                       rd->norders + oh->elements / 2 > rd->orders_cap ? (rd->norders + oh->elements / 2) * 2
                       : 0, sizeof(*rd->orders)))
        return ctlout_fail(ctl, "out of memory");
    for (size_t i = 0; i + 1 < oh->elements; i += 2) {
        rd->orders[rd->norders].order_no = oh->element[i]->str;
        rd->orders[rd->norders++].status = oh->element[i + 1]->str;
    }
    return CTLRUN_OK;
}

/* One MULTI per bucket: the counts of I3 are taken at one instant of each bucket's master
 * (at quiescence, where I3 is checked, the instants do not matter), each an O(1) command.
 * The per-user and order hashes are then read page by page and compared in memory. */
static int ctlverify_read_bucket(struct ctlrun *ctl, const struct keys_set *k, int b, const char *cutoff,
                                 struct ctlverify_redis *rd)
{
    struct ctlredis_cmd cmds[] = {
        { 2, { "GET", k->name[KEYS_STOCK] } },
        { 2, { "ZCARD", k->name[KEYS_RESERVED] } },
        { 4, { "ZCOUNT", k->name[KEYS_RESERVED], "-inf", cutoff } },
        { 2, { "SCARD", k->name[KEYS_QUEUED] } },
        { 2, { "SCARD", k->name[KEYS_CLAIMED] } },
        { 3, { "HGET", k->name[KEYS_ACTIVITY], "sold" } },
        { 3, { "HGET", k->name[KEYS_ACTIVITY], "returned" } },
        { 3, { "HGET", k->name[KEYS_ACTIVITY], "perUser" } },
    };
    redisReply *reply = ctlredis_multi(ctl, cmds, sizeof(cmds) / sizeof(cmds[0]));
    if (!reply)
        return CTLRUN_FAIL;
    if (ctlverify_keep(ctl, rd, reply) != CTLRUN_OK)
        return CTLRUN_FAIL;
    redisReply **e = reply->element;
    for (size_t i = 0; i < reply->elements; i++)
        if (e[i]->type == REDIS_REPLY_ERROR)
            return ctlout_fail(ctl, "redis %s %s: %s", cmds[i].argv[0], cmds[i].argv[1], e[i]->str);
    int64_t left, sold, returned;
    if (ctlredis_int(e[0], &left) == 0) {
        rd->stock_left += left;
        rd->stock_negative = rd->stock_negative || left < 0;
    } else {
        rd->has_stock = false;
    }
    rd->reservations += e[1]->integer;
    rd->stuck += e[2]->integer;
    rd->queued += e[3]->integer;
    rd->claimed += e[4]->integer;
    if (rd->sold >= 0 && ctlredis_int(e[5], &sold) == 0)
        rd->sold += sold;
    else
        rd->sold = -1;
    if (ctlredis_int(e[6], &returned) == 0)
        rd->returned += returned;
    /* Absent: a hash warmed before the limit existed, which was one. */
    int64_t per_user = 1;
    bool readable = e[7]->type == REDIS_REPLY_NIL || ctlredis_int(e[7], &per_user) == 0;
    if ((!readable || per_user != rd->per_user) && rd->hash_mismatch++ == 0)
        snprintf(rd->hash_per_user, sizeof(rd->hash_per_user), "%.7s",
                 e[7]->type == REDIS_REPLY_STRING ? e[7]->str : "absent");

    redisContext *c = ctlredis_for_key(ctl, k->name[KEYS_USERS]);
    if (!c)
        return CTLRUN_FAIL;
    if (ctlverify_scan(ctl, c, k->name[KEYS_USERS], b, rd, ctlverify_users_page) != CTLRUN_OK ||
        ctlverify_scan(ctl, c, k->name[KEYS_ORDERS], b, rd, ctlverify_orders_page) != CTLRUN_OK)
        return CTLRUN_FAIL;
    return CTLRUN_OK;
}

static int ctlverify_read_redis(struct ctlrun *ctl, const struct ctlactivity_row *row, int64_t now_ms,
                                struct ctlverify_redis *rd)
{
    memset(rd, 0, sizeof(*rd));
    struct bucket_list list;
    if (ctlactivity_buckets(ctl, row, &list) != CTLRUN_OK)
        return CTLRUN_FAIL;
    char cutoff[32];
    snprintf(cutoff, sizeof(cutoff), "(%" PRId64,
             now_ms - ctl->cfg.pre_reduce_timeout * 1000 - CTLVERIFY_STUCK_MARGIN_MS);
    rd->nbuckets = list.count;
    rd->has_stock = true;
    rd->per_user = row->per_user;
    /* Never NULL, even for a sale without orders: qsort and bsearch take no NULL array. */
    if (ctlverify_grow((void **)&rd->users, &rd->users_cap, 1, sizeof(*rd->users)) ||
        ctlverify_grow((void **)&rd->orders, &rd->orders_cap, 1, sizeof(*rd->orders)))
        return ctlout_fail(ctl, "out of memory");
    for (int b = 0; b < list.count; b++) {
        struct keys_set k;
        if (ctlbuckets_keys(ctl, row->id, &list, b, &k) != CTLRUN_OK ||
            ctlverify_read_bucket(ctl, &k, b, cutoff, rd) != CTLRUN_OK)
            return CTLRUN_FAIL;
    }
    if (ctlbuckets_in_transit(ctl, row->id, &list, &rd->in_transit) != CTLRUN_OK)
        return CTLRUN_FAIL;
    qsort(rd->users, rd->nusers, sizeof(*rd->users), ctlverify_cmp_user);
    qsort(rd->orders, rd->norders, sizeof(*rd->orders), ctlverify_cmp_order);
    /* HSCAN may return a field twice (the hash was resized during the scan): once each. */
    size_t n = 0;
    for (size_t i = 0; i < rd->nusers; i++)
        if (n == 0 || ctlverify_cmp_user(&rd->users[n - 1], &rd->users[i]) != 0)
            rd->users[n++] = rd->users[i];
    rd->nusers = n;
    n = 0;
    for (size_t i = 0; i < rd->norders; i++)
        if (n == 0 || strcmp(rd->orders[n - 1].order_no, rd->orders[i].order_no) != 0)
            rd->orders[n++] = rd->orders[i];
    rd->norders = n;
    for (size_t i = 0; i < rd->norders; i++)
        if (strcmp(rd->orders[i].status, "SUCCESS") == 0)
            rd->success++;
    return CTLRUN_OK;
}

static const char *ctlverify_user_order(const struct ctlverify_redis *rd, int64_t user, int slot)
{
    struct ctlverify_user key = { user, slot, NULL };
    const struct ctlverify_user *u =
        bsearch(&key, rd->users, rd->nusers, sizeof(*rd->users), ctlverify_cmp_user);
    return u ? u->order_no : NULL;
}

static const char *ctlverify_order_status(const struct ctlverify_redis *rd, const char *order_no)
{
    struct ctlverify_order key = { order_no, NULL };
    const struct ctlverify_order *o =
        bsearch(&key, rd->orders, rd->norders, sizeof(*rd->orders), ctlverify_cmp_order);
    return o ? o->status : NULL;
}

/* ---- the MySQL side ------------------------------------------------------------------- */

struct ctlverify_mysql {
    int64_t stock, sold_count;
    int per_user;
    int64_t rows, distinct_orders, distinct_users;
    int64_t distinct_slots;     /* distinct (user_id, user_slot) */
    int64_t slot_out;           /* rows in a slot outside 1..per_user */
    int64_t cancelled;          /* rows CANCELLED by the shop (order cancel): not sold */
    int64_t dup_users;          /* users with more than per_user rows */
    int64_t uc_dup;             /* orders with two or more user_coupon rows */
    int64_t streamed;           /* order rows read one by one */
    int64_t not_success;        /* rows whose Redis status is not theirs (SUCCESS, CANCELLED) */
    int64_t user_missing;       /* rows whose user has no entry in the users hash */
    int64_t user_other;         /* rows whose user maps to another order */
    int64_t uc_missing, uc_mismatch;
    struct ctlverify_samples s_not_success, s_user, s_uc;
    char **order_nos;           /* every order_no, sorted, for the Redis -> MySQL direction */
    size_t norder_nos;
};

static void ctlverify_mysql_free(struct ctlverify_mysql *my)
{
    for (size_t i = 0; i < my->norder_nos; i++)
        free(my->order_nos[i]);
    free(my->order_nos);
}

static int ctlverify_stream_orders(struct ctlrun *ctl, int64_t id, const struct ctlverify_redis *rd,
                                   struct ctlverify_mysql *my)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT o.order_no, o.user_id, o.coupon_id, u.id, u.user_id, u.coupon_id, o.status, o.user_slot "
             "FROM seckill_order o LEFT JOIN user_coupon u ON u.source_ref = o.order_no "
             "WHERE o.activity_id = %" PRId64,
             id);
    MYSQL_RES *res = ctldb_stream(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    size_t cap = 0;
    MYSQL_ROW r;
    while ((r = mysql_fetch_row(res))) {
        const char *order_no = r[0] ? r[0] : "";
        int64_t user = ctldb_int(r[1]);
        my->streamed++;

        const char *status = ctlverify_order_status(rd, order_no);
        /* A CANCELLED row is CANCELLED in Redis, which cancels first: a SUCCESS row of an
         * order Redis has CANCELLED is a cancel cut short. */
        const char *want = r[6] ? r[6] : "SUCCESS";
        if (!status || strcmp(status, want) != 0) {
            my->not_success++;
            ctlverify_sample(&my->s_not_success, "%s is %s, %s in MySQL", order_no,
                             status ? status : "unknown", want);
        }
        int slot = (int)ctldb_int(r[7]);
        char holder[32];
        /* As holder.h writes it, but for any slot: a row's may be out of range. */
        snprintf(holder, sizeof(holder), slot == 1 ? "%" PRId64 : "%" PRId64 "#%d", user, slot);
        const char *mapped = ctlverify_user_order(rd, user, slot);
        if (!mapped) {
            my->user_missing++;
            ctlverify_sample(&my->s_user, "user %s not in users hash", holder);
        } else if (strcmp(mapped, order_no) != 0) {
            my->user_other++;
            ctlverify_sample(&my->s_user, "user %s -> %s, row %s", holder, mapped, order_no);
        }
        if (!r[3]) {
            my->uc_missing++;
            ctlverify_sample(&my->s_uc, "%s has none", order_no);
        } else if (ctldb_int(r[4]) != user || ctldb_int(r[5]) != ctldb_int(r[2])) {
            my->uc_mismatch++;
            ctlverify_sample(&my->s_uc, "%s: other user or coupon", order_no);
        }

        if (my->norder_nos == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            char **grown = realloc(my->order_nos, ncap * sizeof(*grown));
            if (!grown) {
                mysql_free_result(res);
                return ctlout_fail(ctl, "out of memory");
            }
            my->order_nos = grown;
            cap = ncap;
        }
        char *copy = strdup(order_no);
        if (!copy) {
            mysql_free_result(res);
            return ctlout_fail(ctl, "out of memory");
        }
        my->order_nos[my->norder_nos++] = copy;
    }
    int failed = mysql_errno(ctl->db) != 0;
    if (failed)
        ctlout_fail(ctl, "mysql: %s", mysql_error(ctl->db));
    mysql_free_result(res);
    if (failed)
        return CTLRUN_FAIL;
    /* No orders yet (verify before the sale) leaves order_nos NULL, which qsort must not get. */
    if (my->norder_nos > 1)
        qsort(my->order_nos, my->norder_nos, sizeof(*my->order_nos), ctlverify_cmp_str);
    return CTLRUN_OK;
}

/* All reads in one consistent snapshot, taken after the Redis snapshot. */
static int ctlverify_read_mysql(struct ctlrun *ctl, int64_t id, const struct ctlverify_redis *rd,
                                struct ctlverify_mysql *my)
{
    int rc = ctldb_exec(ctl, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
    if (rc != CTLRUN_OK)
        return rc;
    char sql[640];
    int64_t v[3];
    snprintf(sql, sizeof(sql), "SELECT stock, sold_count, per_user FROM seckill_activity WHERE id = %" PRId64,
             id);
    if ((rc = ctldb_ints(ctl, sql, v, 3)) != CTLRUN_OK)
        goto out;
    my->stock = v[0];
    my->sold_count = v[1];
    my->per_user = (int)v[2];
    int64_t w[6];
    snprintf(sql, sizeof(sql),
             "SELECT COUNT(*), COUNT(DISTINCT order_no), COUNT(DISTINCT user_id), "
             "COALESCE(SUM(status = 'CANCELLED'), 0), COUNT(DISTINCT user_id, user_slot), "
             "COALESCE(SUM(user_slot NOT BETWEEN 1 AND %d), 0) FROM seckill_order "
             "WHERE activity_id = %" PRId64, my->per_user, id);
    if ((rc = ctldb_ints(ctl, sql, w, 6)) != CTLRUN_OK)
        goto out;
    my->rows = w[0];
    my->distinct_orders = w[1];
    my->distinct_users = w[2];
    my->cancelled = w[3];
    my->distinct_slots = w[4];
    my->slot_out = w[5];
    snprintf(sql, sizeof(sql),
             "SELECT COUNT(*) FROM (SELECT user_id FROM seckill_order WHERE activity_id = %" PRId64
             " GROUP BY user_id HAVING COUNT(*) > %d) d",
             id, my->per_user);
    if ((rc = ctldb_ints(ctl, sql, &my->dup_users, 1)) != CTLRUN_OK)
        goto out;
    /* No query for two user coupons of one order: UNIQUE(source_ref) makes it impossible,
     * and the join that would look for it takes seconds on a sale of 200,000. */
    my->uc_dup = 0;
    rc = ctlverify_stream_orders(ctl, id, rd, my);
out:;
    char err[256];
    db_exec(ctl->db, "COMMIT", err, sizeof(err));
    return rc;
}

/* ---- the checks ----------------------------------------------------------------------- */

static void ctlverify_i1(struct ctlverify_check *c, const struct ctlverify_redis *rd,
                         const struct ctlverify_mysql *my)
{
    int64_t sold = my->rows - my->cancelled;
    bool rows_ok = sold <= my->stock;
    bool success_ok = rd->success <= my->stock;
    bool stock_ok = rd->has_stock && !rd->stock_negative;
    c->ok = rows_ok && success_ok && stock_ok;
    ctlverify_add(c, "MySQL orders %" PRId64 " %s stock %" PRId64, sold, rows_ok ? "<=" : ">",
                  my->stock);
    if (my->cancelled)
        ctlverify_add(c, " (and %" PRId64 " cancelled)", my->cancelled);
    ctlverify_add(c, ", Redis SUCCESS %" PRId64 " %s stock", rd->success, success_ok ? "<=" : ">");
    if (rd->has_stock)
        ctlverify_add(c, ", Redis stock %" PRId64 " %s 0", rd->stock_left, stock_ok ? ">=" : "<");
    else
        ctlverify_add(c, ", Redis stock key missing (not warmed?)");
}

static void ctlverify_i2(struct ctlverify_check *c, const struct ctlverify_redis *rd,
                         const struct ctlverify_mysql *my)
{
    /* A hash holds one order per holder by construction; the converse, one holder per
     * order, is worth checking: two holders pointing at one order means a corrupted hash. */
    size_t shared = 0, twice = 0;
    for (size_t i = 1; i < rd->nusers; i++)
        if (ctlverify_cmp_user(&rd->users[i], &rd->users[i - 1]) == 0)
            twice++;  /* a holder in two buckets */
    const char **nos = malloc((rd->nusers + 1) * sizeof(*nos));
    if (nos) {
        for (size_t i = 0; i < rd->nusers; i++)
            nos[i] = rd->users[i].order_no;
        qsort(nos, rd->nusers, sizeof(*nos), ctlverify_cmp_str);
        for (size_t i = 1; i < rd->nusers; i++)
            if (strcmp(nos[i], nos[i - 1]) == 0)
                shared++;
        free(nos);
    }
    int64_t matched = my->streamed - my->user_missing - my->user_other;
    c->ok = my->dup_users == 0 && shared == 0 && rd->bad_users == 0 && my->user_missing == 0 &&
            my->user_other == 0 && nos != NULL && twice == 0 && rd->wrong_bucket == 0 && my->slot_out == 0 &&
            my->distinct_slots == my->rows && rd->over_limit == 0 && rd->hash_mismatch == 0;
    /* A sale of one order per user reads as it always did. */
    bool one = my->per_user == 1;
    ctlverify_add(c, "users with %d+ MySQL rows %" PRId64, my->per_user + 1, my->dup_users);
    if (my->slot_out)
        ctlverify_add(c, ", rows in a slot outside 1..%d %" PRId64, my->per_user, my->slot_out);
    if (my->distinct_slots != my->rows)
        ctlverify_add(c, ", slots held by two rows %" PRId64, my->rows - my->distinct_slots);
    ctlverify_add(c, "; users hash %zu entries, orders shared by two %s %zu", rd->nusers + rd->bad_users,
                  one ? "users" : "holders", shared);
    if (rd->bad_users)
        ctlverify_add(c, ", %zu fields not a %s", rd->bad_users, one ? "user id" : "holder");
    if (rd->over_limit) {
        ctlverify_add(c, ", %zu fields in a slot above %d", rd->over_limit, rd->per_user);
        ctlverify_add_samples(c, &rd->s_over);
    }
    if (rd->hash_mismatch)
        ctlverify_add(c, "; activity hash perUser %s in %d bucket(s), MySQL per_user %d", rd->hash_per_user,
                      rd->hash_mismatch, rd->per_user);
    if (rd->nbuckets > 1)
        ctlverify_add(c, "; %d buckets: users in two %zu, users in a bucket not theirs %zu", rd->nbuckets,
                      twice, rd->wrong_bucket);
    ctlverify_add(c, "; MySQL rows matching the users hash %" PRId64 "/%" PRId64
                  " (%" PRId64 " missing, %" PRId64 " other order)",
                  matched, my->streamed, my->user_missing, my->user_other);
    ctlverify_add_samples(c, &my->s_user);
}

/* A cancelled sale's unsold stock left the sale as 'returned' (cancel.lua): it counts on
 * the stock side like the stock key (see ctlallotment.h). */
static void ctlverify_i3(struct ctlverify_check *c, const struct ctlverify_redis *rd,
                         const struct ctlverify_mysql *my)
{
    int64_t sum = rd->stock_left + rd->reservations + rd->queued + rd->claimed + rd->success +
                  rd->returned + rd->in_transit;
    /* The 'sold' counter is what the gauges show for SUCCESS: it must be the count. */
    bool sold_ok = rd->sold < 0 || rd->sold == rd->success;
    c->ok = rd->has_stock && sum == my->stock && sold_ok;
    if (!rd->has_stock) {
        ctlverify_add(c, "Redis stock key missing (not warmed?)");
        return;
    }
    ctlverify_add(c, "stock left %" PRId64 " + reservations %" PRId64 " + queued %" PRId64
                  " + claimed %" PRId64 " + SUCCESS %" PRId64, rd->stock_left, rd->reservations,
                  rd->queued, rd->claimed, rd->success);
    if (rd->returned != 0)
        ctlverify_add(c, " + returned by cancel %" PRId64, rd->returned);
    if (rd->nbuckets > 1)
        ctlverify_add(c, " + in transit between %d buckets %" PRId64, rd->nbuckets, rd->in_transit);
    ctlverify_add(c, " = %" PRId64 " %s stock %" PRId64, sum, sum == my->stock ? "==" : "!=", my->stock);
    if (rd->sold >= 0)
        ctlverify_add(c, "; sold counter %" PRId64 " %s SUCCESS", rd->sold, sold_ok ? "==" : "!=");
    else
        ctlverify_add(c, "; no sold counter (warmed before it existed)");
}

static void ctlverify_i4(struct ctlverify_check *c, const struct ctlverify_redis *rd,
                         const struct ctlverify_mysql *my, int64_t stuck_after_s)
{
    int64_t success_missing = 0;
    struct ctlverify_samples sm = { 0 };
    for (size_t i = 0; i < rd->norders; i++) {
        if (strcmp(rd->orders[i].status, "SUCCESS") != 0)
            continue;
        const char *no = rd->orders[i].order_no;
        /* No rows: order_nos is NULL, which bsearch must not get even for 0 items. */
        if (my->norder_nos == 0 ||
            !bsearch(&no, my->order_nos, my->norder_nos, sizeof(*my->order_nos), ctlverify_cmp_str)) {
            success_missing++;
            ctlverify_sample(&sm, "%s", no);
        }
    }
    int64_t sold = my->rows - my->cancelled;
    c->ok = my->not_success == 0 && success_missing == 0 && my->sold_count == sold && rd->stuck == 0;
    ctlverify_add(c, "MySQL rows whose status Redis does not share %" PRId64, my->not_success);
    ctlverify_add_samples(c, &my->s_not_success);
    ctlverify_add(c, "; Redis SUCCESS without MySQL row %" PRId64, success_missing);
    ctlverify_add_samples(c, &sm);
    ctlverify_add(c, "; sold_count %" PRId64 " %s rows %" PRId64, my->sold_count,
                  my->sold_count == sold ? "==" : "!=", sold);
    if (my->cancelled)
        ctlverify_add(c, " (not the %" PRId64 " cancelled)", my->cancelled);
    ctlverify_add(c, "; reservations stuck past %" PRId64 " s: %" PRId64, stuck_after_s, rd->stuck);
}

static void ctlverify_i5(struct ctlverify_check *c, const struct ctlverify_mysql *my)
{
    /* A user of a sale of --per-user above 1 holds a row a slot. */
    int64_t holders = my->per_user == 1 ? my->distinct_users : my->distinct_slots;
    bool counts_ok = my->rows == my->distinct_orders && my->rows == holders;
    c->ok = counts_ok && my->uc_missing == 0 && my->uc_dup == 0 && my->uc_mismatch == 0;
    ctlverify_add(c, "rows %" PRId64 " %s distinct order_no %" PRId64 " %s distinct %s %" PRId64,
                  my->rows, my->rows == my->distinct_orders ? "==" : "!=", my->distinct_orders,
                  my->distinct_orders == holders ? "==" : "!=", my->per_user == 1 ? "users" : "user slots",
                  holders);
    ctlverify_add(c, "; user_coupon per order: %" PRId64 " missing, %" PRId64 " duplicated, %" PRId64
                  " with another user or coupon", my->uc_missing, my->uc_dup, my->uc_mismatch);
    ctlverify_add_samples(c, &my->s_uc);
}

int ctlverify_run(struct ctlrun *ctl, int argc, char **argv)
{
    struct ctlactivity_row row;
    int rc = ctlactivity_load_arg(ctl, argc, argv, &row);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t id = row.id;
    /* The checks compare Redis with MySQL, and Redis keeps only the activity hash now: the
     * archive made the same comparison before it removed anything (store/archive.h). */
    if (row.archived)
        return ctlout_fail(ctl, "activity %" PRId64 " is archived: its orders are in MySQL alone, which the "
                           "archive checked against Redis before removing its keys", id);

    struct ctlverify_redis rd;
    struct ctlverify_mysql my;
    memset(&my, 0, sizeof(my));
    int64_t now = clock_wall_ms();
    rc = ctlverify_read_redis(ctl, &row, now, &rd);
    if (rc == CTLRUN_OK)
        rc = ctlverify_read_mysql(ctl, id, &rd, &my);
    if (rc != CTLRUN_OK) {
        ctlverify_mysql_free(&my);
        ctlverify_redis_free(&rd);
        return rc;
    }

    char per_user[32] = "one per user";
    if (row.per_user > 1)
        snprintf(per_user, sizeof(per_user), "at most %d per user", row.per_user);
    struct ctlverify_check checks[5] = {
        { "I1", "no oversell", false, "" },
        { "I2", per_user, false, "" },
        { "I3", "conservation", false, "" },
        { "I4", "agreement", false, "" },
        { "I5", "idempotent", false, "" },
    };
    ctlverify_i1(&checks[0], &rd, &my);
    ctlverify_i2(&checks[1], &rd, &my);
    ctlverify_i3(&checks[2], &rd, &my);
    ctlverify_i4(&checks[3], &rd, &my,
                 ctl->cfg.pre_reduce_timeout + CTLVERIFY_STUCK_MARGIN_MS / 1000);
    ctlverify_i5(&checks[4], &my);
    ctlverify_mysql_free(&my);
    ctlverify_redis_free(&rd);

    bool all = true;
    for (size_t i = 0; i < 5; i++)
        all = all && checks[i].ok;
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "activityId", (double)id);
        cJSON_AddBoolToObject(obj, "ok", all);
        cJSON *arr = cJSON_AddArrayToObject(obj, "checks");
        for (size_t i = 0; i < 5; i++) {
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "id", checks[i].id);
            cJSON_AddStringToObject(c, "name", checks[i].name);
            cJSON_AddBoolToObject(c, "ok", checks[i].ok);
            cJSON_AddStringToObject(c, "detail", checks[i].detail);
            cJSON_AddItemToArray(arr, c);
        }
        if (ctlout_json(ctl, obj) != CTLRUN_OK)
            return CTLRUN_FAIL;
    } else {
        for (size_t i = 0; i < 5; i++)
            printf("%s  %s %s: %s\n", checks[i].ok ? "PASS" : "FAIL", checks[i].id, checks[i].name,
                   checks[i].detail);
    }
    return all ? CTLRUN_OK : CTLRUN_FAIL;
}
