#include "consumer/supersede.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/holder.h"
#include "common/keys.h"
#include "common/log.h"
#include "consumer/backend.h"
#include "consumer/reservation.h"
#include "consumer/consumer.h"
#include "consumer/persist.h"
#include "store/sqltext.h"

#define SUPERSEDE_KEYS 8
static const enum keys_kind supersede_kinds[SUPERSEDE_KEYS] = {
    KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED, KEYS_FAILED, KEYS_ACTIVITY,
    KEYS_FAILED_USERS,
};

/* Orders as supersede.lua's argument pairs (orderNo, holder: holder.h). Owned: freed by
 * pairs_free. */
struct pairs {
    char (*order_no)[ORDERNO_LEN];
    char (*user)[HOLDER_LEN];
    size_t count, cap;
};

static int pairs_add(struct pairs *p, const char *order_no, const char *user)
{
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        void *o = realloc(p->order_no, cap * sizeof(*p->order_no));
        if (!o)
            return -1;
        p->order_no = o;
        void *u = realloc(p->user, cap * sizeof(*p->user));
        if (!u)
            return -1;
        p->user = u;
        p->cap = cap;
    }
    snprintf(p->order_no[p->count], sizeof(p->order_no[0]), "%s", order_no);
    snprintf(p->user[p->count], sizeof(p->user[0]), "%s", user);
    p->count++;
    return 0;
}

static void pairs_free(struct pairs *p)
{
    free(p->order_no);
    free(p->user);
    memset(p, 0, sizeof(*p));
}

/* The user of a holder (holder.h); 0 for none. */
static int64_t user_of(const char *holder)
{
    int64_t user;
    int slot;
    return holder_parse(holder, &user, &slot) == 0 ? user : 0;
}

/* Leaves in winners only the pairs whose user is one of losers' (in any slot). */
static void keep_users_of(struct pairs *winners, const struct pairs *losers)
{
    size_t kept = 0;
    for (size_t i = 0; i < winners->count; i++) {
        bool ours = false;
        int64_t user = user_of(winners->user[i]);
        for (size_t j = 0; j < losers->count && !ours; j++)
            ours = user == user_of(losers->user[j]);
        if (ours) {
            memmove(winners->order_no[kept], winners->order_no[i], sizeof(winners->order_no[0]));
            memmove(winners->user[kept], winners->user[i], sizeof(winners->user[0]));
            kept++;
        }
    }
    winners->count = kept;
}

/* A duplicate of a user MySQL holds (the upsert added no row) or a sale MySQL sold out. */
static bool is_loser(const struct batch *b, size_t i)
{
    return b->refused[i] == BATCH_REFUSED_SOLD_OUT || (!b->in_db[i] && !b->refused[i]);
}

/* The rows of activity's sale that stand for the losers [start, end): those of the
 * duplicated users, or every row once the sale is sold out in MySQL. */
static int find_winners(struct consumer *c, const struct batch *b, size_t start, size_t end,
                        struct pairs *winners, char *err, size_t errlen)
{
    bool sold_out = false;
    struct sqltext sql = { 0 };
    sqltext_printf(&sql, "SELECT order_no, user_id, user_slot FROM seckill_order "
                   "WHERE activity_id = %" PRId64,
                   b->accepted[start].activity_id);
    for (size_t i = start; i < end; i++)
        sold_out = sold_out || (is_loser(b, i) && b->refused[i] == BATCH_REFUSED_SOLD_OUT);
    if (!sold_out) {
        const char *sep = " AND user_id IN (";
        for (size_t i = start; i < end; i++) {
            if (!is_loser(b, i))
                continue;
            sqltext_printf(&sql, "%s%" PRId64, sep, b->accepted[i].user_id);
            sep = ",";
        }
        sqltext_printf(&sql, ")");
    }
    int rc = -1;
    if (sql.failed) {
        snprintf(err, errlen, "select seckill_order: out of memory");
    } else if (mysql_real_query(c->db, sql.data, (unsigned long)sql.len) != 0) {
        snprintf(err, errlen, "select seckill_order: %s (%u)", mysql_error(c->db), mysql_errno(c->db));
        if (persist_connection_lost(mysql_errno(c->db)))
            backend_db_drop(c);
    } else {
        MYSQL_RES *res = mysql_store_result(c->db);
        if (!res) {
            snprintf(err, errlen, "select seckill_order: %s", mysql_error(c->db));
        } else {
            MYSQL_ROW row;
            rc = 0;
            while (rc == 0 && (row = mysql_fetch_row(res)) != NULL) {
                char holder[HOLDER_LEN];
                if (!row[0] || !row[1] || !row[2] ||
                    holder_format(holder, sizeof(holder), strtoll(row[1], NULL, 10), atoi(row[2])) < 0)
                    continue;  /* not a row the consumer wrote: no record of it to restore */
                if (pairs_add(winners, row[0], holder) != 0) {
                    snprintf(err, errlen, "out of memory");
                    rc = -1;
                }
            }
            mysql_free_result(res);
        }
    }
    sqltext_free(&sql);
    return rc;
}

/* supersede.lua on losers [lo, lo + nl) and winners [wo, wo + nw) of one sale; adds what
 * it ended and recorded to *ended and *adopted. */
