/* The shared part of the tests of the Redis scripts (luatest.h). */
#include "luatest.h"

redisContext *redis;
struct luascript_set scripts;
struct config cfg;
struct orderno_gen gen;
int64_t next_activity;
int64_t gen_clock = NOW;

/* The activity of the running test. */
int64_t A;

const struct exec_opts NO_LIMITS = { false, 10, 100, false, 5, 60, NULL };
/* ---- plain Redis helpers -------------------------------------------------------------- */

redisReply *cmd(const char *fmt, ...)
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

void cmd_ok(const char *fmt, ...)
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

int64_t cmd_int(const char *fmt, ...)
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
bool cmd_str(char *buf, size_t len, const char *fmt, ...)
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

void key(char *buf, enum keys_kind kind)
{
    assert_true(keys_activity(buf, KEYS_LEN, &cfg, kind, A) > 0);
}

void subject_key(char *buf, enum keys_subject_kind kind, const char *subject)
{
    assert_true(keys_subject(buf, KEYS_LEN, kind, A, subject) > 0);
}

int64_t stock_left(void)
{
    char k[KEYS_LEN], v[32];
    key(k, KEYS_STOCK);
    if (!cmd_str(v, sizeof(v), "GET %s", k))
        fail_msg("stock key %s is missing", k);
    return strtoll(v, NULL, 10);
}

int64_t count(const char *verb, enum keys_kind kind)
{
    char k[KEYS_LEN];
    key(k, kind);
    return cmd_int("%s %s", verb, k);
}

bool order_status(const char *order_no, char *out, size_t len)
{
    char k[KEYS_LEN];
    key(k, KEYS_ORDERS);
    return cmd_str(out, len, "HGET %s %s", k, order_no);
}

void assert_order_status(const char *order_no, const char *want)
{
    char st[32];
    if (!order_status(order_no, st, sizeof(st)))
        fail_msg("order %s has no status, expected %s", order_no, want);
    assert_str(st, want);
}

/* The failed stream holds `entries` entries, the last one for this order, user and reason
 * (with a time: Redis' clock). */
void assert_last_failed(const char *order_no, int64_t user, const char *reason, long long entries)
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

bool user_order(int64_t user, char *out, size_t len)
{
    char k[KEYS_LEN];
    key(k, KEYS_USERS);
    return cmd_str(out, len, "HGET %s %" PRId64, k, user);
}

int64_t success_count(void)
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
int64_t sold_counter(void)
{
    char k[KEYS_LEN];
    key(k, KEYS_ACTIVITY);
    redisReply *r = cmd("HGET %s sold", k);
    int64_t n = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return n;
}

bool in_set(enum keys_kind kind, const char *member)
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

void warm(int64_t stock, int64_t start, int64_t end, const char *status)
{
    char ka[KEYS_LEN], ks[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    key(ks, KEYS_STOCK);
    cmd_ok("HSET %s name t couponId %d stock %" PRId64 " start %" PRId64 " end %" PRId64
           " status %s sold 0",
           ka, COUPON_ID, stock, start, end, status);
    cmd_ok("SET %s %" PRId64, ks, stock);
}

void warm_open(int64_t stock)
{
    warm(stock, NOW - HOUR, NOW + HOUR, "ACTIVE");
}

size_t delete_activity_keys(int64_t activity)
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

int setup(void **state)
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

int teardown(void **state)
{
    (void)state;
    delete_activity_keys(A);
    return delete_activity_keys(A) == 0 ? 0 : -1;
}

/* ---- the scripts ---------------------------------------------------------------------- */

/* One execute.lua call carrying n requests of activity A (the gateway's coalesced batch);
 * out[i] is request i's verdict. */
void execute_batch(const struct xreq *reqs, size_t n, const struct exec_opts *o, struct xres *out)
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
            assert_int_equal(v->elements, 4);
            snprintf(x->order_no, sizeof(x->order_no), "%s", v->element[1]->str);
            snprintf(x->coupon, sizeof(x->coupon), "%s", v->element[2]->str);
            assert_int_equal(v->element[3]->type, REDIS_REPLY_INTEGER);
            x->slot = v->element[3]->integer;
        } else if (strcmp(x->status, "DUPLICATE") == 0 || strcmp(x->status, "LIMIT_REACHED") == 0) {
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

struct xres execute_at(int64_t user, const char *ip, int64_t now,
                              const struct exec_opts *o)
{
    struct xreq req = { user, ip, now };
    struct xres x;
    execute_batch(&req, 1, o, &x);
    return x;
}

struct xres execute(int64_t user)
{
    return execute_at(user, "10.0.0.1", NOW, &NO_LIMITS);
}

struct xres execute_ok(int64_t user)
{
    struct xres x = execute(user);
    assert_str(x.status, "OK");
    assert_string_equal(x.order_no, x.sent_no);
    return x;
}

/* One script over the keys of this test's activity named by kinds, and args: the reply
 * (the caller frees it). */
redisReply *script_call(enum luascript_id id, const enum keys_kind *kinds, int nkeys, int nargs,
                        const char *const *args)
{
    char k[KEYS_KIND_COUNT][KEYS_LEN];
    const char *keys[KEYS_KIND_COUNT];
    assert_true(nkeys <= KEYS_KIND_COUNT);
    for (int i = 0; i < nkeys; i++) {
        key(k[i], kinds[i]);
        keys[i] = k[i];
    }
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[id], nkeys, keys, nargs, args);
    if (!r)
        fail_msg("%s: %s", scripts.scripts[id].name, redis->errstr);
    return r;
}

