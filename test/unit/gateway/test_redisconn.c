/* redisconn, the gateway's router, on a real loop against fake Redis nodes (RESP over
 * TCP on 127.0.0.1): commands reach the master of their key's slot, a MOVED is resent to
 * the new owner and remembered, an ASK is resent once behind ASKING and forgotten, a
 * master that is gone fails only its own slots, and single mode never asks for a map. A
 * waited script (redisconn_eval_wait) gets the WAIT of the node that finally ran it, and
 * a connection has one WAIT outstanding at a time, shared by the calls sent meanwhile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/slotmap.h"
#include "gateway/redisconn.h"
#include "../fakeredis.h"
#include "../unitloop.h"

static struct event_base *base;
static struct fakeredis nodes_state;

/* "foo" is slot 12182, "bar" 5061 (CLUSTER KEYSLOT) */
#define SLOT_FOO 12182

/* ---- the loop ------------------------------------------------------------------------ */

/* Runs the loop until done() or 3 s. */
static bool run_until(bool (*done)(void *), void *arg)
{
    return unitloop_run_until(base, done, arg, 3);
}

static bool is_ready(void *rc) { return redisconn_ready(rc); }

struct answer {
    bool done;
    bool null;
    char text[64];
};

static void on_answer(redisReply *reply, void *privdata)
{
    struct answer *a = privdata;
    a->done = true;
    a->null = reply == NULL;
    if (reply)
        snprintf(a->text, sizeof(a->text), "%s", reply->str ? reply->str : "");
}

static bool answered(void *a) { return ((struct answer *)a)->done; }

static struct answer get(struct redisconn *rc, const char *key)
{
    struct answer a = { 0 };
    const char *argv[] = { "GET", key };
    assert_int_equal(redisconn_command_argv(rc, 2, argv, NULL, on_answer, &a), 0);
    assert_true(run_until(answered, &a));
    return a;
}

/* ---- set-up -------------------------------------------------------------------------- */

static struct config cfg;
static struct luascript_set scripts;
static char nodes_list[64];

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    assert_int_equal(fakeredis_bind(&nodes_state), 0);
    assert_int_equal(fakeredis_serve(base), 0);
        memset(&cfg, 0, sizeof(cfg));
    snprintf(nodes_list, sizeof(nodes_list), "127.0.0.1:%d,127.0.0.1:%d", fake->node[0].port,
             fake->node[1].port);
    cfg.redis_nodes = nodes_list;
    cfg.redis_host = "127.0.0.1";
    cfg.redis_port = fake->node[0].port;
    cfg.redis_timeout_ms = 1000;
    cfg.redis_reconnect_min_ms = 50;
    cfg.redis_reconnect_max_ms = 100;
    cfg.redis_cluster_refresh_ms = 60000;  /* only the triggered reloads, in these tests */
    cfg.redis_wait_replicas = 1;
    cfg.redis_wait_timeout_ms = 100;
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        scripts.scripts[i].name = "fake";
        scripts.scripts[i].body = "return 1";
        scripts.scripts[i].body_len = 8;
        memset(scripts.scripts[i].sha, '0', 40);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fakeredis_stop(0);
    fakeredis_stop(1);
    event_base_free(base);
    return 0;
}

static struct redisconn *connected(void)
{
    struct redisconn *rc = redisconn_new(base, &cfg, &scripts);
    assert_non_null(rc);
    assert_true(run_until(is_ready, rc));
    return rc;
}

/* ---- the tests ----------------------------------------------------------------------- */

static void test_commands_go_to_the_master_of_their_slot(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    assert_true(fake->node[0].slots_asked + fake->node[1].slots_asked >= 1);
    assert_string_equal(get(rc, "foo").text, "B:foo");
    assert_string_equal(get(rc, "bar").text, "A:bar");
    assert_string_equal(get(rc, "seckill:stock:{foo}").text, "B:seckill:stock:{foo}");
    assert_int_equal(fake->node[0].gets, 1);
    assert_int_equal(fake->node[1].gets, 2);
    redisconn_free(rc);
}

