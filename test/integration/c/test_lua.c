/* The Redis scripts of schema/lua against a real Redis (SECKILL_TEST_REDIS_HOST/PORT,
 * default 127.0.0.1:16379). Each test warms a fresh activity with a random id and deletes
 * its keys afterwards. An unreachable Redis is a failure, not a skip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/keys.h"
#include "common/luascript.h"
#include "common/orderno.h"
#include "common/sha1.h"

/* 2026-12-01T12:00:00Z: every test runs its sale around this instant. */
#define NOW 1796126400000LL
#define HOUR 3600000LL
#define COUPON_ID 7

static redisContext *redis;
static struct luascript_set scripts;
static struct config cfg;
static struct orderno_gen gen;
static int64_t next_activity;
static int64_t gen_clock = NOW;

/* The activity of the running test. */
static int64_t A;

#define assert_str(reply_str, want)                                                          \
    do {                                                                                     \
        const char *got_ = (reply_str);                                                      \
        if (!got_ || strcmp(got_, (want)) != 0)                                              \
            fail_msg("got '%s', expected '%s'", got_ ? got_ : "(nil)", (want));              \
    } while (0)

/* ---- plain Redis helpers -------------------------------------------------------------- */

static redisReply *cmd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(redis, fmt, ap);
    va_end(ap);
    if (!r)
        fail_msg("Redis: %s", redis->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("Redis error: %s", r->str);
    return r;
}

static void cmd_ok(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(redis, fmt, ap);
    va_end(ap);
    if (!r)
        fail_msg("Redis: %s", redis->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("Redis error: %s", r->str);
    freeReplyObject(r);
}

static int64_t cmd_int(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(redis, fmt, ap);
    va_end(ap);
    if (!r)
        fail_msg("Redis: %s", redis->errstr);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("expected an integer reply, got type %d (%s)", r->type,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    int64_t v = r->integer;
    freeReplyObject(r);
    return v;
}

/* A string reply into buf; returns false for nil. */
static bool cmd_str(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(redis, fmt, ap);
    va_end(ap);
    if (!r)
        fail_msg("Redis: %s", redis->errstr);
    bool found = false;
    if (r->type == REDIS_REPLY_STRING) {
        snprintf(buf, len, "%s", r->str);
        found = true;
    } else if (r->type != REDIS_REPLY_NIL) {
        fail_msg("expected a string reply, got type %d", r->type);
    }
    freeReplyObject(r);
    return found;
}

static void key(char *buf, enum keys_kind kind)
{
    assert_true(keys_activity(buf, KEYS_LEN, &cfg, kind, A) > 0);
}

static void subject_key(char *buf, enum keys_subject_kind kind, const char *subject)
{
    assert_true(keys_subject(buf, KEYS_LEN, kind, A, subject) > 0);
}

static int64_t stock_left(void)
{
    char k[KEYS_LEN], v[32];
    key(k, KEYS_STOCK);
    if (!cmd_str(v, sizeof(v), "GET %s", k))
        fail_msg("stock key %s is missing", k);
    return strtoll(v, NULL, 10);
}

static int64_t count(const char *verb, enum keys_kind kind)
{
    char k[KEYS_LEN];
    key(k, kind);
    return cmd_int("%s %s", verb, k);
}

static bool order_status(const char *order_no, char *out, size_t len)
{
    char k[KEYS_LEN];
    key(k, KEYS_ORDERS);
    return cmd_str(out, len, "HGET %s %s", k, order_no);
}

static void assert_order_status(const char *order_no, const char *want)
{
    char st[32];
    if (!order_status(order_no, st, sizeof(st)))
        fail_msg("order %s has no status, expected %s", order_no, want);
    assert_str(st, want);
}

/* The failed stream holds `entries` entries, the last one for this order, user and reason
 * (with a time: Redis' clock). */
static void assert_last_failed(const char *order_no, int64_t user, const char *reason, long long entries)
{
    char k[KEYS_LEN];
    key(k, KEYS_FAILED);
    assert_int_equal(cmd_int("XLEN %s", k), entries);
    redisReply *r = redisCommand(redis, "XREVRANGE %s + - COUNT 1", k);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 1);
    const redisReply *kv = r->element[0]->element[1];
    assert_int_equal(kv->elements, 8);
    char uid[24];
    snprintf(uid, sizeof(uid), "%" PRId64, user);
    const char *want[8] = { "o", order_no, "u", uid, "r", reason, "t", NULL };
    for (size_t i = 0; i < 8; i++)
        if (want[i])
            assert_string_equal(kv->element[i]->str, want[i]);
    assert_true(strtoll(kv->element[7]->str, NULL, 10) > 1700000000000LL);
    freeReplyObject(r);
}

static bool user_order(int64_t user, char *out, size_t len)
{
    char k[KEYS_LEN];
    key(k, KEYS_USERS);
    return cmd_str(out, len, "HGET %s %" PRId64, k, user);
}

static int64_t success_count(void)
{
    char k[KEYS_LEN];
    key(k, KEYS_ORDERS);
    redisReply *r = cmd("HVALS %s", k);
    int64_t n = 0;
    for (size_t i = 0; i < r->elements; i++)
        if (strcmp(r->element[i]->str, "SUCCESS") == 0)
            n++;
    freeReplyObject(r);
    return n;
}

/* The activity hash's 'sold' counter, -1 when the hash has none. */
static int64_t sold_counter(void)
{
    char k[KEYS_LEN];
    key(k, KEYS_ACTIVITY);
    redisReply *r = cmd("HGET %s sold", k);
    int64_t n = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return n;
}

static bool in_set(enum keys_kind kind, const char *member)
{
    char k[KEYS_LEN];
    key(k, kind);
    if (kind == KEYS_RESERVED) {
        redisReply *r = redisCommand(redis, "ZSCORE %s %s", k, member);
        assert_non_null(r);
        bool found = r->type == REDIS_REPLY_STRING;
        freeReplyObject(r);
        return found;
    }
    return cmd_int("SISMEMBER %s %s", k, member) == 1;
}

/* ---- warming and cleaning ------------------------------------------------------------ */

static void warm(int64_t stock, int64_t start, int64_t end, const char *status)
{
    char ka[KEYS_LEN], ks[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    key(ks, KEYS_STOCK);
    cmd_ok("HSET %s name t couponId %d stock %" PRId64 " start %" PRId64 " end %" PRId64
           " status %s sold 0",
           ka, COUPON_ID, stock, start, end, status);
    cmd_ok("SET %s %" PRId64, ks, stock);
}

static void warm_open(int64_t stock)
{
    warm(stock, NOW - HOUR, NOW + HOUR, "ACTIVE");
}

static size_t delete_activity_keys(int64_t activity)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "*{%" PRId64 "}*", activity);
    size_t deleted = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = cmd("SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 2);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++)
            deleted += (size_t)cmd_int("DEL %s", keys->element[i]->str);
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return deleted;
}

static int setup(void **state)
{
    (void)state;
    A = next_activity++;
    /* A fresh id: nothing of it may exist yet. */
    if (delete_activity_keys(A) != 0) {
        fprintf(stderr, "activity %" PRId64 " already had keys\n", A);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    delete_activity_keys(A);
    return delete_activity_keys(A) == 0 ? 0 : -1;
}

/* ---- the scripts ---------------------------------------------------------------------- */

struct exec_opts {
    bool limits;
    int64_t per_user, per_ip;
    bool brush;
    int64_t threshold, ban_seconds;
    const char *token_nonce; /* NULL: purchase tokens off */
};

static const struct exec_opts NO_LIMITS = { false, 10, 100, false, 5, 60, NULL };

struct xres {
    char status[32];
    char order_no[ORDERNO_LEN]; /* OK / DUPLICATE */
    char coupon[32];            /* OK */
    int64_t retry_after;        /* RATE_LIMITED / BLOCKED */
    char sent_no[ORDERNO_LEN];  /* the order number this attempt offered */
};

/* One request of an execute call. */
struct xreq {
    int64_t user;
    const char *ip;
    int64_t now;
};

/* One execute.lua call carrying n requests of activity A (the gateway's coalesced batch);
 * out[i] is request i's verdict. */
static void execute_batch(const struct xreq *reqs, size_t n, const struct exec_opts *o, struct xres *out)
{
    enum { MAX = 64 };
    assert_true(n >= 1 && n <= MAX);
    static char k[5 + 5 * MAX][KEYS_LEN + 64];
    static char uid[MAX][24], now_s[MAX][24];
    const char *keys[5 + 5 * MAX];
    const char *args[7 + 3 * MAX];
    key(k[0], KEYS_ACTIVITY);
    key(k[1], KEYS_STOCK);
    key(k[2], KEYS_USERS);
    key(k[3], KEYS_ORDERS);
    key(k[4], KEYS_RESERVED);
    char pu[24], pi[24], th[24], ban[24];
    snprintf(pu, sizeof(pu), "%" PRId64, o->per_user);
    snprintf(pi, sizeof(pi), "%" PRId64, o->per_ip);
    snprintf(th, sizeof(th), "%" PRId64, o->threshold);
    snprintf(ban, sizeof(ban), "%" PRId64, o->ban_seconds);
    args[0] = o->limits ? "1" : "0";
    args[1] = pu;
    args[2] = pi;
    args[3] = o->brush ? "1" : "0";
    args[4] = th;
    args[5] = ban;
    args[6] = o->token_nonce ? "60" : "0";
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(uid[i], sizeof(uid[i]), "%" PRId64, reqs[i].user);
        snprintf(now_s[i], sizeof(now_s[i]), "%" PRId64, reqs[i].now);
        char *rk = k[5 + 5 * i];
        subject_key(rk, KEYS_RATE_USER, uid[i]);
        subject_key(rk + sizeof(k[0]), KEYS_RATE_IP, reqs[i].ip);
        subject_key(rk + 2 * sizeof(k[0]), KEYS_BRUSH, uid[i]);
        subject_key(rk + 3 * sizeof(k[0]), KEYS_BAN, uid[i]);
        subject_key(rk + 4 * sizeof(k[0]), KEYS_TOKEN, o->token_nonce ? o->token_nonce : "-");
        assert_true(orderno_format(out[i].sent_no, sizeof(out[i].sent_no), orderno_next(&gen, gen_clock),
                                   A) > 0);
        args[7 + 3 * i] = uid[i];
        args[8 + 3 * i] = out[i].sent_no;
        args[9 + 3 * i] = now_s[i];
    }
    for (size_t i = 0; i < 5 + 5 * n; i++)
        keys[i] = k[i];
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_EXECUTE], (int)(5 + 5 * n), keys,
                                        (int)(7 + 3 * n), args);
    if (!r)
        fail_msg("execute: %s", redis->errstr);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        fail_msg("execute: unexpected reply type %d with %zu elements %s", r->type, r->elements,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    for (size_t i = 0; i < n; i++) {
        const redisReply *v = r->element[i];
        struct xres *x = &out[i];
        assert_int_equal(v->type, REDIS_REPLY_ARRAY);
        assert_true(v->elements >= 1);
        snprintf(x->status, sizeof(x->status), "%s", v->element[0]->str);
        if (strcmp(x->status, "OK") == 0) {
            assert_int_equal(v->elements, 3);
            snprintf(x->order_no, sizeof(x->order_no), "%s", v->element[1]->str);
            snprintf(x->coupon, sizeof(x->coupon), "%s", v->element[2]->str);
        } else if (strcmp(x->status, "DUPLICATE") == 0) {
            assert_int_equal(v->elements, 2);
            snprintf(x->order_no, sizeof(x->order_no), "%s", v->element[1]->str);
        } else if (strcmp(x->status, "RATE_LIMITED") == 0 || strcmp(x->status, "BLOCKED") == 0) {
            assert_int_equal(v->elements, 2);
            assert_int_equal(v->element[1]->type, REDIS_REPLY_INTEGER);
            x->retry_after = v->element[1]->integer;
        } else if (strcmp(x->status, "OUT_OF_STOCK") == 0) {
            /* With the sale's bucket count: 1 here. */
            assert_int_equal(v->elements, 2);
            assert_int_equal(v->element[1]->integer, 1);
        } else {
            assert_int_equal(v->elements, 1);
        }
    }
    freeReplyObject(r);
}