/* The (orderNo, user) pairs as the consumer's scripts take them; pairs_free releases them. */
struct pairs pairs_of(size_t n, const char *const *order_nos, const int64_t *users)
{
    struct pairs p = { calloc(2 * n + 1, sizeof(char *)), calloc(n + 1, sizeof(*p.uids)), (int)(2 * n) };
    assert_non_null(p.args);
    assert_non_null(p.uids);
    for (size_t i = 0; i < n; i++) {
        snprintf(p.uids[i], sizeof(p.uids[i]), "%" PRId64, users[i]);
        p.args[2 * i] = order_nos[i];
        p.args[2 * i + 1] = p.uids[i];
    }
    return p;
}

void pairs_free(struct pairs *p)
{
    free(p->args);
    free(p->uids);
}

int64_t release_call_n(int nargs, const char *const *args)
{
    static const enum keys_kind kinds[] = { KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_FAILED,
                                            KEYS_ACTIVITY, KEYS_FAILED_USERS };
    redisReply *r = script_call(LUASCRIPT_RELEASE, kinds, 7, nargs, args);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("release: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    int64_t n = r->integer;
    freeReplyObject(r);
    return n;
}

int64_t release_call(const char *mode, const char *a1, const char *a2)
{
    const char *args[3] = { mode, a1, a2 };
    return release_call_n(3, args);
}

int64_t rollback(const char *order_no, int64_t user)
{
    char uid[24];
    snprintf(uid, sizeof(uid), "%" PRId64, user);
    return release_call("order", order_no, uid);
}

int64_t reap(int64_t cutoff_ms, int64_t max_count)
{
    char c[24], m[24];
    snprintf(c, sizeof(c), "%" PRId64, cutoff_ms);
    snprintf(m, sizeof(m), "%" PRId64, max_count);
    return release_call("older", c, m);
}

/* The reaper of a gateway: only the reservations whose order number carries a node that
 * `mode` ("own" NODE, "except" ",a,b,") leaves to it. */
int64_t reap_nodes(int64_t cutoff_ms, int64_t max_count, const char *mode, const char *nodes)
{
    char c[24], m[24];
    snprintf(c, sizeof(c), "%" PRId64, cutoff_ms);
    snprintf(m, sizeof(m), "%" PRId64, max_count);
    const char *args[5] = { "older", c, m, mode, nodes };
    return release_call_n(5, args);
}

void member_of(char *buf, size_t len, const char *order_no, int64_t user)
{
    snprintf(buf, len, "%s|%" PRId64, order_no, user);
}

int64_t mark_queued(const char *order_no, int64_t user)
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
void confirm_many(size_t n, const char *const *order_nos, const int64_t *users,
                         char (*out)[16])
{
    static const enum keys_kind kinds[] = { KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED,
                                            KEYS_CLAIMED, KEYS_ACTIVITY, KEYS_FAILED };
    struct pairs p = pairs_of(n, order_nos, users);
    redisReply *r = script_call(LUASCRIPT_CONFIRM, kinds, 8, p.nargs, p.args);
    pairs_free(&p);
    if (r->type != REDIS_REPLY_ARRAY)
        fail_msg("confirm: reply type %d %s", r->type, r->type == REDIS_REPLY_ERROR ? r->str : "");
    assert_int_equal(r->elements, n);
    for (size_t i = 0; i < n; i++)
        snprintf(out[i], sizeof(out[i]), "%s", r->element[i]->str);
    freeReplyObject(r);
}

void assert_confirm(const char *order_no, int64_t user, const char *want)
{
    char verdict[1][16];
    confirm_many(1, &order_no, &user, verdict);
    if (strcmp(verdict[0], want) != 0)
        fail_msg("confirm %s: got %s, expected %s", order_no, verdict[0], want);
}

int64_t finalize(size_t n, const char *const *order_nos, const int64_t *users)
{
    static const enum keys_kind kinds[] = { KEYS_ORDERS, KEYS_CLAIMED, KEYS_ACTIVITY };
    struct pairs p = pairs_of(n, order_nos, users);
    redisReply *r = script_call(LUASCRIPT_FINALIZE, kinds, 3, p.nargs, p.args);
    pairs_free(&p);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    int64_t v = r->integer;
    freeReplyObject(r);
    return v;
}

int64_t finalize_one(const char *order_no, int64_t user)
{
    return finalize(1, &order_no, &user);
}

/* I3: stock + live reservations (resv, queued, claimed) + SUCCESS = initial stock. */
void assert_conserved(int64_t initial)
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

int luatest_run(const char *name, const struct CMUnitTest *tests, size_t count)
{
    const char *host = getenv("SECKILL_TEST_REDIS_HOST");
    const char *port_s = getenv("SECKILL_TEST_REDIS_PORT");
    if (!host || !*host)
        host = "127.0.0.1";
    int port = port_s && *port_s ? atoi(port_s) : 16379;

    config_init(&cfg);
    char err[256];
    if (luascript_load_all(&scripts, SK_LUA_DIR, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s: FAILED: cannot load the scripts: %s\n", name, err);
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
                "%s: FAILED: Redis at %s:%d is not reachable (%s).\n"
                "  Start one (e.g. redis-server --port %d) or point SECKILL_TEST_REDIS_HOST /"
                " SECKILL_TEST_REDIS_PORT at one.\n",
                name, host, port, redis && redis->err ? redis->errstr : "no PONG", port);
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

    int failed = _cmocka_run_group_tests(name, tests, count, NULL, NULL);
    redisFree(redis);
    luascript_free_all(&scripts);
    config_free(&cfg);
    return failed;
}