static void test_moved_is_resent_to_the_new_owner_and_remembered(void **state)
{
    (void)state;
    fake->owner[1] = 0;  /* the map says A serves every slot */
    struct redisconn *rc = connected();
    /* the slot of foo has moved to B, and the cluster's map says so from now on */
    snprintf(fake->node[0].get_error, sizeof(fake->node[0].get_error), "MOVED %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[1].port);
    fake->owner[1] = 1;
    struct answer a = get(rc, "foo");
    assert_false(a.null);
    assert_string_equal(a.text, "B:foo");
    assert_int_equal(fake->node[0].gets, 1);
    /* the next one goes straight to B */
    assert_string_equal(get(rc, "foo").text, "B:foo");
    assert_int_equal(fake->node[0].gets, 1);
    assert_int_equal(fake->node[1].gets, 2);
    redisconn_free(rc);
}

static void test_ask_is_resent_once_behind_asking_and_forgotten(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    /* foo's slot (B's) is migrating to A: B answers ASK, A serves it only after ASKING */
    snprintf(fake->node[1].get_error, sizeof(fake->node[1].get_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[0].port);
    fake->node[0].needs_asking = true;
    assert_string_equal(get(rc, "foo").text, "A:foo");
    assert_int_equal(fake->node[1].gets, 1);
    assert_int_equal(fake->node[0].gets, 1);
    /* the map still names B */
    get(rc, "foo");
    assert_int_equal(fake->node[1].gets, 2);
    redisconn_free(rc);
}

static void test_redirects_stop_after_a_few_hops(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    /* A and B send each other foo for ever: the caller gets the last redirect, not a hang */
    snprintf(fake->node[1].get_error, sizeof(fake->node[1].get_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[0].port);
    snprintf(fake->node[0].get_error, sizeof(fake->node[0].get_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[1].port);
    struct answer a = get(rc, "foo");
    assert_false(a.null);
    assert_non_null(strstr(a.text, "ASK"));
    assert_int_equal(fake->node[0].gets + fake->node[1].gets, 1 + SLOTMAP_MAX_REDIRECTS);
    redisconn_free(rc);
}

static void test_a_master_gone_fails_only_its_slots(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "foo").text, "B:foo");
    fakeredis_stop(1);
    /* B's connection is noticed lost on the loop: until then a command may still go out
     * and fail (NULL); from then on a send to B is refused at once */
    const char *foo[] = { "GET", "foo" };
    struct answer a = { 0 };
    int sent = 0;
    for (int i = 0; i < 100 && (sent = redisconn_command_argv(rc, 2, foo, NULL, on_answer, &a)) == 0; i++) {
        assert_true(run_until(answered, &a));
        assert_true(a.null);
        a.done = false;
    }
    assert_int_equal(sent, -1);
    assert_string_equal(get(rc, "bar").text, "A:bar");
    assert_true(redisconn_ready(rc));
    redisconn_free(rc);
}

/* A master cut off from the other masters says CLUSTERDOWN once it notices, while its own
 * CLUSTER SLOTS still names itself; the majority has promoted its replica meanwhile. The
 * router asks another node for the map and follows it: the slot is served again before
 * the partition heals, not after. (A is node 0 of the map: the first the router asks.) */
static void test_a_minority_master_is_not_asked_for_the_map(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "bar").text, "A:bar");
    fake->node[0].minority = true;
    fake->node[0].minority_owner[0] = 0;
    fake->node[0].minority_owner[1] = 1;
    snprintf(fake->node[0].get_error, sizeof(fake->node[0].get_error), "CLUSTERDOWN The cluster is down");
    fake->owner[0] = 1;  /* the majority's map: B serves A's slots */
    int asked_b = fake->node[1].slots_asked;
    struct answer a = get(rc, "bar");
    assert_false(a.null);
    for (int i = 0; i < 20 && strcmp(a.text, "B:bar") != 0; i++) {
        unitloop_run_for(base, 150);  /* past the triggered reloads' spacing */
        a = get(rc, "bar");
    }
    assert_string_equal(a.text, "B:bar");
    assert_true(fake->node[1].slots_asked > asked_b);
    redisconn_free(rc);
}

static void test_single_mode_asks_for_no_map(void **state)
{
    (void)state;
    cfg.redis_nodes = "";
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "foo").text, "A:foo");
    assert_string_equal(get(rc, "bar").text, "A:bar");
    assert_int_equal(fake->node[0].slots_asked, 0);
    assert_null(fake->node[1].conn);
    redisconn_free(rc);
}

/* ---- WAIT after a script ---------------------------------------------------------- */

struct waited {
    bool done;
    bool null;
    long long replicas;
    char text[64];
};

static void on_waited(redisReply *reply, long long replicas, void *privdata)
{
    struct waited *w = privdata;
    w->done = true;
    w->null = reply == NULL;
    w->replicas = replicas;
    if (reply)
        snprintf(w->text, sizeof(w->text), "%s", reply->str ? reply->str : "");
}

static bool waited_done(void *w) { return ((struct waited *)w)->done; }

