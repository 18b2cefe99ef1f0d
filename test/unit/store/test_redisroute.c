/* redisroute, the blocking router of order-consumer and seckillctl, against fake Redis
 * nodes served by a child process (test/unit/fakeredis.h, its state in shared memory):
 * commands reach the master of their key's slot, a MOVED reloads the map and is resent,
 * an ASK is resent once behind ASKING without touching the map, NOSCRIPT loads the script
 * on the node that answered it, and single mode never asks for a map. */
#define _DEFAULT_SOURCE  /* MAP_ANONYMOUS */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "store/redisroute.h"
#include "../fakeredis.h"

#define SLOT_FOO 12182  /* CLUSTER KEYSLOT foo; bar is 5061 */

static pid_t server;
static struct config cfg;
static char nodes_list[64];

static int setup(void **state)
{
    (void)state;
    struct fakeredis *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                    -1, 0);
    assert_true(shared != MAP_FAILED);
    assert_int_equal(fakeredis_bind(shared), 0);
    server = fork();
    assert_true(server >= 0);
    if (server == 0) {
        struct event_base *base = event_base_new();
        if (!base || fakeredis_serve(base) != 0)
            _exit(1);
        event_base_dispatch(base);
        _exit(0);
    }
    for (int i = 0; i < 2; i++)
        close(fake->node[i].fd);  /* the child's now */
    memset(&cfg, 0, sizeof(cfg));
    snprintf(nodes_list, sizeof(nodes_list), "127.0.0.1:%d,127.0.0.1:%d", fake->node[0].port,
             fake->node[1].port);
    cfg.redis_nodes = nodes_list;
    cfg.redis_host = "127.0.0.1";
    cfg.redis_port = fake->node[0].port;
    cfg.redis_timeout_ms = 2000;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kill(server, SIGKILL);
    waitpid(server, NULL, 0);
    munmap(fake, sizeof(*fake));
    return 0;
}

static struct redisroute *opened(void)
{
    struct redisroute *rr = redisroute_new(&cfg, 2000);
    assert_non_null(rr);
    char err[256];
    int rc = redisroute_open(rr, err, sizeof(err));
    if (rc != 0)
        fail_msg("open: %s", err);
    return rr;
}

/* GET key: its answer, "(error) ..." or "(null) <why>". */
static const char *get(struct redisroute *rr, const char *key)
{
    static char out[320];
    const char *argv[] = { "GET", key };
    char err[256];
    redisReply *r = redisroute_argv(rr, 2, argv, NULL, 1, err, sizeof(err));
    if (!r)
        snprintf(out, sizeof(out), "(null) %s", err);
    else
        snprintf(out, sizeof(out), "%s%s", r->type == REDIS_REPLY_ERROR ? "(error) " : "", r->str ? r->str
                 : "");
    if (r)
        freeReplyObject(r);
    return out;
}

static void test_commands_go_to_the_master_of_their_slot(void **state)
{
    (void)state;
    struct redisroute *rr = opened();
    assert_true(redisroute_cluster(rr));
    assert_string_equal(get(rr, "foo"), "B:foo");
    assert_string_equal(get(rr, "bar"), "A:bar");
    assert_int_equal(fake->node[0].gets, 1);
    assert_int_equal(fake->node[1].gets, 1);
    char err[128];
    redisContext *c = redisroute_for_key(rr, "seckill:stock:{foo}", 19, err, sizeof(err));
    assert_non_null(c);
    redisReply *r = redisCommand(c, "GET x");  /* the caller's own command on B's connection */
    assert_string_equal(r->str, "B:x");
    freeReplyObject(r);
    redisroute_free(rr);
}

