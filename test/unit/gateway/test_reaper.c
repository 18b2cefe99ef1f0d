/* reaper_keep_list: which nodes' reservations a gateway leaves alone. reaper_cutoff_ms and
 * queuedmarks_oldest_ms: how old a reservation must be to expire, never as old as an order
 * whose queued mark still waits for Redis. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "gateway/queuedmarks.h"
#include "gateway/reaper.h"

#define GRACE 5000

static bool live[REAPER_NODES];
static int64_t dead_since[REAPER_NODES];
static char keep[REAPER_KEEP_LEN];

static int reset(void **state)
{
    (void)state;
    memset(live, 0, sizeof(live));
    memset(dead_since, 0, sizeof(dead_since));
    memset(keep, 'x', sizeof(keep));
    return 0;
}

static bool kept(int node)
{
    char needle[16];
    snprintf(needle, sizeof(needle), ",%d,", node);
    return strstr(keep, needle) != NULL;
}

static void test_live_nodes_are_kept_and_own_never(void **state)
{
    (void)state;
    live[3] = live[7] = live[1023] = true;
    reaper_keep_list(live, dead_since, 7, 1000, GRACE, keep);
    assert_true(kept(3));
    assert_true(kept(1023));
    assert_false(kept(7));
}

static void test_a_dead_node_is_kept_for_a_grace_then_left(void **state)
{
    (void)state;
    live[3] = live[9] = true;
    reaper_keep_list(live, dead_since, 9, 1000, GRACE, keep);
    live[3] = false;  /* its lease lapsed */
    reaper_keep_list(live, dead_since, 9, 2000, GRACE, keep);
    assert_true(kept(3));
    reaper_keep_list(live, dead_since, 9, 2000 + GRACE - 1, GRACE, keep);
    assert_true(kept(3));
    reaper_keep_list(live, dead_since, 9, 2000 + GRACE, GRACE, keep);
    assert_false(kept(3));
    /* Back with a lease: kept again, and a later death starts a new grace. */
    live[3] = true;
    reaper_keep_list(live, dead_since, 9, 10000, GRACE, keep);
    assert_true(kept(3));
    live[3] = false;
    reaper_keep_list(live, dead_since, 9, 11000, GRACE, keep);
    assert_true(kept(3));
}

/* Nothing kept is the empty list ",", never what an earlier call wrote. */
static void test_an_empty_list_is_empty(void **state)
{
    (void)state;
    live[5] = true;
    reaper_keep_list(live, dead_since, -1, 1000, GRACE, keep);
    assert_true(kept(5));
    live[5] = false;
    reaper_keep_list(live, dead_since, -1, 1000 + 2 * GRACE, GRACE, keep);
    reaper_keep_list(live, dead_since, -1, 1000 + 4 * GRACE, GRACE, keep);
    assert_string_equal(keep, ",");
}

static void test_every_node_fits(void **state)
{
    (void)state;
    for (int n = 0; n < REAPER_NODES; n++)
        live[n] = true;
    reaper_keep_list(live, dead_since, 0, 1000, GRACE, keep);
    assert_false(kept(0));
    assert_true(kept(1) && kept(REAPER_NODES - 1));
    assert_true(strlen(keep) < sizeof(keep));
}

static void test_the_cutoff_is_the_timeout_while_marks_keep_up(void **state)
{
    (void)state;
    assert_int_equal(reaper_cutoff_ms(100000, 5000, INT64_MAX), 95000);
    /* a mark of an order 50 ms old on its way: nothing held back */
    assert_int_equal(reaper_cutoff_ms(100000, 5000, 99950), 95000);
}

static void test_no_reservation_from_the_oldest_unmarked_order_on_expires(void **state)
{
    (void)state;
    /* Marks refused for 8 s (a master that lost its replicas, then a failover): the
     * reservations from 1 s before the oldest such order on stay. */
    assert_int_equal(reaper_cutoff_ms(100000, 5000, 92000), 92000 - REAPER_MARK_SLACK_MS);
}

static const char *member(char *buf, size_t len, int64_t ms, int seq)
{
    uint64_t id = (uint64_t)(ms - ORDERNO_EPOCH_MS) << (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS);
    id |= (uint64_t)seq;
    snprintf(buf, len, "%llu-7|42", (unsigned long long)id);
    return buf;
}

static void test_the_oldest_unwritten_mark_is_found(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.queued_mark_interval_ms = 5;
    /* The loop never runs: the marks stay buffered, as while Redis refuses them. */
    struct queuedmarks *m = queuedmarks_new(base, &cfg, NULL, NULL);
    assert_non_null(m);
    assert_true(queuedmarks_oldest_ms(m) == INT64_MAX);
    char buf[64];
    int64_t t0 = 1796589000000LL;
    queuedmarks_add(m, 7, 0, member(buf, sizeof(buf), t0 + 300, 1));
    queuedmarks_add(m, 7, 0, member(buf, sizeof(buf), t0, 2));
    queuedmarks_add(m, 8, 0, member(buf, sizeof(buf), t0 + 100, 3));
    assert_true(queuedmarks_oldest_ms(m) == t0);
    queuedmarks_free(m);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_live_nodes_are_kept_and_own_never, reset),
        cmocka_unit_test_setup(test_a_dead_node_is_kept_for_a_grace_then_left, reset),
        cmocka_unit_test_setup(test_an_empty_list_is_empty, reset),
        cmocka_unit_test_setup(test_every_node_fits, reset),
        cmocka_unit_test(test_the_cutoff_is_the_timeout_while_marks_keep_up),
        cmocka_unit_test(test_no_reservation_from_the_oldest_unmarked_order_on_expires),
        cmocka_unit_test(test_the_oldest_unwritten_mark_is_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