static struct xres execute_at(int64_t user, const char *ip, int64_t now,
                              const struct exec_opts *o)
{
    struct xreq req = { user, ip, now };
    struct xres x;
    execute_batch(&req, 1, o, &x);
    return x;
}

static struct xres execute(int64_t user)
{
    return execute_at(user, "10.0.0.1", NOW, &NO_LIMITS);
}

static struct xres execute_ok(int64_t user)
{
    struct xres x = execute(user);
    assert_str(x.status, "OK");
    assert_string_equal(x.order_no, x.sent_no);
    return x;
}

static int64_t release_call_n(int nargs, const char *const *args)
{
    char k[6][KEYS_LEN];
    key(k[0], KEYS_STOCK);
    key(k[1], KEYS_USERS);
    key(k[2], KEYS_ORDERS);
    key(k[3], KEYS_RESERVED);
    key(k[4], KEYS_FAILED);
    key(k[5], KEYS_ACTIVITY);
    const char *keys[6] = { k[0], k[1], k[2], k[3], k[4], k[5] };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_RELEASE], 6, keys, nargs, args);
    if (!r)
        fail_msg("release: %s", redis->errstr);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("release: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    int64_t n = r->integer;
    freeReplyObject(r);
    return n;
}

static int64_t release_call(const char *mode, const char *a1, const char *a2)
{
    const char *args[3] = { mode, a1, a2 };
    return release_call_n(3, args);
}

static int64_t rollback(const char *order_no, int64_t user)
{
    char uid[24];
    snprintf(uid, sizeof(uid), "%" PRId64, user);
    return release_call("order", order_no, uid);
}

static int64_t reap(int64_t cutoff_ms, int64_t max_count)
{
    char c[24], m[24];
    snprintf(c, sizeof(c), "%" PRId64, cutoff_ms);
    snprintf(m, sizeof(m), "%" PRId64, max_count);
    return release_call("older", c, m);
}

/* The reaper of a gateway: only the reservations whose order number carries a node that
 * `mode` ("own" NODE, "except" ",a,b,") leaves to it. */
static int64_t reap_nodes(int64_t cutoff_ms, int64_t max_count, const char *mode, const char *nodes)
{
    char c[24], m[24];
    snprintf(c, sizeof(c), "%" PRId64, cutoff_ms);
    snprintf(m, sizeof(m), "%" PRId64, max_count);
    const char *args[5] = { "older", c, m, mode, nodes };
    return release_call_n(5, args);
}

static void member_of(char *buf, size_t len, const char *order_no, int64_t user)
{
    snprintf(buf, len, "%s|%" PRId64, order_no, user);
}

static int64_t mark_queued(const char *order_no, int64_t user)
{
    char k[2][KEYS_LEN], member[96];
    key(k[0], KEYS_RESERVED);
    key(k[1], KEYS_QUEUED);
    member_of(member, sizeof(member), order_no, user);
    const char *keys[2] = { k[0], k[1] };
    const char *args[1] = { member };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_QUEUED], 2, keys, 1, args);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    int64_t n = r->integer;
    freeReplyObject(r);
    return n;
}

/* confirm.lua over n (orderNo, user) pairs; verdicts copied into out[i]. */
static void confirm_many(size_t n, const char *const *order_nos, const int64_t *users,
                         char (*out)[16])
{
    char k[8][KEYS_LEN];
    key(k[0], KEYS_STOCK);
    key(k[1], KEYS_USERS);
    key(k[2], KEYS_ORDERS);
    key(k[3], KEYS_RESERVED);
    key(k[4], KEYS_QUEUED);
    key(k[5], KEYS_CLAIMED);
    key(k[6], KEYS_ACTIVITY);
    key(k[7], KEYS_FAILED);
    const char *keys[8] = { k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7] };
    const char **args = calloc(2 * n, sizeof(char *));
    char (*uids)[24] = calloc(n, sizeof(*uids));
    assert_non_null(args);
    assert_non_null(uids);
    for (size_t i = 0; i < n; i++) {
        snprintf(uids[i], sizeof(uids[i]), "%" PRId64, users[i]);
        args[2 * i] = order_nos[i];
        args[2 * i + 1] = uids[i];
    }
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_CONFIRM], 8, keys,
                                        (int)(2 * n), args);
    free(args);
    free(uids);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ARRAY)
        fail_msg("confirm: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    assert_int_equal(r->elements, n);
    for (size_t i = 0; i < n; i++)
        snprintf(out[i], sizeof(out[i]), "%s", r->element[i]->str);
    freeReplyObject(r);
}

static void assert_confirm(const char *order_no, int64_t user, const char *want)
{
    char verdict[1][16];
    confirm_many(1, &order_no, &user, verdict);
    if (strcmp(verdict[0], want) != 0)
        fail_msg("confirm %s: got %s, expected %s", order_no, verdict[0], want);
}

static int64_t finalize(size_t n, const char *const *order_nos, const int64_t *users)
{
    char k[3][KEYS_LEN];
    key(k[0], KEYS_ORDERS);
    key(k[1], KEYS_CLAIMED);
    key(k[2], KEYS_ACTIVITY);
    const char *keys[3] = { k[0], k[1], k[2] };
    const char **args = calloc(2 * n + 1, sizeof(char *));
    char (*uids)[24] = calloc(n + 1, sizeof(*uids));
    assert_non_null(args);
    assert_non_null(uids);
    for (size_t i = 0; i < n; i++) {
        snprintf(uids[i], sizeof(uids[i]), "%" PRId64, users[i]);
        args[2 * i] = order_nos[i];
        args[2 * i + 1] = uids[i];
    }
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_FINALIZE], 3, keys,
                                        (int)(2 * n), args);
    free(args);
    free(uids);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    int64_t v = r->integer;
    freeReplyObject(r);
    return v;
}

static int64_t finalize_one(const char *order_no, int64_t user)
{
    return finalize(1, &order_no, &user);
}

