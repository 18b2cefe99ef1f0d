/* waiters: the registry of held long-poll requests (which request waits on which order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gateway/waiters.h"

static void make(struct waiter *w, uint64_t id, const char *tag)
{
    memset(w, 0, sizeof(*w));
    w->order_id = id;
    snprintf(w->order_no, sizeof(w->order_no), "%llu-7", (unsigned long long)id);
    snprintf(w->tag, sizeof(w->tag), "%s", tag);
}

static size_t chain_length(const struct waiters *ws, uint64_t id)
{
    size_t n = 0;
    for (struct waiter *w = waiters_find(ws, id); w; w = w->same)
        n++;
    return n;
}

static void test_find_and_remove(void **state)
{
    (void)state;
    struct waiters ws;
    waiters_init(&ws, 10);
    struct waiter a, b;
    make(&a, 101, "7");
    make(&b, 102, "7");
    assert_int_equal(waiters_add(&ws, &a), 0);
    assert_int_equal(waiters_add(&ws, &b), 0);
    assert_ptr_equal(waiters_find(&ws, 101), &a);
    assert_ptr_equal(waiters_find(&ws, 102), &b);
    assert_null(waiters_find(&ws, 103));
    assert_int_equal(waiters_count(&ws), 2);
    waiters_remove(&ws, &a);
    assert_null(waiters_find(&ws, 101));
    assert_ptr_equal(waiters_find(&ws, 102), &b);
    waiters_remove(&ws, &a);  /* a second remove (answered, then its client gone) is harmless */
    assert_int_equal(waiters_count(&ws), 1);
    waiters_remove(&ws, &b);
    assert_int_equal(waiters_count(&ws), 0);
    assert_null(waiters_next(&ws, NULL));
    waiters_free(&ws);
}

/* Two requests on one order are both found, and either can leave first. */
static void test_same_order_chain(void **state)
{
    (void)state;
    struct waiters ws;
    waiters_init(&ws, 10);
    struct waiter w[3];
    for (int i = 0; i < 3; i++) {
        make(&w[i], 55, "7");
        assert_int_equal(waiters_add(&ws, &w[i]), 0);
    }
    assert_int_equal(chain_length(&ws, 55), 3);
    waiters_remove(&ws, &w[1]);  /* the middle of the chain */
    assert_int_equal(chain_length(&ws, 55), 2);
    waiters_remove(&ws, &w[2]);  /* the head (newest) */
    assert_int_equal(chain_length(&ws, 55), 1);
    assert_ptr_equal(waiters_find(&ws, 55), &w[0]);
    waiters_remove(&ws, &w[0]);
    assert_null(waiters_find(&ws, 55));
    waiters_free(&ws);
}

/* http.max-waiting: the one beyond is refused and not registered; a place freed is
 * taken again. */
static void test_bounded(void **state)
{
    (void)state;
    struct waiters ws;
    waiters_init(&ws, 2);
    struct waiter w[3];
    for (int i = 0; i < 3; i++)
        make(&w[i], (uint64_t)(200 + i), "7");
    assert_int_equal(waiters_add(&ws, &w[0]), 0);
    assert_false(waiters_full(&ws));
    assert_int_equal(waiters_add(&ws, &w[1]), 0);
    assert_true(waiters_full(&ws));
    assert_int_equal(waiters_add(&ws, &w[2]), -1);
    assert_false(w[2].registered);
    assert_null(waiters_find(&ws, 202));
    assert_int_equal(waiters_count(&ws), 2);
    waiters_remove(&ws, &w[0]);
    assert_int_equal(waiters_add(&ws, &w[2]), 0);
    assert_ptr_equal(waiters_find(&ws, 202), &w[2]);
    waiters_remove(&ws, &w[1]);
    waiters_remove(&ws, &w[2]);
    waiters_free(&ws);
}

/* Zero is no order (the map's empty key), and a waiter is registered once only. */
static void test_refuses_bad_entries(void **state)
{
    (void)state;
    struct waiters ws;
    waiters_init(&ws, 5);
    struct waiter w;
    make(&w, 0, "7");
    assert_int_equal(waiters_add(&ws, &w), -1);
    make(&w, 9, "7");
    assert_int_equal(waiters_add(&ws, &w), 0);
    assert_int_equal(waiters_add(&ws, &w), -1);
    assert_int_equal(waiters_count(&ws), 1);
    waiters_remove(&ws, &w);
    waiters_free(&ws);
}

/* The walk of all (a channel resubscribed, shutdown) sees every waiter once, oldest first,
 * and survives removing the one it stands on when the next was taken first. */
static void test_walk_all(void **state)
{
    (void)state;
    struct waiters ws;
    waiters_init(&ws, 100);
    struct waiter w[50];
    for (int i = 0; i < 50; i++) {
        make(&w[i], (uint64_t)(1000 + i % 20), i % 2 ? "7" : "7.1.2");
        assert_int_equal(waiters_add(&ws, &w[i]), 0);
    }
    int seen = 0, odd = 0;
    struct waiter *next;
    for (struct waiter *p = waiters_next(&ws, NULL); p; p = next) {
        next = waiters_next(&ws, p);
        assert_ptr_equal(p, &w[seen]);
        seen++;
        if (strcmp(p->tag, "7") == 0) {
            odd++;
            waiters_remove(&ws, p);
        }
    }
    assert_int_equal(seen, 50);
    assert_int_equal(odd, 25);
    assert_int_equal(waiters_count(&ws), 25);
    for (uint64_t id = 1000; id < 1020; id++)
        for (struct waiter *p = waiters_find(&ws, id); p; p = p->same)
            assert_string_equal(p->tag, "7.1.2");
    while ((next = waiters_next(&ws, NULL)) != NULL)
        waiters_remove(&ws, next);
    assert_int_equal(waiters_count(&ws), 0);
    for (uint64_t id = 1000; id < 1020; id++)
        assert_null(waiters_find(&ws, id));
    waiters_free(&ws);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_and_remove),
        cmocka_unit_test(test_same_order_chain),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_refuses_bad_entries),
        cmocka_unit_test(test_walk_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
