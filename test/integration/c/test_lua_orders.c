/* An order's life after execute.lua: release, queued marks, confirm, finalize, abandon,
 * supersede, the reaper and redelivery, and the conservation of stock across all of them. */
#include "luatest.h"

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
    static const enum keys_kind kinds[] = { KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_CLAIMED, KEYS_FAILED,
                                            KEYS_FAILED_USERS };
    assert_true(n <= 4);
    struct pairs p = pairs_of(n, order_nos, users);
    redisReply *r = script_call(LUASCRIPT_ABANDON, kinds, 6, p.nargs, p.args);
    pairs_free(&p);
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
    static const enum keys_kind kinds[] = { KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED,
                                            KEYS_FAILED, KEYS_ACTIVITY, KEYS_FAILED_USERS };
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
    redisReply *r = script_call(LUASCRIPT_SUPERSEDE, kinds, 8, (int)(1 + 2 * (nl + nw)), args);
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
/* ordercancel.lua: a SUCCESS order CANCELLED with its unit back (I3 holds), once; a batch
 * replayed since, confirmed while the order was SUCCESS and finalized after the cancel,
 * leaves it cancelled and counts nothing. */
static void test_a_cancelled_order_stays_cancelled(void **state)
{
    (void)state;
    warm_open(10);
    struct xres x = execute_ok(1);
    assert_confirm(x.order_no, 1, "CLAIMED");
    assert_int_equal(finalize_one(x.order_no, 1), 1);
    assert_confirm(x.order_no, 1, "CONFIRMED");   /* the replay, before the cancel */
    const enum keys_kind kinds[] = { KEYS_ACTIVITY, KEYS_STOCK, KEYS_ORDERS };
    const char *args[] = { x.order_no };
    redisReply *r = script_call(LUASCRIPT_ORDERCANCEL, kinds, 3, 1, args);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_str(r->element[0]->str, "OK");
    freeReplyObject(r);
    assert_order_status(x.order_no, "CANCELLED");
    assert_int_equal(stock_left(), 10);
    assert_int_equal(sold_counter(), 0);
    assert_conserved(10);
    r = script_call(LUASCRIPT_ORDERCANCEL, kinds, 3, 1, args);
    assert_str(r->element[0]->str, "CANCELLED");
    freeReplyObject(r);
    assert_int_equal(stock_left(), 10);
    /* The replayed batch's finalize, then a later replay's confirm. */
    assert_int_equal(finalize_one(x.order_no, 1), 1);
    assert_order_status(x.order_no, "CANCELLED");
    assert_int_equal(sold_counter(), 0);
    assert_confirm(x.order_no, 1, "REJECTED");
    assert_conserved(10);
    /* The user keeps their one order: a second attempt is a DUPLICATE of it. */
    struct xres again = execute(1);
    assert_str(again.status, "DUPLICATE");
    /* An order not SUCCESS is not cancelled. */
    struct xres y = execute_ok(2);
    const char *yargs[] = { y.order_no };
    r = script_call(LUASCRIPT_ORDERCANCEL, kinds, 3, 1, yargs);
    assert_str(r->element[0]->str, "NOT_SUCCESS");
    assert_str(r->element[1]->str, "PROCESSING");
    freeReplyObject(r);
    assert_order_status(y.order_no, "PROCESSING");
    assert_conserved(10);
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
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
        cmocka_unit_test_setup_teardown(test_a_cancelled_order_stays_cancelled, setup, teardown),
    };
    return luatest_run("test_lua_orders", tests, sizeof(tests) / sizeof(tests[0]));
}