/* I3: stock + live reservations (resv, queued, claimed) + SUCCESS = initial stock. */
static void assert_conserved(int64_t initial)
{
    int64_t stock = stock_left();
    int64_t resv = count("ZCARD", KEYS_RESERVED);
    int64_t queued = count("SCARD", KEYS_QUEUED);
    int64_t claimed = count("SCARD", KEYS_CLAIMED);
    int64_t success = success_count();
    if (stock < 0 || stock + resv + queued + claimed + success != initial)
        fail_msg("not conserved: stock %" PRId64 " + resv %" PRId64 " + queued %" PRId64
                 " + claimed %" PRId64 " + SUCCESS %" PRId64 " != %" PRId64,
                 stock, resv, queued, claimed, success, initial);
    assert_true(success <= initial); /* I1 */
    /* The counter the gauges read instead of walking the orders hash. */
    if (sold_counter() != success)
        fail_msg("sold counter %" PRId64 " != SUCCESS orders %" PRId64, sold_counter(), success);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_scripts_named_by_redis_sha(void **state)
{
    (void)state;
    /* Our SHA-1 of each script is the name Redis gives it. */
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        const struct luascript *s = &scripts.scripts[i];
        assert_non_null(s->body);
        assert_true(s->body_len > 0);
        redisReply *r = cmd("SCRIPT LOAD %b", s->body, s->body_len);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_string_equal(r->str, s->sha);
        freeReplyObject(r);
    }
    assert_string_equal(scripts.scripts[LUASCRIPT_EXECUTE].name, "execute");
    assert_string_equal(scripts.scripts[LUASCRIPT_RESULT].name, "result");

    /* A script Redis has never seen: EVALSHA gets NOSCRIPT, the call loads it and retries. */
    char want[96], body[128];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    snprintf(want, sizeof(want), "sk-test-%ld-%ld-%d", (long)tv.tv_sec, (long)tv.tv_usec,
             (int)getpid());
    snprintf(body, sizeof(body), "return '%s'", want);
    struct luascript fresh = { .name = "fresh", .body = body, .body_len = strlen(body) };
    sha1_hex(body, strlen(body), fresh.sha);
    redisReply *probe = redisCommand(redis, "EVALSHA %s 0", fresh.sha);
    assert_non_null(probe);
    assert_true(luascript_is_noscript(probe));
    freeReplyObject(probe);
    redisReply *r = luascript_call_sync(redis, &fresh, 0, NULL, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, want);
    assert_false(luascript_is_noscript(r));
    freeReplyObject(r);

    /* A directory without the scripts is an error naming the file. */
    struct luascript_set none;
    char err[256] = "";
    assert_int_equal(luascript_load_all(&none, "/nonexistent/sk-lua", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/sk-lua/"));
}

static void test_stock_never_below_zero(void **state)
{
    (void)state;
    warm_open(5);
    int ok = 0, out = 0;
    for (int64_t user = 1; user <= 20; user++) {
        struct xres x = execute(user);
        if (strcmp(x.status, "OK") == 0) {
            ok++;
            assert_string_equal(x.coupon, "7");
            assert_order_status(x.order_no, "PROCESSING");
        } else if (strcmp(x.status, "OUT_OF_STOCK") == 0) {
            out++;
            char o[ORDERNO_LEN];
            assert_false(user_order(user, o, sizeof(o))); /* no entry for a loser */
        } else {
            fail_msg("user %" PRId64 ": unexpected %s", user, x.status);
        }
    }
    assert_int_equal(ok, 5);
    assert_int_equal(out, 15);
    assert_int_equal(stock_left(), 0);
    assert_int_equal(count("HLEN", KEYS_USERS), 5);
    assert_int_equal(count("HLEN", KEYS_ORDERS), 5);
    assert_int_equal(count("ZCARD", KEYS_RESERVED), 5);
    /* The first five users won, in order. */
    for (int64_t user = 1; user <= 5; user++) {
        char o[ORDERNO_LEN];
        assert_true(user_order(user, o, sizeof(o)));
    }
    assert_conserved(5);
}

static void test_one_per_user(void **state)
{
    (void)state;
    warm_open(10);
    struct xres first = execute_ok(42);
    struct xres again = execute(42);
    assert_str(again.status, "DUPLICATE");
    assert_string_equal(again.order_no, first.order_no);
    assert_string_not_equal(again.sent_no, first.order_no);
    /* The duplicate's order number was not recorded anywhere. */
    char st[32];
    assert_false(order_status(again.sent_no, st, sizeof(st)));
    assert_int_equal(stock_left(), 9);
    assert_int_equal(count("HLEN", KEYS_USERS), 1);
    assert_int_equal(count("ZCARD", KEYS_RESERVED), 1);
    char member[96];
    member_of(member, sizeof(member), first.order_no, 42);
    assert_true(in_set(KEYS_RESERVED, member));
    /* Another user still gets one. */
    execute_ok(43);
    assert_int_equal(stock_left(), 8);
    assert_conserved(10);
}

static void test_window_and_status(void **state)
{
    (void)state;
    const struct exec_opts limits = { true, 10, 100, true, 5, 60, NULL };
    const int64_t start = NOW, end = NOW + HOUR;
    /* Unwarmed: a stock key alone is not an activity. */
    char ks[KEYS_LEN];
    key(ks, KEYS_STOCK);
    cmd_ok("SET %s 10", ks);
    assert_str(execute_at(1, "10.0.0.1", NOW, &limits).status, "NOT_FOUND");
    assert_int_equal(stock_left(), 10);

    warm(10, start, end, "ACTIVE");
    assert_str(execute_at(1, "10.0.0.1", start - 1, &limits).status, "NOT_STARTED");
    assert_str(execute_at(1, "10.0.0.1", start - HOUR, &limits).status, "NOT_STARTED");
    assert_str(execute_at(1, "10.0.0.1", end, &limits).status, "ENDED");
    assert_str(execute_at(1, "10.0.0.1", end + HOUR, &limits).status, "ENDED");
    char ka[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    cmd_ok("HSET %s status CANCELLED", ka);
    assert_str(execute_at(1, "10.0.0.1", start + 1, &limits).status, "CANCELLED");
    /* Cancelled wins over the window too. */
    assert_str(execute_at(1, "10.0.0.1", start - 1, &limits).status, "CANCELLED");
    assert_str(execute_at(1, "10.0.0.1", end, &limits).status, "CANCELLED");

    /* None of these changed anything: stock, users, orders, limit counters. */
    assert_int_equal(stock_left(), 10);
    assert_int_equal(count("HLEN", KEYS_USERS), 0);
    assert_int_equal(count("EXISTS", KEYS_ORDERS), 0);
    assert_int_equal(count("EXISTS", KEYS_RESERVED), 0);
    char k[KEYS_LEN];
    subject_key(k, KEYS_RATE_USER, "1");
    assert_int_equal(cmd_int("EXISTS %s", k), 0);
    subject_key(k, KEYS_RATE_IP, "10.0.0.1");
    assert_int_equal(cmd_int("EXISTS %s", k), 0);
    subject_key(k, KEYS_BRUSH, "1");
    assert_int_equal(cmd_int("EXISTS %s", k), 0);

    /* The window is [start, end): its first and last millisecond sell. */
    cmd_ok("HSET %s status ACTIVE", ka);
    struct xres x = execute_at(1, "10.0.0.1", start, &limits);
    assert_str(x.status, "OK");
    x = execute_at(2, "10.0.0.1", end - 1, &limits);
    assert_str(x.status, "OK");
    assert_int_equal(stock_left(), 8);
}

/* The coalesced call: one execute.lua call for many requests gives every request the
 * verdict it would have had alone, in order, and leaves Redis as the single calls do.
 * The same mix (repeat users, shared IPs, limits, anti-brush, stock running out in the
 * middle) runs once as single calls on one activity and once as one call on a twin. */
static void test_batch_equals_single_calls(void **state)
{
    (void)state;
    enum { N = 48 };
    const struct exec_opts o = { true, 3, 10, true, 4, 60, NULL };
    struct xreq reqs[N];
    static const char *const ips[] = { "10.1.0.1", "10.1.0.2", "10.1.0.3" };
    for (int i = 0; i < N; i++) {
        /* users 1..12, user 5 hammering (anti-brush), user 7 twice in a row */
        int64_t user = (i % 4 == 1) ? 5 : 1 + (i * 7) % 12;
        if (i == 20 || i == 21)
            user = 7;
        reqs[i] = (struct xreq){ user, ips[i % 3], NOW + i };
    }
    const int64_t stock = 6;
    struct xres single[N], batch[N];

    warm_open(stock);
    for (int i = 0; i < N; i++)
        single[i] = execute_at(reqs[i].user, reqs[i].ip, reqs[i].now, &o);
    int64_t single_stock = stock_left();
    int64_t single_users = count("HLEN", KEYS_USERS);
    int64_t single_resv = count("ZCARD", KEYS_RESERVED);

    int64_t first = A;
    A = next_activity++;
    assert_int_equal(delete_activity_keys(A), 0);
    warm_open(stock);
    execute_batch(reqs, N, &o, batch);

    int ok = 0;
    for (int i = 0; i < N; i++) {
        if (strcmp(single[i].status, batch[i].status) != 0)
            fail_msg("request %d (user %" PRId64 "): alone %s, in the batch %s", i, reqs[i].user,
                     single[i].status, batch[i].status);
        assert_int_equal(single[i].retry_after, batch[i].retry_after);
        if (strcmp(batch[i].status, "OK") == 0) {
            assert_string_equal(batch[i].order_no, batch[i].sent_no);
            ok++;
        }
        if (strcmp(batch[i].status, "DUPLICATE") == 0) {
            /* the order of the request that won for this user, in both runs */
            int won = -1;
            for (int j = 0; j < i; j++)
                if (reqs[j].user == reqs[i].user && strcmp(batch[j].status, "OK") == 0)
                    won = j;
            assert_true(won >= 0);
            assert_string_equal(batch[i].order_no, batch[won].sent_no);
            assert_string_equal(single[i].order_no, single[won].sent_no);
        }
    }
    assert_int_equal(ok, stock);  /* the mix sells out within the batch */
    assert_int_equal(stock_left(), single_stock);
    assert_int_equal(count("HLEN", KEYS_USERS), single_users);
    assert_int_equal(count("ZCARD", KEYS_RESERVED), single_resv);
    assert_int_equal(count("HLEN", KEYS_ORDERS), ok);

    delete_activity_keys(A);
    A = first;  /* teardown cleans the first one */
}

/* A call whose keys and arguments do not describe whole requests is refused before it
 * touches anything. */
static void test_batch_malformed_is_refused(void **state)
{
    (void)state;
    warm_open(5);
    char k[6][KEYS_LEN + 64];
    key(k[0], KEYS_ACTIVITY);
    key(k[1], KEYS_STOCK);
    key(k[2], KEYS_USERS);
    key(k[3], KEYS_ORDERS);
    key(k[4], KEYS_RESERVED);
    subject_key(k[5], KEYS_RATE_USER, "1");
    const char *keys[6] = { k[0], k[1], k[2], k[3], k[4], k[5] };
    char now_s[24];
    snprintf(now_s, sizeof(now_s), "%" PRId64, (int64_t)NOW);
    const char *args[10] = { "0", "10", "100", "0", "5", "60", "0", "1", "1-1", now_s };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_EXECUTE], 6, keys, 10, args);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    assert_int_equal(stock_left(), 5);
    assert_int_equal(count("HLEN", KEYS_USERS), 0);
}

static void test_per_user_limit(void **state)
{
    (void)state;
    warm_open(100);
    const struct exec_opts o = { true, 3, 1000, false, 5, 60, NULL };
    assert_str(execute_at(5, "10.0.0.5", NOW, &o).status, "OK");
    assert_str(execute_at(5, "10.0.0.5", NOW, &o).status, "DUPLICATE");
    assert_str(execute_at(5, "10.0.0.6", NOW, &o).status, "DUPLICATE"); /* same user, other IP */
    for (int i = 0; i < 3; i++) {
        struct xres x = execute_at(5, "10.0.0.5", NOW, &o);
        assert_str(x.status, "RATE_LIMITED");
        assert_true(x.retry_after >= 1 && x.retry_after <= 60);
    }
    char k[KEYS_LEN];
    subject_key(k, KEYS_RATE_USER, "5");
    int64_t ttl = cmd_int("TTL %s", k);
    assert_true(ttl >= 1 && ttl <= 60);
    /* Other users are not limited by user 5's counter. */
    assert_str(execute_at(6, "10.0.0.5", NOW, &o).status, "OK");
    assert_int_equal(stock_left(), 98);

    /* With limits off nobody is rate limited. */
    for (int i = 0; i < 20; i++)
        assert_str(execute_at(7, "10.0.0.7", NOW, &NO_LIMITS).status, i == 0 ? "OK" : "DUPLICATE");
    assert_conserved(100);
}

static void test_per_ip_limit(void **state)
{
    (void)state;
    warm_open(100);
    const struct exec_opts o = { true, 1000, 3, false, 5, 60, NULL };
    for (int64_t user = 1; user <= 3; user++)
        assert_str(execute_at(user, "192.0.2.1", NOW, &o).status, "OK");
    for (int64_t user = 4; user <= 6; user++) {
        struct xres x = execute_at(user, "192.0.2.1", NOW, &o);
        assert_str(x.status, "RATE_LIMITED");
        assert_true(x.retry_after >= 1 && x.retry_after <= 60);
        char o2[ORDERNO_LEN];
        assert_false(user_order(user, o2, sizeof(o2)));
    }
    char k[KEYS_LEN];
    subject_key(k, KEYS_RATE_IP, "192.0.2.1");
    int64_t ttl = cmd_int("TTL %s", k);
    assert_true(ttl >= 1 && ttl <= 60);
    /* Another address is counted separately. */
    assert_str(execute_at(4, "192.0.2.2", NOW, &o).status, "OK");
    assert_int_equal(stock_left(), 96);
    assert_conserved(100);
}

static void test_anti_brush(void **state)
{
    (void)state;
    warm_open(100);
    const struct exec_opts o = { true, 1000, 1000, true, 2, 45, NULL };
    assert_str(execute_at(9, "10.0.0.9", NOW, &o).status, "OK");
    assert_str(execute_at(9, "10.0.0.9", NOW, &o).status, "DUPLICATE");
    struct xres x = execute_at(9, "10.0.0.9", NOW, &o);
    assert_str(x.status, "BLOCKED");
    assert_int_equal(x.retry_after, 45);
    char ban[KEYS_LEN];
    subject_key(ban, KEYS_BAN, "9");
    int64_t ttl = cmd_int("TTL %s", ban);
    assert_true(ttl >= 44 && ttl <= 45);
    for (int i = 0; i < 3; i++) {
        x = execute_at(9, "10.0.0.9", NOW, &o);
        assert_str(x.status, "BLOCKED");
        assert_true(x.retry_after >= 1 && x.retry_after <= 45);
    }
    /* The ban replaced the attempt counter: when the ban lifts the user starts afresh. */
    char brush[KEYS_LEN];
    subject_key(brush, KEYS_BRUSH, "9");
    assert_int_equal(cmd_int("EXISTS %s", brush), 0);
    cmd_ok("DEL %s", ban);
    assert_str(execute_at(9, "10.0.0.9", NOW, &o).status, "DUPLICATE");
    int64_t pttl = cmd_int("PTTL %s", brush);
    assert_true(pttl > 0 && pttl <= 10000);
    cmd_ok("SET %s 1 EX 45", ban);
    /* Other users, even from the same address, are not banned. */
    assert_str(execute_at(10, "10.0.0.9", NOW, &o).status, "OK");
    assert_str(execute_at(11, "10.0.0.9", NOW, &o).status, "OK");
    /* A banned user who never bought gets no order, and learns the ban's remaining time. */
    subject_key(ban, KEYS_BAN, "12");
    cmd_ok("SET %s 1 EX 30", ban);
    x = execute_at(12, "10.0.0.12", NOW, &o);
    assert_str(x.status, "BLOCKED");
    assert_true(x.retry_after >= 29 && x.retry_after <= 30);
    char ord[ORDERNO_LEN];
    assert_false(user_order(12, ord, sizeof(ord)));
    assert_int_equal(stock_left(), 97);
    /* With anti-brush off, the same burst is not blocked. */
    const struct exec_opts off = { false, 1000, 1000, false, 2, 45, NULL };
    for (int i = 0; i < 10; i++)
        assert_str(execute_at(13, "10.0.0.13", NOW, &off).status, i == 0 ? "OK" : "DUPLICATE");
    assert_conserved(100);
}

static void test_rollback(void **state)
{
    (void)state;
    warm_open(3);
    struct xres first = execute_ok(21);
    assert_int_equal(stock_left(), 2);
    assert_int_equal(rollback(first.order_no, 21), 1);
    /* Stock back, user free, order FAILED, no reservation left. */
    assert_int_equal(stock_left(), 3);
    char o[ORDERNO_LEN];
    assert_false(user_order(21, o, sizeof(o)));
    assert_order_status(first.order_no, "FAILED");
    assert_int_equal(count("ZCARD", KEYS_RESERVED), 0);
    assert_last_failed(first.order_no, 21, "ROLLED_BACK", 1);
    assert_conserved(3);

    /* The user can try again and gets a new order. */
    struct xres second = execute_ok(21);
    assert_string_not_equal(second.order_no, first.order_no);
    assert_true(user_order(21, o, sizeof(o)));
    assert_string_equal(o, second.order_no);
    assert_int_equal(stock_left(), 2);

    /* A second rollback of the first order is a no-op: nothing returned twice, and the
     * user's new order is untouched. */
    assert_int_equal(rollback(first.order_no, 21), 0);
    assert_int_equal(stock_left(), 2);
    assert_true(user_order(21, o, sizeof(o)));
    assert_string_equal(o, second.order_no);
    assert_order_status(second.order_no, "PROCESSING");
    assert_order_status(first.order_no, "FAILED");
    /* A rollback of an order that never existed changes nothing either. */
    assert_int_equal(rollback("1-1", 21), 0);
    assert_int_equal(stock_left(), 2);
    assert_int_equal(count("XLEN", KEYS_FAILED), 1);
    assert_conserved(3);
}

static void test_confirm_first_then_expire(void **state)
{
    (void)state;
    warm_open(10);
    struct xres x = execute_ok(1);
    assert_confirm(x.order_no, 1, "CLAIMED");
    char member[96];
    member_of(member, sizeof(member), x.order_no, 1);
    assert_true(in_set(KEYS_CLAIMED, member));
    assert_false(in_set(KEYS_RESERVED, member));
    /* The reaper, with a cutoff far in the future, finds nothing to expire. */
    assert_int_equal(reap(NOW + 24 * HOUR, 1000), 0);
    /* A rollback after the claim says the order lives on: the gateway answers 200. */
    assert_int_equal(rollback(x.order_no, 1), 2);
    assert_int_equal(stock_left(), 9);
    assert_order_status(x.order_no, "PROCESSING");
    char o[ORDERNO_LEN];
    assert_true(user_order(1, o, sizeof(o)));
    assert_conserved(10);
}

static void test_expire_first_then_confirm(void **state)
{
    (void)state;
    warm_open(10);
    struct xres x = execute_ok(1);
    assert_int_equal(reap(NOW + 24 * HOUR, 1000), 1);
    assert_int_equal(stock_left(), 10);
    assert_order_status(x.order_no, "FAILED");
    assert_last_failed(x.order_no, 1, "EXPIRED", 1);
    assert_confirm(x.order_no, 1, "REJECTED");
    assert_int_equal(count("XLEN", KEYS_FAILED), 1);
    char member[96];
    member_of(member, sizeof(member), x.order_no, 1);
    assert_false(in_set(KEYS_CLAIMED, member));
    assert_int_equal(stock_left(), 10);
    assert_order_status(x.order_no, "FAILED");
    assert_conserved(10);
}

static void test_queued_is_not_expired(void **state)
{
    (void)state;
    warm_open(10);
    struct xres x = execute_ok(1);
    struct xres y = execute_ok(2);
    assert_int_equal(mark_queued(x.order_no, 1), 1);
    char mx[96], my[96];
    member_of(mx, sizeof(mx), x.order_no, 1);
    member_of(my, sizeof(my), y.order_no, 2);
    assert_true(in_set(KEYS_QUEUED, mx));
    assert_false(in_set(KEYS_RESERVED, mx));
    /* Marking twice counts nothing the second time. */
    assert_int_equal(mark_queued(x.order_no, 1), 0);
    /* The reaper expires only the unqueued one. */
    assert_int_equal(reap(NOW + 24 * HOUR, 1000), 1);
    assert_order_status(y.order_no, "FAILED");
    assert_order_status(x.order_no, "PROCESSING");
    assert_int_equal(stock_left(), 9);
    assert_conserved(10);
    /* The consumer then claims the queued order. */
    assert_confirm(x.order_no, 1, "CLAIMED");
    assert_false(in_set(KEYS_QUEUED, mx));
    assert_true(in_set(KEYS_CLAIMED, mx));
    /* A late queued mark of a claimed order does not put it back. */
    assert_int_equal(mark_queued(x.order_no, 1), 0);
    assert_false(in_set(KEYS_QUEUED, mx));
    assert_int_equal(stock_left(), 9);
    assert_conserved(10);
}

static void test_confirm_twice_then_finalize(void **state)
{
    (void)state;
    warm_open(10);
    struct xres x = execute_ok(1);
    assert_confirm(x.order_no, 1, "CLAIMED");
    assert_confirm(x.order_no, 1, "CONFIRMED");
    assert_int_equal(finalize_one(x.order_no, 1), 1);
    assert_order_status(x.order_no, "SUCCESS");
    assert_int_equal(count("SCARD", KEYS_CLAIMED), 0);
    assert_confirm(x.order_no, 1, "CONFIRMED");
    /* The redelivered batch is finalized again: the order counts once. */
    assert_int_equal(finalize_one(x.order_no, 1), 1);
    assert_int_equal(sold_counter(), 1);
    /* A SUCCESS order can be neither rolled back nor reaped. */
    assert_int_equal(rollback(x.order_no, 1), 2);
    assert_int_equal(reap(NOW + 24 * HOUR, 1000), 0);
    assert_order_status(x.order_no, "SUCCESS");
    assert_int_equal(stock_left(), 9);
    assert_conserved(10);
}

static int64_t abandon(size_t n, const char *const *order_nos, const int64_t *users)
{
    char k[5][KEYS_LEN];
    key(k[0], KEYS_STOCK);
    key(k[1], KEYS_USERS);
    key(k[2], KEYS_ORDERS);
    key(k[3], KEYS_CLAIMED);
    key(k[4], KEYS_FAILED);
    const char *keys[5] = { k[0], k[1], k[2], k[3], k[4] };
    const char *args[8];
    char uids[4][24];
    assert_true(n <= 4);
    for (size_t i = 0; i < n; i++) {
        snprintf(uids[i], sizeof(uids[i]), "%" PRId64, users[i]);
        args[2 * i] = order_nos[i];
        args[2 * i + 1] = uids[i];
    }
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_ABANDON], 5, keys,
                                        (int)(2 * n), args);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    int64_t v = r->integer;
    freeReplyObject(r);
    return v;
}