static struct waited eval_waited(struct redisconn *rc, const char *key)
{
    struct waited w = { 0 };
    const char *argv[] = { key };
    assert_int_equal(redisconn_eval_wait(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &w), 0);
    assert_true(run_until(waited_done, &w));
    return w;
}

static void test_wait_counts_the_replicas_of_the_node_that_ran_the_script(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    fake->node[0].wait_acks = 5;
    fake->node[1].wait_acks = 1;
    struct waited w = eval_waited(rc, "foo");
    assert_false(w.null);
    assert_string_equal(w.text, "B:foo");
    assert_int_equal(w.replicas, 1);
    assert_int_equal(fake->node[1].waits, 1);
    assert_int_equal(fake->node[1].evals_run_before_wait, 1);
    assert_int_equal(fake->node[0].waits, 0);
    /* a shortfall reaches the caller with the script's answer */
    fake->node[1].wait_acks = 0;
    w = eval_waited(rc, "foo");
    assert_string_equal(w.text, "B:foo");
    assert_int_equal(w.replicas, 0);
    redisconn_free(rc);
}

static void test_wait_follows_a_moved_script_to_its_new_master(void **state)
{
    (void)state;
    fake->owner[1] = 0;  /* the map says A serves every slot */
    struct redisconn *rc = connected();
    snprintf(fake->node[0].eval_error, sizeof(fake->node[0].eval_error), "MOVED %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[1].port);
    fake->owner[1] = 1;
    fake->node[0].wait_acks = 1;  /* A's replicas hold A's writes: not the script's */
    fake->node[1].wait_acks = 0;
    struct waited w = eval_waited(rc, "foo");
    assert_string_equal(w.text, "B:foo");
    assert_int_equal(w.replicas, 0);
    assert_int_equal(fake->node[1].waits, 1);
    assert_int_equal(fake->node[1].evals_run_before_wait, 1);
    redisconn_free(rc);
}

static void test_wait_follows_an_asked_script_to_the_importing_node(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    /* foo's slot (B's) is migrating to A: the script runs on A, the map still names B */
    snprintf(fake->node[1].eval_error, sizeof(fake->node[1].eval_error), "ASK %d 127.0.0.1:%d", SLOT_FOO,
             fake->node[0].port);
    fake->node[0].wait_acks = 1;
    fake->node[1].wait_acks = 0;
    struct waited w = eval_waited(rc, "foo");
    assert_string_equal(w.text, "A:foo");
    assert_int_equal(w.replicas, 1);
    assert_int_equal(fake->node[0].waits, 1);
    assert_int_equal(fake->node[0].evals_run_before_wait, 1);
    redisconn_free(rc);
}

static void test_wait_overtaken_by_a_noscript_retry_is_sent_again(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    /* B forgot its scripts: the WAIT pipelined behind the NOSCRIPT answer comes before the
     * script is loaded and run again, so it covers nothing of it */
    assert_string_equal(get(rc, "foo").text, "B:foo");
    fake->node[1].loaded = false;
    fake->node[1].wait_acks = 1;
    struct waited w = eval_waited(rc, "foo");
    assert_string_equal(w.text, "B:foo");
    assert_int_equal(w.replicas, 1);
    assert_int_equal(fake->node[1].waits, 2);
    assert_int_equal(fake->node[1].evals_run_before_wait, 1);
    redisconn_free(rc);
}

#define MANY_CALLS 20

struct many {
    struct waited w[MANY_CALLS];
};

static bool many_done(void *arg)
{
    struct many *m = arg;
    for (int i = 0; i < MANY_CALLS; i++)
        if (!m->w[i].done)
            return false;
    return true;
}

/* MANY_CALLS waited scripts sent at once, on the loop until every one is answered. */
static void eval_many(struct redisconn *rc, struct many *m)
{
    memset(m, 0, sizeof(*m));
    const char *argv[] = { "foo" };
    for (int i = 0; i < MANY_CALLS; i++)
        assert_int_equal(redisconn_eval_wait(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &m->w[i]),
                         0);
    assert_true(run_until(many_done, m));
}

static void test_calls_sent_while_a_wait_is_out_share_the_next_one(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    fake->node[1].wait_acks = 1;
    fake->node[1].wait_delay_ms = 50;
    struct many m;
    eval_many(rc, &m);
    for (int i = 0; i < MANY_CALLS; i++) {
        assert_string_equal(m.w[i].text, "B:foo");
        assert_int_equal(m.w[i].replicas, 1);
    }
    /* the first call's WAIT went out with it; the other calls were sent while it blocked
     * the connection, and one WAIT after their scripts covered them all */
    assert_int_equal(fake->node[1].waits, 2);
    assert_int_equal(fake->node[1].evals_run_before_wait, MANY_CALLS);
    redisconn_free(rc);
}

/* Two calls under one WAIT; the first one's callback sends a third waited call to the
 * same node at once, as the rebalance does (a view's answer sends the 'out'). The WAIT
 * that callback makes go out must not drop the second call, nor the third. */
struct chained {
    struct redisconn *rc;
    struct waited first, second, third;
};

static void on_first_then_send(redisReply *reply, long long replicas, void *privdata)
{
    struct chained *c = privdata;
    on_waited(reply, replicas, &c->first);
    const char *argv[] = { "foo" };
    assert_int_equal(redisconn_eval_wait(c->rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &c->third),
                     0);
}

static bool all_three(void *arg)
{
    struct chained *c = arg;
    return c->first.done && c->second.done && c->third.done;
}

static void test_a_waited_call_sent_from_a_waited_callback_loses_no_call(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    fake->node[1].wait_acks = 1;
    struct chained c = { .rc = rc };
    const char *argv[] = { "foo" };
    assert_int_equal(redisconn_eval_wait(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_first_then_send, &c), 0);
    assert_int_equal(redisconn_eval_wait(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &c.second), 0);
    assert_true(run_until(all_three, &c));
    assert_string_equal(c.second.text, "B:foo");
    assert_int_equal(c.second.replicas, 1);
    assert_string_equal(c.third.text, "B:foo");
    assert_int_equal(c.third.replicas, 1);
    redisconn_free(rc);
}

/* redisconn_eval_replicated: the WAIT only when redis.wait-replicas asks for one. */
static void test_replicated_waits_only_when_replicas_are_asked_for(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    fake->node[1].wait_acks = 1;
    const char *argv[] = { "foo" };
    struct waited w = { 0 };
    assert_int_equal(redisconn_eval_replicated(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &w), 0);
    assert_true(run_until(waited_done, &w));
    assert_string_equal(w.text, "B:foo");
    assert_int_equal(w.replicas, 1);
    assert_int_equal(fake->node[1].waits, 1);
    cfg.redis_wait_replicas = 0;
    struct waited u = { 0 };
    assert_int_equal(redisconn_eval_replicated(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &u), 0);
    assert_true(run_until(waited_done, &u));
    assert_string_equal(u.text, "B:foo");
    assert_true(u.replicas == REDISCONN_UNWAITED);
    assert_int_equal(fake->node[1].waits, 1);
    redisconn_free(rc);
}

static void test_a_late_replica_costs_one_wait_timeout_not_one_per_call(void **state)
{
    (void)state;
    cfg.redis_timeout_ms = 300;
    struct redisconn *rc = connected();
    /* every WAIT times out on a replica that does not acknowledge: one per call, back to
     * back, would hold the last script far past redis.timeout-ms and lose the connection */
    fake->node[1].wait_acks = 0;
    fake->node[1].wait_delay_ms = 100;
    struct many m;
    eval_many(rc, &m);
    for (int i = 0; i < MANY_CALLS; i++) {
        assert_false(m.w[i].null);
        assert_string_equal(m.w[i].text, "B:foo");
        assert_int_equal(m.w[i].replicas, 0);
    }
    assert_int_equal(redisconn_reconnects(rc), 0);
    redisconn_free(rc);
}

static void test_a_gateway_that_did_not_run_does_not_blame_redis(void **state)
{
    (void)state;
    cfg.redis_timeout_ms = 200;
    struct redisconn *rc = connected();
    struct answer a = { 0 };
    const char *argv[] = { "GET", "foo" };
    assert_int_equal(redisconn_command_argv(rc, 2, argv, NULL, on_answer, &a), 0);
    /* The process does not get to its loop for longer than redis.timeout-ms (the kernel
     * runs others): the command is still unwritten when the deadline check runs. */
    nanosleep(&(struct timespec){ .tv_nsec = 500 * 1000 * 1000 }, NULL);
    assert_true(run_until(answered, &a));
    assert_false(a.null);
    assert_string_equal(a.text, "B:foo");
    assert_int_equal(redisconn_reconnects(rc), 0);
    redisconn_free(rc);
}

/* ---- masters replaced at new addresses ------------------------------------------------ */

struct foo_at_b {
    struct redisconn *rc;
    struct answer a;
    bool sent;
};

/* GET foo until B answers it: a send refused (no live master) or failed (the connection
 * lost under it) is tried again, as a client retries a 503. */
static bool foo_answered_by_b(void *arg)
{
    struct foo_at_b *f = arg;
    if (f->sent && !f->a.done)
        return false;
    if (f->sent && !f->a.null && strcmp(f->a.text, "B:foo") == 0)
        return true;
    const char *argv[] = { "GET", "foo" };
    f->a = (struct answer){ 0 };
    f->sent = redisconn_command_argv(f->rc, 2, argv, NULL, on_answer, &f->a) == 0;
    return false;
}

static int gone_accepts(void)
{
    int n = 0;
    for (int k = 1; k < fake->node[1].moves; k++)  /* old[0] is B's seed address */
        n += fake->node[1].old[k].accepts;
    return n;
}

/* Runs the loop for ms. */
static void run_for(int ms)
{
    unitloop_run_for(base, ms);
}

#define CHURN 40  /* more node addresses than SLOTMAP_MAX_NODES */

static void test_masters_replaced_at_new_addresses_keep_being_found(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "foo").text, "B:foo");
    for (int round = 0; round < CHURN; round++) {
        assert_int_equal(fakeredis_move(1, false), 0);
        struct foo_at_b f = { .rc = rc };
        if (!run_until(foo_answered_by_b, &f))
            fail_msg("round %d (B at its %dth address): foo not answered by B within 3 s", round, round + 2);
    }
    assert_string_equal(get(rc, "bar").text, "A:bar");
    /* The nodes that left the map are let go: once a connect already under way has
     * landed, nothing connects to their addresses again, though a node that is down is
     * retried every 50-100 ms here (old[0], a seed, is, as every seed is). */
    run_for(200);
    int before = gone_accepts();
    run_for(600);
    assert_int_equal(gone_accepts(), before);
    assert_string_equal(get(rc, "foo").text, "B:foo");
    redisconn_free(rc);
}

