/* The slot map and the redirect decisions: redis.nodes parsing, a CLUSTER SLOTS reply
 * turned into owners, and what MOVED and ASK do to the map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/slotmap.h"

/* ---- hand-built replies (what hiredis would hand over) ---- */

static redisReply *r_int(long long v)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = REDIS_REPLY_INTEGER;
    r->integer = v;
    return r;
}

static redisReply *r_str(int type, const char *s)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = type;
    r->str = strdup(s);
    r->len = strlen(s);
    return r;
}

static redisReply *r_arr(size_t n, ...)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n ? n : 1, sizeof(redisReply *));
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

static redisReply *r_range(long long first, long long last, const char *host, int port, int replica_port)
{
    return r_arr(4, r_int(first), r_int(last),
                 r_arr(3, r_str(REDIS_REPLY_STRING, host), r_int(port), r_str(REDIS_REPLY_STRING, "id")),
                 r_arr(3, r_str(REDIS_REPLY_STRING, host), r_int(replica_port),
                       r_str(REDIS_REPLY_STRING, "id2")));
}

static void r_free(redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        r_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

static redisReply *three_masters(void)
{
    return r_arr(3, r_range(0, 5460, "127.0.0.1", 7001, 7004), r_range(5461, 10922, "127.0.0.1", 7002, 7005),
                 r_range(10923, 16383, "127.0.0.1", 7003, 7006));
}

/* ---- redis.nodes ---- */

static void test_parse_nodes(void **state)
{
    (void)state;
    struct slotmap_addr a[4];
    char err[128];
    assert_int_equal(slotmap_parse_nodes("127.0.0.1:7001, 127.0.0.1:7002 ,localhost:7003", a, 4, err,
                                         sizeof(err)), 3);
    assert_string_equal(a[0].host, "127.0.0.1");
    assert_int_equal(a[0].port, 7001);
    assert_string_equal(a[2].host, "localhost");
    assert_int_equal(a[2].port, 7003);
    assert_int_equal(slotmap_parse_nodes("", a, 4, err, sizeof(err)), 0);
    assert_int_equal(slotmap_parse_nodes("  ", a, 4, err, sizeof(err)), 0);
}

static void test_parse_nodes_rejects(void **state)
{
    (void)state;
    struct slotmap_addr a[2];
    char err[128];
    const char *bad[] = { "127.0.0.1", "127.0.0.1:", ":7001", "h:0", "h:65536", "h:70a", "h:7001,",
                          ",h:7001", "h:7001,,h:7002", "a b:7001", "h:123456" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(slotmap_parse_nodes(bad[i], a, 2, err, sizeof(err)), -1);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(slotmap_parse_nodes("h:1,h:2,h:3", a, 2, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "more than 2"));
}

/* ---- the map ---- */

static void test_single_owns_everything(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_single(&m, "127.0.0.1", 16379);
    assert_int_equal(m.count, 1);
    assert_int_equal(slotmap_uncovered(&m), 0);
    assert_int_equal(slotmap_owner_of_key(&m, "seckill:stock:{7}", 17), 0);
    assert_int_equal(slotmap_owner(&m, 16383), 0);
    assert_int_equal(slotmap_owner(&m, 16384), -1);
}

static void test_load_cluster_slots(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    assert_int_equal(slotmap_uncovered(&m), REDISSLOT_COUNT);
    redisReply *r = three_masters();
    char err[128];
    assert_int_equal(slotmap_load(&m, r, "127.0.0.1", NULL, err, sizeof(err)), 0);
    r_free(r);
    assert_int_equal(m.count, 3);  /* replicas are not routed to */
    assert_int_equal(slotmap_uncovered(&m), 0);
    assert_int_equal(m.nodes[slotmap_owner(&m, 0)].port, 7001);
    assert_int_equal(m.nodes[slotmap_owner(&m, 5460)].port, 7001);
    assert_int_equal(m.nodes[slotmap_owner(&m, 5461)].port, 7002);
    assert_int_equal(m.nodes[slotmap_owner(&m, 16383)].port, 7003);
    /* "foo" is slot 12182 */
    assert_int_equal(m.nodes[slotmap_owner_of_key(&m, "foo", 3)].port, 7003);
    for (int n = 0; n < 3; n++)
        assert_true(slotmap_owns_any(&m, n));
}

static void test_reload_keeps_node_numbers(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    char err[128];
    slotmap_set dropped = 1;
    redisReply *r = three_masters();
    assert_int_equal(slotmap_load(&m, r, "127.0.0.1", &dropped, err, sizeof(err)), 0);
    r_free(r);
    assert_int_equal(dropped, 0);
    /* 7001 failed over to its replica 7004: 7001 leaves the table, 7004 takes its number */
    r = r_arr(3, r_range(0, 5460, "127.0.0.1", 7004, 7001), r_range(5461, 10922, "127.0.0.1", 7002, 7005),
              r_range(10923, 16383, "127.0.0.1", 7003, 7006));
    assert_int_equal(slotmap_load(&m, r, "127.0.0.1", &dropped, err, sizeof(err)), 0);
    r_free(r);
    assert_int_equal(m.count, 3);
    assert_int_equal(m.nodes[1].port, 7002);
    assert_int_equal(slotmap_owner(&m, 6000), 1);
    assert_int_equal(m.nodes[2].port, 7003);
    assert_int_equal(slotmap_owner(&m, 0), 0);
    assert_int_equal(m.nodes[0].port, 7004);
    assert_int_equal(dropped, 1u << 0);  /* number 0 changed hands: its connection goes */
}

static struct slotmap_addr addr(const char *host, int port)
{
    struct slotmap_addr a = { .port = port };
    snprintf(a.host, sizeof(a.host), "%s", host);
    return a;
}

static int known_nodes(const struct slotmap *m)
{
    int n = 0;
    for (int i = 0; i < SLOTMAP_MAX_NODES; i++)
        n += slotmap_known(m, i);
    return n;
}

/* Masters replaced at new addresses, one reload after another, far more addresses in all
 * than the table holds: every reload works, and the table is the seeds plus the masters of
 * the last reply. */
static void test_table_is_rebuilt_from_each_reply_and_the_seeds(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    struct slotmap_addr seed1 = addr("127.0.0.1", 7001), seed2 = addr("127.0.0.1", 7002);
    assert_int_equal(slotmap_seed(&m, &seed1), 0);
    assert_int_equal(slotmap_seed(&m, &seed2), 1);
    char err[128];
    int stable = -1;  /* the number of 7003, the master never replaced */
    for (int round = 0; round < 4 * SLOTMAP_MAX_NODES; round++) {
        /* two of three masters at addresses new every round; 7003 stays */
        redisReply *r = r_arr(3, r_range(0, 5460, "10.0.1.1", 8000 + round, 9000),
                              r_range(5461, 10922, "127.0.0.1", 7003, 9001),
                              r_range(10923, 16383, "10.0.2.2", 8000 + round, 9002));
        slotmap_set dropped = 0;
        if (slotmap_load(&m, r, "127.0.0.1", &dropped, err, sizeof(err)) != 0)
            fail_msg("round %d: %s", round, err);
        r_free(r);
        assert_int_equal(known_nodes(&m), 5);
        assert_int_equal(slotmap_uncovered(&m), 0);
        assert_int_equal(m.nodes[slotmap_owner(&m, 0)].port, 8000 + round);
        assert_string_equal(m.nodes[slotmap_owner(&m, 16383)].host, "10.0.2.2");
        assert_int_equal(m.nodes[0].port, 7001);  /* the seeds, though they own nothing */
        assert_int_equal(m.nodes[1].port, 7002);
        int n7003 = slotmap_owner(&m, 6000);
        assert_int_equal(m.nodes[n7003].port, 7003);
        if (stable >= 0)
            assert_int_equal(n7003, stable);
        stable = n7003;
        /* the two replaced masters' numbers changed hands; no other did */
        assert_int_equal(__builtin_popcount(dropped), round == 0 ? 0 : 2);
        assert_int_equal(dropped & ((1u << 0) | (1u << 1) | (1u << (unsigned)stable)), 0);
    }
    assert_true(m.count <= 5);
}

/* The table of a map that redirects grew (a MOVED to a node the map did not name) loses
 * that node at the next reload that does not name it either; a full table is refused
 * with the map unchanged. */
static void test_redirect_targets_are_kept_only_while_named(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    struct slotmap_addr seed = addr("127.0.0.1", 7001);
    slotmap_seed(&m, &seed);
    char err[128];
    redisReply *mv = r_str(REDIS_REPLY_ERROR, "MOVED 3 127.0.0.1:7100");
    struct slotmap_redirect rd;
    assert_int_equal(slotmap_redirect(mv, &rd), SLOTMAP_MOVED);
    r_free(mv);
    assert_int_equal(slotmap_follow(&m, &rd), 1);
    redisReply *r = r_arr(1, r_range(0, 16383, "127.0.0.1", 7001, 7002));
    slotmap_set dropped = 0;
    assert_int_equal(slotmap_load(&m, r, "127.0.0.1", &dropped, err, sizeof(err)), 0);
    r_free(r);
    assert_int_equal(dropped, 1u << 1);
    assert_false(slotmap_known(&m, 1));
    assert_int_equal(m.count, 1);
    /* a reply naming more masters than the table holds beside the seed */
    redisReply *big = r_arr(0);
    free(big->element);
    big->elements = SLOTMAP_MAX_NODES;
    big->element = calloc(SLOTMAP_MAX_NODES, sizeof(redisReply *));
    for (int i = 0; i < SLOTMAP_MAX_NODES; i++)
        big->element[i] = r_range(i * 100, i * 100 + 99, "127.0.0.1", 7200 + i, 7300 + i);
    err[0] = '\0';
    assert_int_equal(slotmap_load(&m, big, "127.0.0.1", &dropped, err, sizeof(err)), -1);
    r_free(big);
    assert_non_null(strstr(err, "more than"));
    assert_int_equal(m.count, 1);
    assert_int_equal(slotmap_owner(&m, 5000), 0);
}

static void test_load_empty_host_is_the_node_asked(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    char err[128];
    redisReply *r = r_arr(1, r_range(0, 16383, "", 7009, 7010));
    assert_int_equal(slotmap_load(&m, r, "10.1.2.3", NULL, err, sizeof(err)), 0);
    r_free(r);
    assert_string_equal(m.nodes[0].host, "10.1.2.3");
}

static void test_load_bad_reply_changes_nothing(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_single(&m, "127.0.0.1", 16379);
    char err[128];
    redisReply *bad[] = {
        r_str(REDIS_REPLY_ERROR, "ERR This instance has cluster support disabled"),
        r_arr(1, r_arr(2, r_int(0), r_int(100))),
        r_arr(1, r_range(100, 16384, "127.0.0.1", 7001, 7002)),
        r_arr(1, r_range(200, 100, "127.0.0.1", 7001, 7002)),
        r_arr(2, r_range(0, 99, "127.0.0.1", 7001, 7002), r_range(100, 200, "127.0.0.1", 0, 7002)),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(slotmap_load(&m, bad[i], "127.0.0.1", NULL, err, sizeof(err)), -1);
        assert_true(err[0] != '\0');
        r_free(bad[i]);
        assert_int_equal(slotmap_uncovered(&m), 0);
        assert_int_equal(slotmap_owner(&m, 50), 0);
    }
    assert_int_equal(slotmap_load(&m, NULL, "127.0.0.1", NULL, err, sizeof(err)), -1);
}

static void test_partial_coverage_is_reported(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    char err[128];
    redisReply *r = r_arr(1, r_range(0, 8191, "127.0.0.1", 7001, 7002));
    assert_int_equal(slotmap_load(&m, r, "127.0.0.1", NULL, err, sizeof(err)), 0);
    r_free(r);
    assert_int_equal(slotmap_uncovered(&m), 8192);
    assert_int_equal(slotmap_owner(&m, 9000), -1);
}

/* ---- redirects ---- */

static void test_moved_updates_the_slot_only(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_init(&m);
    char err[128];
    redisReply *slots = three_masters();
    assert_int_equal(slotmap_load(&m, slots, "127.0.0.1", NULL, err, sizeof(err)), 0);
    r_free(slots);
    redisReply *r = r_str(REDIS_REPLY_ERROR, "MOVED 12182 127.0.0.1:7001");
    struct slotmap_redirect rd;
    assert_int_equal(slotmap_redirect(r, &rd), SLOTMAP_MOVED);
    r_free(r);
    assert_int_equal(rd.slot, 12182);
    assert_int_equal(rd.to.port, 7001);
    int node = slotmap_follow(&m, &rd);
    assert_int_equal(m.nodes[node].port, 7001);
    assert_int_equal(slotmap_owner_of_key(&m, "foo", 3), node);
    assert_int_equal(m.nodes[slotmap_owner(&m, 12181)].port, 7003);
}

static void test_moved_to_an_unknown_node_adds_it(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_single(&m, "127.0.0.1", 7001);
    redisReply *r = r_str(REDIS_REPLY_ERROR, "MOVED 3 10.0.0.9:7100");
    struct slotmap_redirect rd;
    assert_int_equal(slotmap_redirect(r, &rd), SLOTMAP_MOVED);
    r_free(r);
    assert_int_equal(slotmap_follow(&m, &rd), 1);
    assert_string_equal(m.nodes[1].host, "10.0.0.9");
    assert_int_equal(slotmap_owner(&m, 3), 1);
}

static void test_ask_leaves_the_map_alone(void **state)
{
    (void)state;
    static struct slotmap m;
    slotmap_single(&m, "127.0.0.1", 7001);
    redisReply *r = r_str(REDIS_REPLY_ERROR, "ASK 9842 127.0.0.1:7002");
    struct slotmap_redirect rd;
    assert_int_equal(slotmap_redirect(r, &rd), SLOTMAP_ASK);
    r_free(r);
    int node = slotmap_follow(&m, &rd);
    assert_int_equal(m.nodes[node].port, 7002);
    assert_int_equal(slotmap_owner(&m, 9842), 0);
}

static void test_other_replies_are_answers(void **state)
{
    (void)state;
    struct slotmap_redirect rd;
    const char *errors[] = { "NOSCRIPT No matching script", "CROSSSLOT Keys in request don't hash to the "
                             "same slot", "CLUSTERDOWN The cluster is down",
                             "TRYAGAIN Multiple keys request during rehashing", "MOVED",
                             "MOVED x 127.0.0.1:7001", "MOVED 16384 127.0.0.1:7001", "MOVED 3 127.0.0.1",
                             "ASK 3", "MOVEDX 3 h:1" };
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        redisReply *r = r_str(REDIS_REPLY_ERROR, errors[i]);
        assert_int_equal(slotmap_redirect(r, &rd), SLOTMAP_DONE);
        r_free(r);
    }
    redisReply *ok = r_str(REDIS_REPLY_STRING, "MOVED 3 127.0.0.1:7001");
    assert_int_equal(slotmap_redirect(ok, &rd), SLOTMAP_DONE);
    r_free(ok);
    assert_int_equal(slotmap_redirect(NULL, &rd), SLOTMAP_DONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_nodes),
        cmocka_unit_test(test_parse_nodes_rejects),
        cmocka_unit_test(test_single_owns_everything),
        cmocka_unit_test(test_load_cluster_slots),
        cmocka_unit_test(test_reload_keeps_node_numbers),
        cmocka_unit_test(test_table_is_rebuilt_from_each_reply_and_the_seeds),
        cmocka_unit_test(test_redirect_targets_are_kept_only_while_named),
        cmocka_unit_test(test_load_empty_host_is_the_node_asked),
        cmocka_unit_test(test_load_bad_reply_changes_nothing),
        cmocka_unit_test(test_partial_coverage_is_reported),
        cmocka_unit_test(test_moved_updates_the_slot_only),
        cmocka_unit_test(test_moved_to_an_unknown_node_adds_it),
        cmocka_unit_test(test_ask_leaves_the_map_alone),
        cmocka_unit_test(test_other_replies_are_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