/* supersede.lua: losers then winners, each "orderNo|user" given as two arguments. Returns
 * {ended, adopted} as ended * 1000 + adopted. */
static int64_t supersede(size_t nl, const char *const *losers, const int64_t *loser_users, size_t nw,
                         const char *const *winners, const int64_t *winner_users)
{
    enum keys_kind kinds[7] = { KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED,
                                KEYS_FAILED, KEYS_ACTIVITY };
    char k[7][KEYS_LEN];
    const char *keys[7];
    for (int i = 0; i < 7; i++) {
        key(k[i], kinds[i]);
        keys[i] = k[i];
    }
    const char *args[1 + 8];
    char uids[4][24], n[8];
    assert_true(nl + nw <= 4);
    snprintf(n, sizeof(n), "%zu", nl);
    args[0] = n;
    for (size_t i = 0; i < nl + nw; i++) {
        snprintf(uids[i], sizeof(uids[i]), "%" PRId64, i < nl ? loser_users[i] : winner_users[i - nl]);
        args[1 + 2 * i] = i < nl ? losers[i] : winners[i - nl];
        args[2 + 2 * i] = uids[i];
    }
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_SUPERSEDE], 7, keys,
                                        (int)(1 + 2 * (nl + nw)), args);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    int64_t v = r->element[0]->integer * 1000 + r->element[1]->integer;
    freeReplyObject(r);
    return v;
}

