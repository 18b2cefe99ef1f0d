/* execute.lua: stock, one order per user, the window, coalesced calls, the limits,
 * anti-brush and purchase tokens. */
#include "luatest.h"

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

int main(void)
{
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
        cmocka_unit_test_setup_teardown(test_purchase_token_spent_once, setup, teardown),
    };
    return luatest_run("test_lua_execute", tests, sizeof(tests) / sizeof(tests[0]));
}
