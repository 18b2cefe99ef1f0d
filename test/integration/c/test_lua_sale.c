/* The scripts of a sale as a whole: the result and activity reads, and the archive. */
#include "luatest.h"

static void test_result_script(void **state)
{
    (void)state;
    warm_open(5);
    char ku[KEYS_LEN], ko[KEYS_LEN], kf[KEYS_LEN];
    key(ku, KEYS_USERS);
    key(ko, KEYS_ORDERS);
    key(kf, KEYS_FAILED_USERS);
    char ka[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    const char *keys[4] = { ku, ko, kf, ka };
    const int64_t user = 31;
    char uid[24];
    snprintf(uid, sizeof(uid), "%" PRId64, user);
    const char *args[1] = { uid };
    const struct luascript *s = &scripts.scripts[LUASCRIPT_RESULT];

    redisReply *r = luascript_call_sync(redis, s, 4, keys, 1, args);
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
        r = luascript_call_sync(redis, s, 4, keys, 1, args);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 2);
        assert_string_equal(r->element[0]->str, x.order_no);
        assert_string_equal(r->element[1]->str, phase == 2 ? "SUCCESS" : "PROCESSING");
        freeReplyObject(r);
    }

    /* After a rollback the user holds no order: the failed one is answered, with its
     * reason, until they hold another. */
    struct xres y = execute_ok(32);
    assert_int_equal(rollback(y.order_no, 32), 1);
    const char *args32[1] = { "32" };
    r = luascript_call_sync(redis, s, 4, keys, 1, args32);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, y.order_no);
    assert_string_equal(r->element[1]->str, "FAILED");
    assert_string_equal(r->element[2]->str, "ROLLED_BACK");
    freeReplyObject(r);
    struct xres again = execute_ok(32);
    r = luascript_call_sync(redis, s, 4, keys, 1, args32);
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, again.order_no);
    assert_string_equal(r->element[1]->str, "PROCESSING");
    freeReplyObject(r);
    /* Expired by the reaper: the reason says so. */
    assert_int_equal(reap(INT64_MAX, 10), 1);
    r = luascript_call_sync(redis, s, 4, keys, 1, args32);
    assert_non_null(r);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, again.order_no);
    assert_string_equal(r->element[2]->str, "EXPIRED");
    freeReplyObject(r);

    /* A user entry whose status is missing reads as PROCESSING. */
    cmd_ok("HSET %s 33 %s", ku, "123-1");
    const char *args33[1] = { "33" };
    r = luascript_call_sync(redis, s, 4, keys, 1, args33);
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, "123-1");
    assert_string_equal(r->element[1]->str, "PROCESSING");
    freeReplyObject(r);
}

/* A sale of perUser 3: a user holds up to three orders, each under its own slot's field;
 * the fourth is LIMIT_REACHED; a released order frees its own slot only (found without
 * the gateway naming it); the next purchase takes that slot; result answers every slot. */