/* supersede.lua (the consumer, for claimed orders MySQL refused because an order Redis
 * forgot in a failover holds their place): the loser FAILED with its unit NOT back, the
 * winner MySQL holds recorded SUCCESS with its user; a live order is left to its consumer;
 * a repeat changes nothing. */
static void test_supersede_keeps_the_unit_for_the_forgotten_winner(void **state)
{
    (void)state;
    warm_open(5);
    struct xres loser = execute_ok(1), live = execute_ok(2);
    assert_confirm(loser.order_no, 1, "CLAIMED");
    assert_int_equal(stock_left(), 3);
    /* "999-1": user 1's order MySQL holds, which this Redis never saw (its DECR lost too,
     * so the stock counts the loser's unit for it). */
    const char *losers[1] = { loser.order_no };
    const int64_t loser_users[1] = { 1 };
    const char *winners[2] = { "999-1", live.order_no };
    const int64_t winner_users[2] = { 1, 2 };
    assert_int_equal(supersede(1, losers, loser_users, 2, winners, winner_users), 1001);
    assert_order_status(loser.order_no, "FAILED");
    assert_last_failed(loser.order_no, 1, "SUPERSEDED", 1);
    assert_order_status("999-1", "SUCCESS");
    assert_order_status(live.order_no, "PROCESSING");
    char held[64];
    assert_true(user_order(1, held, sizeof(held)));
    assert_str(held, "999-1");
    assert_int_equal(stock_left(), 3);  /* not returned */
    assert_int_equal(count("SCARD", KEYS_CLAIMED), 0);
    assert_conserved(5);
    /* A replayed batch: nothing more, and the loser's confirm is REJECTED. */
    assert_int_equal(supersede(1, losers, loser_users, 1, winners, winner_users), 0);
    assert_int_equal(count("XLEN", KEYS_FAILED), 1);
    assert_confirm(loser.order_no, 1, "REJECTED");
    assert_int_equal(stock_left(), 3);
    assert_conserved(5);
}

/* A sale warmed before the 'sold' counter existed: finalize does not start one (it would
 * count only the orders after the upgrade), so the gauges can tell it is unknown. */
static void test_finalize_leaves_a_sale_without_counter_alone(void **state)
{
    (void)state;
    warm_open(10);
    char ka[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    cmd_ok("HDEL %s sold", ka);
    struct xres x = execute_ok(1);
    assert_confirm(x.order_no, 1, "CLAIMED");
    assert_int_equal(finalize_one(x.order_no, 1), 1);
    assert_order_status(x.order_no, "SUCCESS");
    assert_int_equal(sold_counter(), -1);
}

/* abandon.lua (the consumer, for claimed orders MySQL refused for good): FAILED, stock
 * back, user free, once; a SUCCESS order or one never claimed is left alone. */
static void test_abandon_claimed(void **state)
{
    (void)state;
    warm_open(10);
    struct xres a = execute_ok(1), b = execute_ok(2), c = execute_ok(3);
    assert_confirm(a.order_no, 1, "CLAIMED");
    assert_confirm(b.order_no, 2, "CLAIMED");
    assert_int_equal(finalize_one(b.order_no, 2), 1);
    assert_int_equal(stock_left(), 7);
    const char *nos[3] = { a.order_no, b.order_no, c.order_no };
    const int64_t users[3] = { 1, 2, 3 };
    assert_int_equal(abandon(3, nos, users), 1);
    assert_order_status(a.order_no, "FAILED");
    assert_last_failed(a.order_no, 1, "REFUSED", 1);
    assert_order_status(b.order_no, "SUCCESS");
    assert_order_status(c.order_no, "PROCESSING");   /* reserved, not claimed: the reaper's */
    char held[64];
    assert_false(user_order(1, held, sizeof(held)));
    assert_true(user_order(2, held, sizeof(held)));
    assert_int_equal(count("SCARD", KEYS_CLAIMED), 0);
    assert_int_equal(stock_left(), 8);
    assert_conserved(10);
    /* A replayed batch abandons again: nothing changes, and its confirm is REJECTED. */
    assert_int_equal(abandon(1, nos, users), 0);
    assert_int_equal(count("XLEN", KEYS_FAILED), 1);
    assert_int_equal(stock_left(), 8);
    assert_confirm(a.order_no, 1, "REJECTED");
    /* The user may buy again. */
    struct xres again = execute_ok(1);
    assert_true(strcmp(again.order_no, a.order_no) != 0);
    assert_conserved(10);
}

static void test_reaper_cutoff_and_batch(void **state)
{
    (void)state;
    warm_open(10);
    struct xres a = execute_at(1, "10.0.0.1", NOW, &NO_LIMITS);
    struct xres b = execute_at(2, "10.0.0.1", NOW + 10, &NO_LIMITS);
    struct xres c = execute_at(3, "10.0.0.1", NOW + 20, &NO_LIMITS);
    assert_str(a.status, "OK");
    assert_str(b.status, "OK");
    assert_str(c.status, "OK");
    /* Only reservations strictly older than the cutoff expire. */
    assert_int_equal(reap(NOW, 1000), 0);
    assert_int_equal(reap(NOW + 1, 1000), 1);
    assert_order_status(a.order_no, "FAILED");
    assert_order_status(b.order_no, "PROCESSING");
    /* At most max_count per call, oldest first. */
    assert_int_equal(reap(NOW + HOUR, 1), 1);
    assert_order_status(b.order_no, "FAILED");
    assert_order_status(c.order_no, "PROCESSING");
    assert_int_equal(reap(NOW + HOUR, 1), 1);
    assert_int_equal(reap(NOW + HOUR, 1), 0);
    assert_int_equal(stock_left(), 10);
    assert_int_equal(count("HLEN", KEYS_USERS), 0);
    assert_conserved(10);
}

/* Several gateways: each reaps its own reservations and those of nodes it has seen dead,
 * never those of another live gateway (the node is bits 12..21 of the order number; 0 and
 * 1023 are its edges). */
static void test_reaper_takes_only_the_nodes_it_is_given(void **state)
{
    (void)state;
    warm_open(10);
    static const uint32_t nodes[3] = { 5, ORDERNO_MAX_NODE, 0 };
    struct xres x[3];
    for (int i = 0; i < 3; i++) {
        orderno_init(&gen, nodes[i]);
        x[i] = execute_at(i + 1, "10.0.0.1", NOW, &NO_LIMITS);
        assert_str(x[i].status, "OK");
    }
    orderno_init(&gen, (uint32_t)(getpid() & ORDERNO_MAX_NODE));
    assert_int_equal(reap_nodes(NOW + 1, 1000, "own", "5"), 1);
    assert_order_status(x[0].order_no, "FAILED");
    assert_order_status(x[1].order_no, "PROCESSING");
    assert_order_status(x[2].order_no, "PROCESSING");
    assert_int_equal(reap_nodes(NOW + 1, 1000, "except", ",0,1023,"), 0);
    assert_int_equal(reap_nodes(NOW + 1, 1000, "except", ",1023,"), 1);
    assert_order_status(x[2].order_no, "FAILED");
    assert_order_status(x[1].order_no, "PROCESSING");
    /* Without a filter (seckillctl's way) every reservation is the caller's. */
    assert_int_equal(reap(NOW + 1, 1000), 1);
    assert_order_status(x[1].order_no, "FAILED");
    assert_int_equal(stock_left(), 10);
    assert_conserved(10);
}

/* redeliver.lua as a reaper of reply-after-ack = false calls it: the members it takes. */
static size_t redeliver_nodes(int64_t cutoff_ms, int64_t max_count, const char *mode, const char *nodes,
                              char taken[][96], size_t cap)
{
    char k[KEYS_LEN], c[24], m[24];
    key(k, KEYS_RESERVED);
    snprintf(c, sizeof(c), "%" PRId64, cutoff_ms);
    snprintf(m, sizeof(m), "%" PRId64, max_count);
    const char *keys[1] = { k };
    const char *args[4] = { c, m, mode, nodes };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_REDELIVER], 1, keys, mode ? 4 : 2,
                                        args);
    if (!r || r->type != REDIS_REPLY_ARRAY)
        fail_msg("redeliver: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : "no array");
    size_t n = r->elements;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++)
        snprintf(taken[i], 96, "%s", r->element[i]->str);
    freeReplyObject(r);
    return n;
}

