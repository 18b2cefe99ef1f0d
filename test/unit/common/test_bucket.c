/* Buckets of a hot sale: a user's bucket is the same number wherever it is computed (these
 * values are the ones execute.lua and the tests' Python compute), bucket tags are chosen
 * so that the buckets' slots land on different masters, and recorded lists are read back
 * strictly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/bucket.h"
#include "common/redisslot.h"

static void test_user_bucket_vectors(void **state)
{
    (void)state;
    assert_int_equal(bucket_of_user(1, 3), 1);
    assert_int_equal(bucket_of_user(2, 3), 2);
    assert_int_equal(bucket_of_user(3, 3), 0);
    assert_int_equal(bucket_of_user(12345, 3), 0);
    assert_int_equal(bucket_of_user(12345, 16), 4);
    assert_int_equal(bucket_of_user(9007199254740991LL, 3), 1);
    assert_int_equal(bucket_of_user(9007199254740991LL, 16), 12);
    assert_int_equal(bucket_of_user_str("12345", 16), 4);
    /* one bucket: everyone in bucket 0, as without buckets */
    assert_int_equal(bucket_of_user(12345, 1), 0);
}

static void test_users_spread_over_buckets(void **state)
{
    (void)state;
    int seen[BUCKET_MAX] = { 0 };
    for (int64_t u = 1000; u < 1000 + 1600; u++) {
        int b = bucket_of_user(u, 16);
        assert_true(b >= 0 && b < 16);
        assert_int_equal(b, bucket_of_user(u, 16));  /* stable */
        seen[b]++;
    }
    for (int b = 0; b < 16; b++)
        assert_true(seen[b] >= 75 && seen[b] <= 125);  /* sequential ids spread evenly */
}

static void test_tag_format_and_validation(void **state)
{
    (void)state;
    char tag[BUCKET_TAG_LEN];
    assert_int_equal(bucket_tag(tag, sizeof(tag), 42, 0, 9), 0);
    assert_string_equal(tag, "42");
    assert_int_equal(bucket_tag(tag, sizeof(tag), 42, 2, 17), 0);
    assert_string_equal(tag, "42.2.17");
    assert_true(bucket_tag_valid("42", 42));
    assert_true(bucket_tag_valid("42.2.17", 42));
    assert_false(bucket_tag_valid("43.2.17", 42));
    assert_false(bucket_tag_valid("42.0.1", 42));    /* bucket 0 has no salt */
    assert_false(bucket_tag_valid("42.16.0", 42));   /* past BUCKET_MAX */
    assert_false(bucket_tag_valid("42.2", 42));
    assert_false(bucket_tag_valid("42.2.1x", 42));
    assert_false(bucket_tag_valid("42.02.1", 42));
    assert_false(bucket_tag_valid("", 42));
    assert_false(bucket_tag_valid("42}x{1", 42));
}

/* Three masters splitting the slots as redis-cli --cluster create does. */
static int three_masters(const char *tag, void *ctx)
{
    (void)ctx;
    int slot = redisslot_of(tag, strlen(tag));
    return slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2;
}

static int one_master(const char *tag, void *ctx)
{
    (void)tag;
    (void)ctx;
    return 0;
}

static void test_choose_puts_buckets_on_different_masters(void **state)
{
    (void)state;
    struct bucket_list list;
    assert_int_equal(bucket_choose(17, 3, 3, three_masters, NULL, &list), 0);
    assert_int_equal(list.count, 3);
    assert_string_equal(list.tag[0], "17");
    int m0 = three_masters(list.tag[0], NULL), m1 = three_masters(list.tag[1], NULL),
        m2 = three_masters(list.tag[2], NULL);
    assert_true(m0 != m1 && m0 != m2 && m1 != m2);
    assert_true(bucket_tag_valid(list.tag[1], 17) && bucket_tag_valid(list.tag[2], 17));
    /* the smallest salt that does it: salt - 1 (if any) landed on a master already used */
    for (int b = 1; b < 3; b++) {
        const char *dot = strrchr(list.tag[b], '.');
        int salt = atoi(dot + 1);
        if (salt > 0) {
            char earlier[BUCKET_TAG_LEN];
            bucket_tag(earlier, sizeof(earlier), 17, b, salt - 1);
            int m = three_masters(earlier, NULL);
            int used = 0;
            for (int i = 0; i < b; i++)
                used += three_masters(list.tag[i], NULL) == m;
            assert_true(used > 0);
        }
    }
}

