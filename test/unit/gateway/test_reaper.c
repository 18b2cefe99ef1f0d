/* reaper_keep_list: which nodes' reservations a gateway leaves alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_live_nodes_are_kept_and_own_never, reset),
        cmocka_unit_test_setup(test_a_dead_node_is_kept_for_a_grace_then_left, reset),
        cmocka_unit_test_setup(test_an_empty_list_is_empty, reset),
        cmocka_unit_test_setup(test_every_node_fits, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