static double reserved_at(const char *member)
{
    char k[KEYS_LEN];
    key(k, KEYS_RESERVED);
    redisReply *r = redisCommand(redis, "ZSCORE %s %s", k, member);
    assert_non_null(r);
    double score = r->type == REDIS_REPLY_STRING ? atof(r->str) : -1;
    freeReplyObject(r);
    return score;
}

/* reply-after-ack = false: a stale reservation is handed back to Kafka, never expired.
 * redeliver.lua returns those of the nodes it is given, oldest first, at most max_count,
 * and moves each to now so that the next reaper pass does not take it again at once; the
 * order stays PROCESSING, the stock and the user's record untouched. */
static void test_redeliver_takes_stale_reservations_and_expires_nothing(void **state)
{
    (void)state;
    warm_open(10);
    static const uint32_t nodes[3] = { 5, 5, 7 };
    struct xres x[3];
    char member[3][96];
    for (int i = 0; i < 3; i++) {
        if (i == 0 || nodes[i] != nodes[i - 1])
            orderno_init(&gen, nodes[i]);
        x[i] = execute_at(i + 1, "10.0.0.1", NOW + i, &NO_LIMITS);
        assert_str(x[i].status, "OK");
        member_of(member[i], sizeof(member[i]), x[i].order_no, i + 1);
    }
    orderno_init(&gen, (uint32_t)(getpid() & ORDERNO_MAX_NODE));
    char taken[4][96];
    /* Younger than the cutoff: nothing. */
    assert_int_equal(redeliver_nodes(NOW, 1000, NULL, NULL, taken, 4), 0);
    /* Another live node's: left to it. */
    assert_int_equal(redeliver_nodes(NOW + 10, 1000, "except", ",5,", taken, 4), 1);
    assert_string_equal(taken[0], member[2]);
    /* Oldest first, at most max_count. */
    assert_int_equal(redeliver_nodes(NOW + 10, 1, "own", "5", taken, 4), 1);
    assert_string_equal(taken[0], member[0]);
    /* Taken ones are now in the future of the old cutoff: not taken again. */
    assert_true(reserved_at(member[0]) > (double)(NOW + 10));
    assert_int_equal(redeliver_nodes(NOW + 10, 1000, "own", "5", taken, 4), 1);
    assert_string_equal(taken[0], member[1]);
    assert_int_equal(redeliver_nodes(NOW + 10, 1000, NULL, NULL, taken, 4), 0);
    for (int i = 0; i < 3; i++)
        assert_order_status(x[i].order_no, "PROCESSING");
    assert_int_equal(stock_left(), 7);
    assert_int_equal(count("HLEN", KEYS_USERS), 3);
    /* A queued or claimed one is out of the zset: a late pass (a cutoff in 2100, after any
     * "now" it was moved to) never brings it back. */
    assert_int_equal(mark_queued(x[0].order_no, 1), 1);
    assert_int_equal(redeliver_nodes(4102444800000LL, 1000, NULL, NULL, taken, 4), 2);
    assert_true(reserved_at(member[0]) < 0);
    assert_conserved(10);
}

/* reply-after-ack off, a request whose execute verdict was lost: release.lua 'forget'
 * settles it whichever runs first. Before the script: the number is marked FAILED and the
 * late script reserves nothing (GONE). After it: the reservation is released as a
 * rollback would. */
static void test_forget_settles_a_lost_verdict_in_either_order(void **state)
{
    (void)state;
    warm_open(10);
    /* The number the next execute call offers. */
    char order_no[ORDERNO_LEN], uid[24];
    struct orderno_gen peek = gen;
    orderno_format(order_no, sizeof(order_no), orderno_next(&peek, gen_clock), A);
    snprintf(uid, sizeof(uid), "%d", 1);
    assert_int_equal(release_call("forget", order_no, uid), 0);
    assert_order_status(order_no, "FAILED");
    struct xres late = execute(1);
    assert_string_equal(late.sent_no, order_no);
    assert_str(late.status, "GONE");
    assert_int_equal(stock_left(), 10);
    assert_int_equal(count("HLEN", KEYS_USERS), 0);
    /* Forgetting again changes nothing. */
    assert_int_equal(release_call("forget", order_no, uid), 0);

    struct xres x = execute_ok(2);
    snprintf(uid, sizeof(uid), "%d", 2);
    assert_int_equal(release_call("forget", x.order_no, uid), 1);
    assert_order_status(x.order_no, "FAILED");
    assert_int_equal(stock_left(), 10);
    assert_int_equal(count("HLEN", KEYS_USERS), 0);
    /* Once a consumer has it, it lives on: the request is answered 200. */
    struct xres y = execute_ok(3);
    assert_int_equal(mark_queued(y.order_no, 3), 1);
    snprintf(uid, sizeof(uid), "%d", 3);
    assert_int_equal(release_call("forget", y.order_no, uid), 2);
    assert_order_status(y.order_no, "PROCESSING");
    assert_conserved(10);
}

static void test_confirm_batch_verdicts(void **state)
{
    (void)state;
    warm_open(10);
    struct xres a = execute_ok(1), b = execute_ok(2), c = execute_ok(3), d = execute_ok(4);
    assert_int_equal(rollback(b.order_no, 2), 1);            /* b: FAILED */
    assert_confirm(c.order_no, 3, "CLAIMED");                /* c: already claimed */
    assert_int_equal(mark_queued(d.order_no, 4), 1);         /* d: queued */
    const char *nos[4] = { a.order_no, b.order_no, c.order_no, d.order_no };
    const int64_t users[4] = { 1, 2, 3, 4 };
    char verdicts[4][16];
    confirm_many(4, nos, users, verdicts);
    assert_string_equal(verdicts[0], "CLAIMED");
    assert_string_equal(verdicts[1], "REJECTED");
    assert_string_equal(verdicts[2], "CONFIRMED");
    assert_string_equal(verdicts[3], "CLAIMED");
    assert_int_equal(count("SCARD", KEYS_CLAIMED), 3);
    assert_order_status(b.order_no, "FAILED");
    assert_conserved(10);
    /* The consumer finalizes the orders it may write (not the rejected one). */
    const char *won[3] = { a.order_no, c.order_no, d.order_no };
    const int64_t won_users[3] = { 1, 3, 4 };
    assert_int_equal(finalize(3, won, won_users), 3);
    assert_int_equal(count("SCARD", KEYS_CLAIMED), 0);
    for (int i = 0; i < 3; i++)
        assert_order_status(won[i], "SUCCESS");
    assert_order_status(b.order_no, "FAILED");
    assert_int_equal(success_count(), 3);
    assert_int_equal(stock_left(), 7);
    assert_conserved(10);
}