static void test_choose_with_more_buckets_than_masters(void **state)
{
    (void)state;
    struct bucket_list list;
    assert_int_equal(bucket_choose(5, 5, 3, three_masters, NULL, &list), 0);
    assert_int_equal(list.count, 5);
    int masters[3] = { 0 };
    for (int b = 0; b < 3; b++)
        masters[three_masters(list.tag[b], NULL)]++;
    assert_int_equal(masters[0] * masters[1] * masters[2], 1);
    assert_string_equal(list.tag[3], "5.3.0");
    assert_string_equal(list.tag[4], "5.4.0");
    /* a single Redis: every bucket salt 0 */
    assert_int_equal(bucket_choose(5, 3, 1, one_master, NULL, &list), 0);
    assert_string_equal(list.tag[1], "5.1.0");
    assert_string_equal(list.tag[2], "5.2.0");
}

static void test_choose_refuses_bad_counts(void **state)
{
    (void)state;
    struct bucket_list list;
    assert_int_equal(bucket_choose(5, 0, 3, three_masters, NULL, &list), -1);
    assert_int_equal(bucket_choose(5, BUCKET_MAX + 1, 3, three_masters, NULL, &list), -1);
    assert_int_equal(bucket_choose(5, 1, 3, three_masters, NULL, &list), 0);
    assert_int_equal(list.count, 1);
    assert_string_equal(list.tag[0], "5");
}

static void test_list_round_trip_and_strict_parse(void **state)
{
    (void)state;
    struct bucket_list list, back;
    char text[BUCKET_LIST_LEN];
    assert_int_equal(bucket_choose(99, 4, 3, three_masters, NULL, &list), 0);
    assert_int_equal(bucket_list_format(&list, text, sizeof(text)), 0);
    assert_int_equal(bucket_list_parse(text, 99, &back), 0);
    assert_int_equal(back.count, 4);
    for (int b = 0; b < 4; b++)
        assert_string_equal(back.tag[b], list.tag[b]);
    /* one bucket is recorded as "" and "" reads as one bucket */
    bucket_list_single(&list, 99);
    assert_int_equal(bucket_list_format(&list, text, sizeof(text)), 0);
    assert_string_equal(text, "");
    assert_int_equal(bucket_list_parse("", 99, &back), 0);
    assert_int_equal(back.count, 1);
    assert_string_equal(back.tag[0], "99");
    /* refused: another activity's tag, out of order, an empty part */
    assert_int_equal(bucket_list_parse("99,98.1.0", 99, &back), -1);
    assert_int_equal(bucket_list_parse("99,99.2.0", 99, &back), -1);
    assert_int_equal(bucket_list_parse("99.1.0,99", 99, &back), -1);
    assert_int_equal(bucket_list_parse("99,,99.2.0", 99, &back), -1);
    assert_int_equal(bucket_list_parse("99,99.1.3,", 99, &back), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_bucket_vectors),
        cmocka_unit_test(test_users_spread_over_buckets),
        cmocka_unit_test(test_tag_format_and_validation),
        cmocka_unit_test(test_choose_puts_buckets_on_different_masters),
        cmocka_unit_test(test_choose_with_more_buckets_than_masters),
        cmocka_unit_test(test_choose_refuses_bad_counts),
        cmocka_unit_test(test_list_round_trip_and_strict_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
