/* archive: the gateway's bounded memory of archived sales, and reading one from the
 * HGETALL of its activity hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gateway/archive.h"

/* An HGETALL reply of field/value pairs, built the way hiredis hands it over. */
struct fake_reply {
    redisReply top;
    redisReply items[16];
    redisReply *ptrs[16];
};

static const redisReply *hash_reply(struct fake_reply *f, const char *const *pairs, size_t n)
{
    memset(f, 0, sizeof(*f));
    f->top.type = REDIS_REPLY_ARRAY;
    f->top.elements = n;
    f->top.element = f->ptrs;
    for (size_t i = 0; i < n; i++) {
        f->items[i].type = REDIS_REPLY_STRING;
        f->items[i].str = (char *)pairs[i];
        f->items[i].len = strlen(pairs[i]);
        f->ptrs[i] = &f->items[i];
    }
    return &f->top;
}

static void test_parse(void **state)
{
    (void)state;
    struct fake_reply f;
    struct archive_sale sale;
    const char *live[] = { "name", "x", "start", "1", "end", "2", "status", "ACTIVE" };
    assert_int_equal(archive_parse(&sale, 7, hash_reply(&f, live, 8)), 0);
    assert_int_equal(archive_parse(&sale, 7, hash_reply(&f, live, 0)), 0);  /* no hash at all */

    const char *ended[] = { "status", "ACTIVE", "archived", "1765000000000", "stockLeft", "3" };
    assert_int_equal(archive_parse(&sale, 7, hash_reply(&f, ended, 6)), 1);
    assert_int_equal(sale.id, 7);
    assert_int_equal(sale.archived_ms, 1765000000000LL);
    assert_int_equal(sale.stock_left, 3);
    assert_false(sale.cancelled);

    /* No stockLeft recorded: nothing was left to record. */
    const char *cancelled[] = { "archived", "5", "status", "CANCELLED" };
    assert_int_equal(archive_parse(&sale, 8, hash_reply(&f, cancelled, 4)), 1);
    assert_int_equal(sale.stock_left, 0);
    assert_true(sale.cancelled);

    /* A malformed mark is no archive: the read's answer stands. */
    const char *bad[] = { "archived", "soon" };
    assert_int_equal(archive_parse(&sale, 8, hash_reply(&f, bad, 2)), 0);
    assert_int_equal(archive_parse(&sale, 8, NULL), -1);
    redisReply err = { .type = REDIS_REPLY_ERROR };
    assert_int_equal(archive_parse(&sale, 8, &err), -1);
}

static void test_bounded_and_least_recently_read_goes(void **state)
{
    (void)state;
    struct archive *ar = archive_new(NULL, NULL);
    assert_non_null(ar);
    for (int64_t id = 1; id <= ARCHIVE_CACHE_MAX; id++) {
        struct archive_sale s = { id, 100 + id, id % 3, false };
        archive_remember(ar, &s);
    }
    assert_int_equal(archive_count(ar), ARCHIVE_CACHE_MAX);
    assert_non_null(archive_find(ar, 1));  /* read: now the most recent */
    for (int64_t id = ARCHIVE_CACHE_MAX + 1; id <= 3 * ARCHIVE_CACHE_MAX; id++) {
        struct archive_sale s = { id, 100 + id, 0, false };
        archive_remember(ar, &s);
        assert_non_null(archive_find(ar, 1));  /* kept alive by its reads */
        assert_true(archive_count(ar) <= ARCHIVE_CACHE_MAX);
    }
    assert_int_equal(archive_count(ar), ARCHIVE_CACHE_MAX);
    assert_null(archive_find(ar, 2));
    const struct archive_sale *last = archive_find(ar, 3 * ARCHIVE_CACHE_MAX);
    assert_non_null(last);
    assert_int_equal(last->archived_ms, 100 + 3 * ARCHIVE_CACHE_MAX);

    /* Remembered again: one record, the newer values. */
    struct archive_sale again = { 1, 999, 4, true };
    archive_remember(ar, &again);
    assert_int_equal(archive_count(ar), ARCHIVE_CACHE_MAX);
    assert_int_equal(archive_find(ar, 1)->stock_left, 4);

    archive_forget(ar, 1);
    archive_forget(ar, 1);  /* gone already: nothing to do */
    assert_null(archive_find(ar, 1));
    assert_int_equal(archive_count(ar), ARCHIVE_CACHE_MAX - 1);
    archive_free(ar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_bounded_and_least_recently_read_goes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