static void test_conservation_mixed(void **state)
{
    (void)state;
    const int64_t initial = 12;
    warm_open(initial);
    char orders[64][ORDERNO_LEN];
    int64_t owners[64];
    size_t norders = 0;

    /* 10 users buy. */
    for (int64_t user = 1; user <= 10; user++) {
        struct xres x = execute_ok(user);
        snprintf(orders[norders], ORDERNO_LEN, "%s", x.order_no);
        owners[norders++] = user;
        assert_conserved(initial);
    }
    /* Two fail in Kafka and roll back; one of them buys again. */
    assert_int_equal(rollback(orders[0], owners[0]), 1);
    assert_int_equal(rollback(orders[1], owners[1]), 1);
    assert_conserved(initial);
    struct xres again = execute_ok(owners[0]);
    snprintf(orders[norders], ORDERNO_LEN, "%s", again.order_no);
    owners[norders++] = owners[0];
    assert_conserved(initial);
    /* Some are queued, some confirmed straight from the reservation, some finalized. */
    assert_int_equal(mark_queued(orders[2], owners[2]), 1);
    assert_int_equal(mark_queued(orders[3], owners[3]), 1);
    assert_conserved(initial);
    const char *batch1[3] = { orders[2], orders[4], orders[5] };
    const int64_t users1[3] = { owners[2], owners[4], owners[5] };
    char v[3][16];
    confirm_many(3, batch1, users1, v);
    for (int i = 0; i < 3; i++)
        assert_string_equal(v[i], "CLAIMED");
    assert_conserved(initial);
    assert_int_equal(finalize(2, batch1, users1), 2);
    assert_conserved(initial);
    /* A confirm of a rolled-back order is refused and changes nothing. */
    assert_confirm(orders[1], owners[1], "REJECTED");
    assert_conserved(initial);
    /* More buyers than stock. */
    int sold_out = 0;
    for (int64_t user = 11; user <= 20; user++) {
        struct xres x = execute(user);
        if (strcmp(x.status, "OK") == 0) {
            snprintf(orders[norders], ORDERNO_LEN, "%s", x.order_no);
            owners[norders++] = user;
        } else {
            assert_str(x.status, "OUT_OF_STOCK");
            sold_out++;
        }
        assert_conserved(initial);
    }
    assert_true(sold_out > 0);
    assert_int_equal(stock_left(), 0);
    /* The reaper expires what never reached Kafka. */
    int64_t reaped = reap(NOW + HOUR, 1000);
    assert_true(reaped > 0);
    assert_conserved(initial);
    /* Redelivery of a finalized order and a late confirm of the claimed one. */
    assert_confirm(orders[2], owners[2], "CONFIRMED");
    assert_confirm(orders[5], owners[5], "CONFIRMED");
    assert_int_equal(finalize_one(orders[5], owners[5]), 1);
    assert_confirm(orders[3], owners[3], "CLAIMED");
    assert_int_equal(finalize_one(orders[3], owners[3]), 1);
    assert_conserved(initial);
    /* Quiescent: nothing left but stock and SUCCESS. */
    assert_int_equal(count("ZCARD", KEYS_RESERVED), 0);
    assert_int_equal(count("SCARD", KEYS_QUEUED), 0);
    assert_int_equal(count("SCARD", KEYS_CLAIMED), 0);
    assert_int_equal(success_count(), 4);
    assert_int_equal(stock_left(), initial - 4);
}

/* Picks one member of a reservation set at random; false when the set is empty. */
static bool pick_member(enum keys_kind from, unsigned pick, char *order_no, size_t len,
                        int64_t *user)
{
    char k[KEYS_LEN];
    key(k, from);
    redisReply *r = cmd(from == KEYS_RESERVED ? "ZRANGE %s 0 -1" : "SMEMBERS %s", k);
    if (r->elements == 0) {
        freeReplyObject(r);
        return false;
    }
    char member[96];
    snprintf(member, sizeof(member), "%s", r->element[pick % r->elements]->str);
    freeReplyObject(r);
    char *bar = strchr(member, '|');
    assert_non_null(bar);
    *bar = '\0';
    size_t n = strlen(member);
    assert_true(n < len);
    memcpy(order_no, member, n + 1);
    *user = strtoll(bar + 1, NULL, 10);
    return true;
}

/* A deterministic random walk over every script: I1-I3 hold after each step, and at the
 * end, once everything is confirmed, SUCCESS + stock = initial with one order per user. */
static void test_conservation_random_walk(void **state)
{
    (void)state;
    enum { USERS = 40 };
    const int64_t initial = 25;
    warm_open(initial);
    int successes[USERS + 1] = { 0 };
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    int64_t now = NOW;
    int executed = 0, rolled = 0, queued = 0, claimed = 0, finalized = 0;
    for (int step = 0; step < 800; step++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned op = (unsigned)(seed >> 33) % 8;
        unsigned pick = (unsigned)(seed >> 45);
        now += 7;
        char no[ORDERNO_LEN];
        int64_t user;
        switch (op) {
        case 0:
        case 1:
        case 2: {
            user = 1 + (int64_t)(pick % USERS);
            struct xres x = execute_at(user, "10.1.1.1", now, &NO_LIMITS);
            if (strcmp(x.status, "OK") == 0)
                executed++;
            else if (strcmp(x.status, "DUPLICATE") != 0 && strcmp(x.status, "OUT_OF_STOCK") != 0)
                fail_msg("step %d: execute answered %s", step, x.status);
            break;
        }
        case 3:
            if (pick_member(KEYS_RESERVED, pick, no, sizeof(no), &user)) {
                assert_int_equal(rollback(no, user), 1);
                assert_order_status(no, "FAILED");
                rolled++;
            }
            break;
        case 4:
            if (pick_member(KEYS_RESERVED, pick, no, sizeof(no), &user)) {
                assert_int_equal(mark_queued(no, user), 1);
                queued++;
            }
            break;
        case 5:
            if (pick_member(pick % 2 ? KEYS_QUEUED : KEYS_RESERVED, pick, no, sizeof(no), &user)) {
                assert_confirm(no, user, "CLAIMED");
                claimed++;
            }
            break;
        case 6:
            if (pick_member(KEYS_CLAIMED, pick, no, sizeof(no), &user)) {
                assert_confirm(no, user, "CONFIRMED");
                assert_int_equal(finalize_one(no, user), 1);
                assert_order_status(no, "SUCCESS");
                assert_true(user >= 1 && user <= USERS);
                if (++successes[user] > 1)
                    fail_msg("user %" PRId64 " has two SUCCESS orders", user); /* I2 */
                finalized++;
            }
            break;
        case 7:
            assert_true(reap(now - 50, 1 + pick % 3) >= 0);
            break;
        }
        assert_conserved(initial);
    }
    /* Every kind of step happened. */
    assert_true(executed > 0 && rolled > 0 && queued > 0 && claimed > 0 && finalized > 0);

    /* Quiesce: confirm and finalize everything still live. */
    char no[ORDERNO_LEN];
    int64_t user;
    while (pick_member(KEYS_RESERVED, 0, no, sizeof(no), &user) ||
           pick_member(KEYS_QUEUED, 0, no, sizeof(no), &user)) {
        assert_confirm(no, user, "CLAIMED");
        assert_conserved(initial);
    }
    while (pick_member(KEYS_CLAIMED, 0, no, sizeof(no), &user)) {
        assert_int_equal(finalize_one(no, user), 1);
        if (++successes[user] > 1)
            fail_msg("user %" PRId64 " has two SUCCESS orders", user);
        assert_conserved(initial);
    }
    int64_t total = 0;
    for (int u = 1; u <= USERS; u++)
        total += successes[u];
    assert_int_equal(success_count(), total);
    assert_int_equal(stock_left() + total, initial);
    assert_true(total <= initial);
}

static void test_confirm_unknown_order(void **state)
{
    (void)state;
    /* confirm.lua reads Redis' clock for this path, so the window is around real time. */
    const int64_t real_now = (int64_t)time(NULL) * 1000;
    warm(2, real_now - HOUR, real_now + HOUR, "ACTIVE");
    char no1[ORDERNO_LEN], no2[ORDERNO_LEN], no3[ORDERNO_LEN];
    assert_true(orderno_format(no1, sizeof(no1), orderno_next(&gen, gen_clock), A) > 0);
    assert_true(orderno_format(no2, sizeof(no2), orderno_next(&gen, gen_clock), A) > 0);
    assert_true(orderno_format(no3, sizeof(no3), orderno_next(&gen, gen_clock), A) > 0);
    /* Stock left and user free: honoured. */
    assert_confirm(no1, 77, "CLAIMED");
    assert_int_equal(stock_left(), 1);
    char o[ORDERNO_LEN];
    assert_true(user_order(77, o, sizeof(o)));
    assert_string_equal(o, no1);
    assert_order_status(no1, "PROCESSING");
    char m[96];
    member_of(m, sizeof(m), no1, 77);
    assert_true(in_set(KEYS_CLAIMED, m));
    assert_conserved(2);
    /* The same user with another unknown order: one per user, rejected, and FAILED for
     * good, with its reason in the failed stream for MySQL. */
    assert_confirm(no2, 77, "REJECTED");
    assert_int_equal(stock_left(), 1);
    assert_order_status(no2, "FAILED");
    assert_last_failed(no2, 77, "REJECTED", 1);
    /* A redelivery finds it FAILED: rejected again, recorded once. */
    assert_confirm(no2, 77, "REJECTED");
    assert_int_equal(count("XLEN", KEYS_FAILED), 1);
    /* Stock 0: rejected, FAILED, nothing taken. */
    char ks[KEYS_LEN];
    key(ks, KEYS_STOCK);
    cmd_ok("SET %s 0", ks);
    assert_confirm(no3, 78, "REJECTED");
    assert_int_equal(stock_left(), 0);
    assert_false(user_order(78, o, sizeof(o)));
    assert_order_status(no3, "FAILED");
    assert_last_failed(no3, 78, "REJECTED", 2);
    member_of(m, sizeof(m), no3, 78);
    assert_false(in_set(KEYS_CLAIMED, m));

    /* A cancelled sale, or one ended more than 5 s ago, gave its unsold stock back to the
     * coupon: an unknown order cannot take it again, stock or not. */
    char no4[ORDERNO_LEN];
    assert_true(orderno_format(no4, sizeof(no4), orderno_next(&gen, gen_clock), A) > 0);
    cmd_ok("SET %s 5", ks);
    warm(2, real_now - 2 * HOUR, real_now - 6000, "ACTIVE");
    cmd_ok("SET %s 5", ks);
    assert_confirm(no4, 79, "REJECTED");
    warm(2, real_now - HOUR, real_now + HOUR, "CANCELLED");
    cmd_ok("SET %s 5", ks);
    assert_confirm(no4, 79, "REJECTED");
    assert_int_equal(stock_left(), 5);
    assert_false(user_order(79, o, sizeof(o)));
}