static void test_per_user_slots(void **state)
{
    (void)state;
    warm_open(10);
    char ka[KEYS_LEN], ku[KEYS_LEN], ko[KEYS_LEN], kf[KEYS_LEN], kr[KEYS_LEN];
    key(ka, KEYS_ACTIVITY);
    key(ku, KEYS_USERS);
    key(ko, KEYS_ORDERS);
    key(kf, KEYS_FAILED_USERS);
    key(kr, KEYS_RESERVED);
    cmd_ok("HSET %s perUser 3", ka);
    struct xres held[3];
    for (int i = 0; i < 3; i++) {
        held[i] = execute_ok(41);
        assert_int_equal(held[i].slot, i + 1);
        char field[24], member[80], got[ORDERNO_LEN];
        snprintf(field, sizeof(field), i == 0 ? "41" : "41#%d", i + 1);
        assert_true(cmd_str(got, sizeof(got), "HGET %s %s", ku, field));
        assert_str(got, held[i].order_no);
        snprintf(member, sizeof(member), "%s|%s", held[i].order_no, field);
        char score[32];
        assert_true(cmd_str(score, sizeof(score), "ZSCORE %s %s", kr, member));
    }
    struct xres full = execute(41);
    assert_str(full.status, "LIMIT_REACHED");
    assert_str(full.order_no, held[0].order_no);
    assert_int_equal(stock_left(), 7);
    /* Another user is not limited by 41's slots. */
    assert_int_equal(execute_ok(42).slot, 1);

    /* The gateway's rollback names the user, not the slot. */
    assert_int_equal(rollback(held[1].order_no, 41), 1);
    assert_order_status(held[1].order_no, "FAILED");
    assert_int_equal(cmd_int("HEXISTS %s 41#2", ku), 0);
    assert_int_equal(cmd_int("HEXISTS %s 41", ku), 1);
    assert_int_equal(stock_left(), 7);
    struct xres again = execute_ok(41);
    assert_int_equal(again.slot, 2);
    assert_str(execute(41).status, "LIMIT_REACHED");

    const char *keys[4] = { ku, ko, kf, ka };
    const char *args[1] = { "41" };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_RESULT], 4, keys, 1, args);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3 + 3 * 3);
    assert_str(r->element[0]->str, again.order_no);  /* the newest held */
    assert_str(r->element[1]->str, "PROCESSING");
    assert_str(r->element[2]->str, "");
    const char *slots[3] = { held[0].order_no, again.order_no, held[2].order_no };
    for (int i = 0; i < 3; i++) {
        assert_str(r->element[3 + 3 * i]->str, slots[i]);
        assert_str(r->element[4 + 3 * i]->str, "PROCESSING");
    }
    freeReplyObject(r);

    /* Every slot released (the reaper): result answers the newest failure of each. */
    assert_int_equal(reap(INT64_MAX, 100), 4);
    r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_RESULT], 4, keys, 1, args);
    assert_non_null(r);
    assert_int_equal(r->elements, 3 + 3 * 3);
    assert_str(r->element[1]->str, "FAILED");
    assert_str(r->element[2]->str, "EXPIRED");
    freeReplyObject(r);
    assert_int_equal(stock_left(), 10);
    assert_int_equal(cmd_int("HLEN %s", ku), 0);
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
    /* The ninth: the bucket tags, '' for an activity of one bucket; then paused ('0' when
     * the hash has no say), the coupon's record ('' when the warm-up wrote none) and the
     * orders one user may hold ('1' when the hash has no say). */
    const char *want[12] = { "t", "7", "6", want_start, want_end, "ACTIVE", "4", "2", "", "0", "", "1" };
    r = luascript_call_sync(redis, s, 3, keys, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 12);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(r->element[i]->type, REDIS_REPLY_STRING);
        assert_string_equal(r->element[i]->str, want[i]);
    }
    freeReplyObject(r);

    /* A paused sale with its coupon's record. */
    cmd_ok("HSET %s paused 1 coupon %s perUser 4", ka, "{\"id\":0}");
    r = luascript_call_sync(redis, s, 3, keys, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->elements, 12);
    assert_string_equal(r->element[9]->str, "1");
    assert_string_equal(r->element[10]->str, "{\"id\":0}");
    assert_string_equal(r->element[11]->str, "4");
    freeReplyObject(r);

    /* Missing fields read as empty, a missing stock key as 0. */
    cmd_ok("HDEL %s name", ka);
    cmd_ok("DEL %s", ks);
    r = luascript_call_sync(redis, s, 3, keys, 0, NULL);
    assert_non_null(r);
    assert_int_equal(r->elements, 12);
    assert_string_equal(r->element[0]->str, "");
    assert_string_equal(r->element[3]->str, want_start);
    assert_string_equal(r->element[6]->str, "0");
    freeReplyObject(r);
}

/* archive.lua 'mark' refuses while anything of the sale is in flight, marks once, and
 * 'drop' removes every key but the activity hash, only once marked. */
static redisReply *archive_call(const char *mode, const char *sold)
{
    static const enum keys_kind kinds[11] = { KEYS_ACTIVITY, KEYS_STOCK, KEYS_USERS, KEYS_ORDERS,
                                              KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED, KEYS_FAILED,
                                              KEYS_XFER_OUT, KEYS_XFER_IN, KEYS_FAILED_USERS };
    char k[11][KEYS_LEN];
    const char *keys[11];
    for (int i = 0; i < 11; i++) {
        key(k[i], kinds[i]);
        keys[i] = k[i];
    }
    const char *args[3] = { mode, "1700000000000", sold };
    redisReply *r = luascript_call_sync(redis, &scripts.scripts[LUASCRIPT_ARCHIVE], 11, keys,
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_per_user_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_result_script, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activity_script, setup, teardown),
        cmocka_unit_test_setup_teardown(test_archive_script, setup, teardown),
    };
    return luatest_run("test_lua_sale", tests, sizeof(tests) / sizeof(tests[0]));
}
