/* Isolating the items MySQL refuses for good: which items a bisection sets aside given a
 * fake transaction that is refused whenever it holds a poisoned item (or crosses a
 * counter's cap), what it commits, in which order, and how many transactions it costs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "consumer/split.h"

#define MAX_ITEMS 5000

/* A fake database: items [lo, hi) commit together unless one of them is poisoned, or,
 * with a cap, unless the committed count would pass it (a CHECK on a counter); a write
 * may also fail transiently at a given call. */
struct fake {
    unsigned char poisoned[MAX_ITEMS];
    unsigned char committed[MAX_ITEMS];   /* how often each item was committed */
    unsigned char offender[MAX_ITEMS];
    size_t order[MAX_ITEMS];              /* items in the order they were committed */
    size_t order_count;
    size_t offender_count;
    size_t cap;                           /* 0: none */
    size_t total;                         /* committed items */
    size_t calls;
    size_t fail_at;                       /* the write call that fails transiently; 0: none */
    int offender_gives_up;
};

static enum split_outcome fake_write(void *ctx, size_t lo, size_t hi)
{
    struct fake *f = ctx;
    f->calls++;
    if (f->fail_at && f->calls == f->fail_at)
        return SPLIT_FAILED;
    for (size_t i = lo; i < hi; i++)
        if (f->poisoned[i])
            return SPLIT_REFUSED;
    if (f->cap && f->total + (hi - lo) > f->cap)
        return SPLIT_REFUSED;
    for (size_t i = lo; i < hi; i++) {
        f->committed[i]++;
        f->order[f->order_count++] = i;
    }
    f->total += hi - lo;
    return SPLIT_WRITTEN;
}

static int fake_offender(void *ctx, size_t i)
{
    struct fake *f = ctx;
    f->offender[i]++;
    f->offender_count++;
    return f->offender_gives_up ? -1 : 0;
}

static struct fake *fake_new(void)
{
    static struct fake f;
    memset(&f, 0, sizeof(f));
    return &f;
}

static size_t ceil_log2(size_t n)
{
    size_t bits = 0;
    while (((size_t)1 << bits) < n)
        bits++;
    return bits;
}

/* Every item exactly once either committed or an offender, offenders exactly the
 * poisoned ones, commits in item order. */
static void assert_partition(const struct fake *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(f->committed[i] + f->offender[i], 1);
        if (!f->cap)
            assert_int_equal(f->offender[i], f->poisoned[i]);
    }
    for (size_t i = 1; i < f->order_count; i++)
        assert_true(f->order[i - 1] < f->order[i]);
}

static void test_clean_batch_is_one_transaction(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    struct split_stats st;
    assert_int_equal(split_run(1000, fake_write, fake_offender, f, &st), 0);
    assert_int_equal(st.transactions, 1);
    assert_int_equal(st.offenders, 0);
    assert_partition(f, 1000);
}

static void test_empty_batch_writes_nothing(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    struct split_stats st;
    assert_int_equal(split_run(0, fake_write, fake_offender, f, &st), 0);
    assert_int_equal(f->calls, 0);
    assert_int_equal(st.transactions, 0);
}

static void test_single_offender_found(void **state)
{
    (void)state;
    static const size_t sizes[] = { 1, 2, 3, 7, 8, 9, 1000, 5000 };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        for (size_t bad = 0; bad < n; bad += (n > 50 ? n / 7 : 1)) {
            struct fake *f = fake_new();
            f->poisoned[bad] = 1;
            struct split_stats st;
            assert_int_equal(split_run(n, fake_write, fake_offender, f, &st), 0);
            assert_partition(f, n);
            assert_int_equal(st.offenders, 1);
            assert_int_equal(f->offender_count, 1);
            assert_true(st.transactions <= 1 + 2 * ceil_log2(n));
        }
    }
}

static void test_several_offenders_cost_k_log_n(void **state)
{
    (void)state;
    static const size_t bad[] = { 0, 17, 18, 999, 2500, 4999 };
    size_t n = 5000, k = sizeof(bad) / sizeof(bad[0]);
    struct fake *f = fake_new();
    for (size_t i = 0; i < k; i++)
        f->poisoned[bad[i]] = 1;
    struct split_stats st;
    assert_int_equal(split_run(n, fake_write, fake_offender, f, &st), 0);
    assert_partition(f, n);
    assert_int_equal(st.offenders, k);
    assert_int_equal(f->total, n - k);
    assert_int_equal(st.transactions, f->calls);
    assert_true(st.transactions <= 1 + 2 * k * ceil_log2(n));
}

static void test_all_poisoned(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    memset(f->poisoned, 1, 16);
    struct split_stats st;
    assert_int_equal(split_run(16, fake_write, fake_offender, f, &st), 0);
    assert_partition(f, 16);
    assert_int_equal(st.offenders, 16);
    assert_int_equal(f->total, 0);
    assert_int_equal(st.transactions, 31);   /* every node of the tree, once */
}

/* A counter with a CHECK (sold_count <= stock): no single item is bad, the batch is too
 * big by 2. Exactly the last two in order are refused, the rest committed. */
static void test_counter_cap_refuses_the_excess(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    f->cap = 4;
    struct split_stats st;
    assert_int_equal(split_run(6, fake_write, fake_offender, f, &st), 0);
    assert_partition(f, 6);
    assert_int_equal(f->total, 4);
    assert_int_equal(st.offenders, 2);
    assert_int_equal(f->offender[4], 1);
    assert_int_equal(f->offender[5], 1);
}

/* A transient failure mid-split stops at once, reports it, and names no further
 * offender; the caller's retry starts over. What committed before stays committed (a
 * retry replays it idempotently); the offenders found so far are the caller's to drop. */
static void test_transient_failure_mid_split_gives_up(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    f->poisoned[3] = 1;
    f->poisoned[12] = 1;
    f->fail_at = 6;
    struct split_stats st;
    assert_int_equal(split_run(16, fake_write, fake_offender, f, &st), -1);
    assert_int_equal(f->calls, 6);
    assert_int_equal(st.transactions, 6);
    assert_true(f->offender_count <= 1);
    for (size_t i = 0; i < 16; i++)
        assert_true(f->committed[i] <= 1);
}

static void test_offender_giving_up_stops(void **state)
{
    (void)state;
    struct fake *f = fake_new();
    f->poisoned[0] = 1;
    f->poisoned[7] = 1;
    f->offender_gives_up = 1;
    struct split_stats st;
    assert_int_equal(split_run(8, fake_write, fake_offender, f, &st), -1);
    assert_int_equal(f->offender_count, 1);
    assert_int_equal(f->total, 0);   /* stopped before the right half */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_batch_is_one_transaction),
        cmocka_unit_test(test_empty_batch_writes_nothing),
        cmocka_unit_test(test_single_offender_found),
        cmocka_unit_test(test_several_offenders_cost_k_log_n),
        cmocka_unit_test(test_all_poisoned),
        cmocka_unit_test(test_counter_cap_refuses_the_excess),
        cmocka_unit_test(test_transient_failure_mid_split_gives_up),
        cmocka_unit_test(test_offender_giving_up_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