static void test_moved_reloads_the_map_and_is_resent(void **state)
{
    (void)state;
    fake->owner[1] = 0;
    struct redisroute *rr = opened();
    int asked = fake->node[0].slots_asked + fake->node[1].slots_asked;
    /* foo's slot moves to B; the cluster's map says so from now on */
    snprintf(fake->node[0].get_error, sizeof(fake->node[0].get_error), "MOVED %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[1].port);
    fake->owner[1] = 1;
    assert_string_equal(get(rr, "foo"), "B:foo");
    assert_int_equal(fake->node[0].slots_asked + fake->node[1].slots_asked, asked + 1);
    assert_string_equal(get(rr, "foo"), "B:foo");
    assert_int_equal(fake->node[0].gets, 1);
    assert_int_equal(fake->node[1].gets, 2);
    redisroute_free(rr);
}

static void test_ask_is_resent_once_behind_asking(void **state)
{
    (void)state;
    struct redisroute *rr = opened();
    int asked = fake->node[0].slots_asked + fake->node[1].slots_asked;
    snprintf(fake->node[1].get_error, sizeof(fake->node[1].get_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[0].port);
    fake->node[0].needs_asking = true;
    assert_string_equal(get(rr, "foo"), "A:foo");
    assert_string_equal(get(rr, "foo"), "A:foo");
    assert_int_equal(fake->node[1].gets, 2);  /* the map still names B */
    assert_int_equal(fake->node[0].gets, 2);
    assert_int_equal(fake->node[0].slots_asked + fake->node[1].slots_asked, asked);
    redisroute_free(rr);
}

static void test_redirects_stop_after_a_few_hops(void **state)
{
    (void)state;
    struct redisroute *rr = opened();
    snprintf(fake->node[1].get_error, sizeof(fake->node[1].get_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[0].port);
    snprintf(fake->node[0].get_error, sizeof(fake->node[0].get_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[1].port);
    assert_non_null(strstr(get(rr, "foo"), "(error) ASK"));
    assert_int_equal(fake->node[0].gets + fake->node[1].gets, 1 + SLOTMAP_MAX_REDIRECTS);
    redisroute_free(rr);
}

static void test_noscript_loads_the_script_on_that_node(void **state)
{
    (void)state;
    struct redisroute *rr = opened();
    const struct luascript s = { .name = "fake", .body = "return 1", .body_len = 8,
                                 .sha = "0000000000000000000000000000000000000000" };
    const char *foo[] = { "foo" }, *bar[] = { "bar" };
    char err[128];
    redisReply *r = redisroute_script(rr, &s, 1, foo, 0, NULL, err, sizeof(err));
    assert_non_null(r);
    assert_string_equal(r->str, "B:foo");
    freeReplyObject(r);
    assert_int_equal(fake->node[1].loads, 1);
    assert_int_equal(fake->node[1].evals, 2);
    assert_int_equal(fake->node[0].loads, 0);
    /* scripts are cached per node: A needs its own load */
    r = redisroute_script(rr, &s, 1, bar, 0, NULL, err, sizeof(err));
    assert_string_equal(r->str, "A:bar");
    freeReplyObject(r);
    assert_int_equal(fake->node[0].loads, 1);
    redisroute_free(rr);
}

/* The serving process moves node i to a new address, its old one gone. */
static void move_node(int i)
{
    int asked = ++fake->node[i].moves_asked;
    for (int waited = 0; fake->node[i].moves < asked; waited++) {
        assert_true(waited < 2000);
        nanosleep(&(struct timespec){ .tv_nsec = 1000 * 1000 }, NULL);
    }
}

#define CHURN 40  /* more node addresses than SLOTMAP_MAX_NODES */

static void test_masters_replaced_at_new_addresses_keep_being_found(void **state)
{
    (void)state;
    struct redisroute *rr = opened();
    assert_string_equal(get(rr, "foo"), "B:foo");
    for (int round = 0; round < CHURN; round++) {
        move_node(1);
        /* The command that meets the dead address fails (it may have run); the next one
         * reloads the map and reaches B where it is now. */
        const char *got = get(rr, "foo");
        if (strcmp(got, "B:foo") != 0)
            got = get(rr, "foo");
        if (strcmp(got, "B:foo") != 0)
            fail_msg("round %d (B at its %dth address): %s", round, round + 2, got);
    }
    assert_string_equal(get(rr, "bar"), "A:bar");
    /* The table holds the seeds (A, B's first address) and B's current address only. */
    char err[128], name[64], want[64];
    int b = redisroute_master_of(rr, "foo", 3, err, sizeof(err));
    assert_true(b >= 0);
    snprintf(want, sizeof(want), "127.0.0.1:%d", fake->node[1].port);
    assert_string_equal(redisroute_node_name(rr, b, name, sizeof(name)), want);
    int known = 0;
    for (int i = 0; i < SLOTMAP_MAX_NODES; i++)
        known += strcmp(redisroute_node_name(rr, i, name, sizeof(name)), "?") != 0;
    assert_int_equal(known, 3);
    assert_int_equal(redisroute_masters(rr, err, sizeof(err)), 2);
    redisroute_free(rr);
}

static void test_single_mode_asks_for_no_map(void **state)
{
    (void)state;
    cfg.redis_nodes = "";
    struct redisroute *rr = opened();
    assert_false(redisroute_cluster(rr));
    assert_string_equal(get(rr, "foo"), "A:foo");
    assert_string_equal(get(rr, "bar"), "A:bar");
    assert_int_equal(fake->node[0].slots_asked, 0);
    assert_int_equal(fake->node[1].gets, 0);
    redisroute_free(rr);
}

static void test_no_node_answering_is_an_error(void **state)
{
    (void)state;
    cfg.redis_nodes = "127.0.0.1:1";
    struct redisroute *rr = redisroute_new(&cfg, 2000);
    char err[256] = "";
    assert_int_equal(redisroute_open(rr, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "127.0.0.1:1"));
    assert_non_null(strstr(get(rr, "foo"), "(null)"));
    redisroute_free(rr);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);  /* as the binaries do: a node gone under a write is an error, not death */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commands_go_to_the_master_of_their_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moved_reloads_the_map_and_is_resent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ask_is_resent_once_behind_asking, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirects_stop_after_a_few_hops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noscript_loads_the_script_on_that_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_masters_replaced_at_new_addresses_keep_being_found, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_single_mode_asks_for_no_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_node_answering_is_an_error, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