/* How many of count, from offset at, one call takes. */
static size_t chunk_at(size_t count, size_t at)
{
    return count - at < RESERVATION_CHUNK ? count - at : RESERVATION_CHUNK;
}

static int call(struct consumer *c, const struct keys_set *set, const struct pairs *losers, size_t lo,
                size_t nl, const struct pairs *winners, size_t wo, size_t nw, long long *ended,
                long long *adopted, char *err, size_t errlen)
{
    const char *keys[SUPERSEDE_KEYS];
    for (int i = 0; i < SUPERSEDE_KEYS; i++)
        keys[i] = set->name[supersede_kinds[i]];
    size_t nargs = 1 + 2 * (nl + nw);
    const char **args = malloc(nargs * sizeof(*args));
    if (!args) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char count[24];
    snprintf(count, sizeof(count), "%zu", nl);
    args[0] = count;
    for (size_t i = 0; i < nl; i++) {
        args[1 + 2 * i] = losers->order_no[lo + i];
        args[2 + 2 * i] = losers->user[lo + i];
    }
    for (size_t i = 0; i < nw; i++) {
        args[1 + 2 * (nl + i)] = winners->order_no[wo + i];
        args[2 + 2 * (nl + i)] = winners->user[wo + i];
    }
    redisReply *reply = reservation_eval(c, LUASCRIPT_SUPERSEDE, SUPERSEDE_KEYS, keys, (int)nargs, args, err,
                                   errlen);
    free(args);
    if (!reply)
        return -1;
    int ok = reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
             reply->element[0]->type == REDIS_REPLY_INTEGER && reply->element[1]->type == REDIS_REPLY_INTEGER;
    if (ok) {
        *ended += reply->element[0]->integer;
        *adopted += reply->element[1]->integer;
    }
    freeReplyObject(reply);
    if (!ok) {
        snprintf(err, errlen, "supersede.lua: unexpected reply");
        return -1;
    }
    return 0;
}

static int supersede_run(struct consumer *c, const struct batch *b, size_t start, size_t end, char *err,
                         size_t errlen)
{
    struct pairs losers = { 0 }, winners = { 0 };
    struct keys_set set;
    int rc = 0;
    const struct orderevent *first = &b->accepted[start];
    if ((first->bucket_tag[0] ? keys_set_build_tag(&set, &c->cfg, first->activity_id, first->bucket_tag)
                              : keys_set_build(&set, &c->cfg, first->activity_id)) != 0) {
        snprintf(err, errlen, "activity %" PRId64 ": key too long", b->accepted[start].activity_id);
        return -1;
    }
    for (size_t i = start; i < end && rc == 0; i++) {
        if (!is_loser(b, i))
            continue;
        char user[HOLDER_LEN];
        orderevent_holder(&b->accepted[i], user, sizeof(user));
        LOG_ORDER_WARN(b->accepted[i].order_no, "user %" PRId64 ": MySQL holds %s already; FAILED, its unit "
                       "kept for it", b->accepted[i].user_id,
                       b->refused[i] == BATCH_REFUSED_SOLD_OUT ? "the sale's whole stock"
                       : "another order of the user");
        if (pairs_add(&losers, b->accepted[i].order_no, user) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = find_winners(c, b, start, end, &winners, err, errlen);
    /* In a bucketed sale this run is one bucket's: only the winners of its losers' users
     * live here (a user never changes bucket); the others' records are in their buckets. */
    if (rc == 0 && strchr(first->bucket_tag, '.'))
        keep_users_of(&winners, &losers);
    long long ended = 0, adopted = 0;
    for (size_t lo = 0; rc == 0 && lo < losers.count; lo += RESERVATION_CHUNK)
        rc = call(c, &set, &losers, lo, chunk_at(losers.count, lo), &winners, 0, 0, &ended, &adopted, err,
                  errlen);
    for (size_t wo = 0; rc == 0 && wo < winners.count; wo += RESERVATION_CHUNK)
        rc = call(c, &set, &losers, 0, 0, &winners, wo, chunk_at(winners.count, wo), &ended, &adopted, err,
                  errlen);
    if (rc == 0 && (ended > 0 || adopted > 0))
        LOG_WARN("activity %" PRId64 ": %lld order(s) FAILED in place of orders MySQL holds, %lld order(s) "
                 "MySQL holds recorded SUCCESS again (Redis had lost them: a failover without "
                 "redis.wait-replicas?)", b->accepted[start].activity_id, ended, adopted);
    pairs_free(&losers);
    pairs_free(&winners);
    return rc;
}

int supersede_orders(struct consumer *c, char *err, size_t errlen)
{
    const struct batch *b = &c->batch;
    for (size_t start = 0; start < b->accepted_count;) {
        size_t end = batch_bucket_run_end(b->accepted, b->accepted_count, start);
        bool any = false;
        for (size_t i = start; i < end && !any; i++)
            any = is_loser(b, i);
        if (any && (backend_db(c, err, errlen) != 0 || backend_redis(c, err, errlen) != 0 ||
                    supersede_run(c, b, start, end, err, errlen) != 0))
            return -1;
        start = end;
    }
    return 0;
}