static void test_result_script(void **state)
{
    (void)state;
    warm_open(5);
    char ku[KEYS_LEN], ko[KEYS_LEN];
    key(ku, KEYS_USERS);
    key(ko, KEYS_ORDERS);
    const char *keys[2] = { ku, ko };
    const int64_t user = 31;
    char uid[24];
    snprintf(uid, sizeof(uid), "%" PRId64, user);
    const char *args[1] = { uid };
    const struct luascript *s = &scripts.scripts[LUASCRIPT_RESULT];

    redisReply *r = luascript_call_sync(redis, s, 2, keys, 1, args);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);

    /* Reserved, claimed (still PROCESSING to the user), then SUCCESS. */
    struct xres x = execute_ok(user);
    for (int phase = 0; phase < 3; phase++) {
        if (phase == 1)
            assert_confirm(x.order_no, user, "CLAIMED");
        if (phase == 2)
            assert_int_equal(finalize_one(x.order_no, user), 1);
        r = luascript_call_sync(redis, s, 2, keys, 1, args);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 2);
        assert_string_equal(r->element[0]->str, x.order_no);
        assert_string_equal(r->element[1]->str, phase == 2 ? "SUCCESS" : "PROCESSING");
        freeReplyObject(r);
    }

    /* After a rollback the user has no order any more. */
    struct xres y = execute_ok(32);
    assert_int_equal(rollback(y.order_no, 32), 1);
    const char *args32[1] = { "32" };
    r = luascript_call_sync(redis, s, 2, keys, 1, args32);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);

    /* A user entry whose status is missing reads as PROCESSING. */
    cmd_ok("HSET %s 33 %s", ku, "123-1");
    const char *args33[1] = { "33" };
    r = luascript_call_sync(redis, s, 2, keys, 1, args33);
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, "123-1");
    assert_string_equal(r->element[1]->str, "PROCESSING");
    freeReplyObject(r);
}

static void test_activity_script(void **state)
{
    (void)state;
    char ka[KEYS_LEN], ks[KEYS_LEN], ku[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    key(ks, KEYS_STOCK);
    key(ku, KEYS_USERS);
    const char *keys[3] = { ka, ks, ku };
    const struct luascript *s = &scripts.scripts[LUASCRIPT_ACTIVITY];

    /* Not warmed: empty. */
    redisReply *r = luascript_call_sync(redis, s, 3, keys, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);

    const int64_t start = NOW - HOUR, end = NOW + HOUR;
    warm(6, start, end, "ACTIVE");
    execute_ok(1);
    execute_ok(2);
    char want_start[24], want_end[24];
    snprintf(want_start, sizeof(want_start), "%" PRId64, start);
    snprintf(want_end, sizeof(want_end), "%" PRId64, end);
    /* The ninth: the bucket tags, '' for an activity of one bucket. */
    const char *want[9] = { "t", "7", "6", want_start, want_end, "ACTIVE", "4", "2", "" };
    r = luascript_call_sync(redis, s, 3, keys, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 9);
    for (int i = 0; i < 9; i++) {
        assert_int_equal(r->element[i]->type, REDIS_REPLY_STRING);
        assert_string_equal(r->element[i]->str, want[i]);
    }
    freeReplyObject(r);

    /* Missing fields read as empty, a missing stock key as 0. */
    cmd_ok("HDEL %s name", ka);
    cmd_ok("DEL %s", ks);
    r = luascript_call_sync(redis, s, 3, keys, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->elements, 9);
    assert_string_equal(r->element[0]->str, "");
    assert_string_equal(r->element[3]->str, want_start);
    assert_string_equal(r->element[6]->str, "0");
    freeReplyObject(r);
}

/* ---- main ---------------------------------------------------------------------------------- */

/* A purchase token buys exactly one attempt, whatever that attempt's outcome. */
static void test_purchase_token_spent_once(void **state)
{
    (void)state;
    warm_open(10);
    struct exec_opts o = NO_LIMITS;
    o.token_nonce = "00000000000000aa";
    struct xres first = execute_at(7001, "10.0.0.1", NOW, &o);
    assert_string_equal(first.status, "OK");
    struct xres again = execute_at(7002, "10.0.0.1", NOW, &o);
    assert_string_equal(again.status, "TOKEN_USED");
    assert_int_equal(stock_left(), 9);
    o.token_nonce = "00000000000000ab";
    struct xres other = execute_at(7002, "10.0.0.1", NOW, &o);
    assert_string_equal(other.status, "OK");
    assert_int_equal(stock_left(), 8);
}

/* archive.lua 'mark' refuses while anything of the sale is in flight, marks once, and
 * 'drop' removes every key but the activity hash, only once marked. */
static redisReply *archive_call(const char *mode, const char *sold)
{
    static const enum keys_kind kinds[10] = { KEYS_ACTIVITY, KEYS_STOCK, KEYS_USERS, KEYS_ORDERS,
                                              KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED, KEYS_FAILED,
                                              KEYS_XFER_OUT, KEYS_XFER_IN };
    char k[10][KEYS_LEN];
    const char *keys[10];
    for (int i = 0; i < 10; i++) {
        key(k[i], kinds[i]);
        keys[i] = k[i];
    }
    const char *args[3] = { mode, "1700000000000", sold };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_ARCHIVE], 10, keys,
                                        strcmp(mode, "mark") == 0 ? 3 : 1, args);
    if (!r || r->type == REDIS_REPLY_ERROR)
        fail_msg("archive: %s", r ? r->str : redis->errstr);
    return r;
}

static void assert_mark(const char *sold, const char *want, const char *what)
{
    redisReply *r = archive_call("mark", sold);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, want);
    if (what)
        assert_string_equal(r->element[1]->str, what);
    freeReplyObject(r);
}

static void test_archive_script(void **state)
{
    (void)state;
    warm(10, NOW - HOUR, NOW - 1, "ACTIVE");
    char ka[KEYS_LEN], kf[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    key(kf, KEYS_FAILED);
    struct xres x = execute_at(7, "10.0.0.1", NOW - 2, &NO_LIMITS);
    assert_str(x.status, "OK");
    assert_mark("", "BUSY", "reservations");
    assert_int_equal(cmd_int("HEXISTS %s archived", ka), 0);
    assert_int_equal(rollback(x.order_no, 7), 1);
    assert_mark("", "BUSY", "failed-stream");
    /* The outcomes pass recorded the FAILED order: its entry left the stream. */
    cmd_ok("XTRIM %s MAXLEN 0", kf);
    assert_mark("3", "BUSY", "sold");     /* another SUCCESS count than the hash's */
    assert_int_equal(cmd_int("HEXISTS %s archived", ka), 0);
    assert_mark("0", "OK", NULL);
    assert_mark("0", "ARCHIVED", "1700000000000");
    redisReply *r = archive_call("drop", "");
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer >= 3);         /* stock, users, orders and the stream at least */
    freeReplyObject(r);
    assert_int_equal(delete_activity_keys(A), 1);   /* the activity hash alone was left */
    /* Unmarked (a later bucket refused), nothing is dropped. */
    warm(10, NOW - HOUR, NOW - 1, "ACTIVE");
    assert_mark("", "OK", NULL);
    r = archive_call("unmark", "");
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    r = archive_call("drop", "");
    assert_int_equal(r->integer, -1);
    freeReplyObject(r);
    char ks[KEYS_LEN];
    key(ks, KEYS_STOCK);
    assert_int_equal(cmd_int("EXISTS %s", ks), 1);
}

int main(void)
{
    const char *host = getenv("SECKILL_TEST_REDIS_HOST");
    const char *port_s = getenv("SECKILL_TEST_REDIS_PORT");
    if (!host || !*host)
        host = "127.0.0.1";
    int port = port_s && *port_s ? atoi(port_s) : 16379;

    config_init(&cfg);
    char err[256];
    if (luascript_load_all(&scripts, SK_LUA_DIR, err, sizeof(err)) != 0) {
        fprintf(stderr, "test_lua: FAILED: cannot load the scripts: %s\n", err);
        config_free(&cfg);
        return 1;
    }

    struct timeval tv = { 2, 0 };
    redis = redisConnectWithTimeout(host, port, tv);
    redisReply *pong = NULL;
    if (redis && !redis->err) {
        redisSetTimeout(redis, (struct timeval){ 10, 0 });
        pong = redisCommand(redis, "PING");
    }
    if (!pong || pong->type != REDIS_REPLY_STATUS) {
        fprintf(stderr,
                "test_lua: FAILED: Redis at %s:%d is not reachable (%s).\n"
                "  Start one (e.g. redis-server --port %d) or point SECKILL_TEST_REDIS_HOST /"
                " SECKILL_TEST_REDIS_PORT at one.\n",
                host, port, redis && redis->err ? redis->errstr : "no PONG", port);
        if (pong)
            freeReplyObject(pong);
        if (redis)
            redisFree(redis);
        luascript_free_all(&scripts);
        config_free(&cfg);
        return 1;
    }
    freeReplyObject(pong);

    struct timeval now;
    gettimeofday(&now, NULL);
    uint64_t mix = (uint64_t)now.tv_sec * 1000003ULL + (uint64_t)now.tv_usec * 7919ULL +
                   (uint64_t)getpid() * 104729ULL;
    /* 9e12 + a random multiple of 100: far above any real activity id. */
    next_activity = 9000000000000LL + (int64_t)(mix % 9000000000ULL) * 100;
    orderno_init(&gen, (uint32_t)(getpid() & ORDERNO_MAX_NODE));

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scripts_named_by_redis_sha, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stock_never_below_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_per_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_and_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_equals_single_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_malformed_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_user_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_ip_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anti_brush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confirm_first_then_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expire_first_then_confirm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_is_not_expired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confirm_twice_then_finalize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_cutoff_and_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaper_takes_only_the_nodes_it_is_given, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redeliver_takes_stale_reservations_and_expires_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_forget_settles_a_lost_verdict_in_either_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confirm_batch_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conservation_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conservation_random_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confirm_unknown_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon_claimed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_supersede_keeps_the_unit_for_the_forgotten_winner, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_finalize_leaves_a_sale_without_counter_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_result_script, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activity_script, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purchase_token_spent_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive_script, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    redisFree(redis);
    luascript_free_all(&scripts);
    config_free(&cfg);
    return failed;
}