static bool old_address_closed(void *arg)
{
    (void)arg;
    return fake->node[1].old[1].closed_by_client;
}

static void test_a_node_that_leaves_the_map_is_closed_once_its_commands_are_answered(void **state)
{
    (void)state;
    cfg.redis_cluster_refresh_ms = 100;
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "foo").text, "B:foo");
    /* B moves to a second address (its first is a seed, kept in the table), then to a
     * third while a script and its WAIT are still out on the second: the map reloaded
     * meanwhile (every 100 ms) no longer names the second */
    assert_int_equal(fakeredis_move(1, false), 0);
    struct foo_at_b f = { .rc = rc };
    assert_true(run_until(foo_answered_by_b, &f));
    fake->node[1].wait_acks = 1;
    fake->node[1].wait_delay_ms = 600;
    struct waited w = { 0 };
    const char *argv[] = { "foo" };
    assert_int_equal(redisconn_eval_wait(rc, LUASCRIPT_EXECUTE, 1, 0, argv, NULL, on_waited, &w), 0);
    assert_int_equal(fakeredis_move(1, true), 0);
    assert_true(run_until(waited_done, &w));
    assert_false(w.null);
    assert_string_equal(w.text, "B:foo");
    assert_int_equal(w.replicas, 1);
    assert_true(run_until(old_address_closed, NULL));
    struct answer a = get(rc, "foo");
    assert_string_equal(a.text, "B:foo");
    assert_null(fake->node[1].old[1].conn);
    assert_non_null(fake->node[1].conn);  /* the answer came from B's third address */
    redisconn_free(rc);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);  /* as the binaries do: a node gone under a write is an error, not death */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commands_go_to_the_master_of_their_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moved_is_resent_to_the_new_owner_and_remembered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ask_is_resent_once_behind_asking_and_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirects_stop_after_a_few_hops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_master_gone_fails_only_its_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_mode_asks_for_no_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_minority_master_is_not_asked_for_the_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_masters_replaced_at_new_addresses_keep_being_found, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_node_that_leaves_the_map_is_closed_once_its_commands_are_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_counts_the_replicas_of_the_node_that_ran_the_script, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wait_follows_a_moved_script_to_its_new_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_follows_an_asked_script_to_the_importing_node, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wait_overtaken_by_a_noscript_retry_is_sent_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_calls_sent_while_a_wait_is_out_share_the_next_one, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_late_replica_costs_one_wait_timeout_not_one_per_call, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_waited_call_sent_from_a_waited_callback_loses_no_call, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_replicated_waits_only_when_replicas_are_asked_for, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_gateway_that_did_not_run_does_not_blame_redis, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
