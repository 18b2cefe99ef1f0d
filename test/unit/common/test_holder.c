/* Holders: "<userId>" for slot 1, "<userId>#<slot>" above, one spelling per holding, and
 * everything else refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/holder.h"

static void test_round_trip(void **state)
{
    (void)state;
    const int64_t users[] = { 1, 42, 9007199254740991LL, INT64_MAX };
    for (size_t u = 0; u < sizeof(users) / sizeof(users[0]); u++)
        for (int slot = 1; slot <= HOLDER_MAX_SLOT; slot++) {
            char buf[HOLDER_LEN];
            assert_true(holder_format(buf, sizeof(buf), users[u], slot) > 0);
            int64_t user = 0;
            int back = 0;
            assert_int_equal(holder_parse(buf, &user, &back), 0);
            assert_true(user == users[u]);
            assert_int_equal(back, slot);
            assert_true((strchr(buf, '#') != NULL) == (slot > 1));
        }
}

static void test_slot_one_is_the_bare_id(void **state)
{
    (void)state;
    char buf[HOLDER_LEN];
    assert_int_equal(holder_format(buf, sizeof(buf), 1234, 1), 4);
    assert_string_equal(buf, "1234");
    assert_int_equal(holder_format(buf, sizeof(buf), 1234, 7), 6);
    assert_string_equal(buf, "1234#7");
}

static void test_refuses_what_is_not_a_holder(void **state)
{
    (void)state;
    const char *bad[] = { "", "#2", "12#", "12#1", "12#0", "12#02", "12#101", "12#1000", "12#2#3", "12 #2",
                          "-12", "012", "12#x", "9223372036854775808", "0#2", "12#2 " };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t user = 0;
        int slot = 0;
        if (holder_parse(bad[i], &user, &slot) == 0)
            fail_msg("'%s' parsed as user %lld slot %d", bad[i], (long long)user, slot);
    }
    char buf[HOLDER_LEN];
    assert_int_equal(holder_format(buf, sizeof(buf), 5, 0), -1);
    assert_int_equal(holder_format(buf, sizeof(buf), 5, HOLDER_MAX_SLOT + 1), -1);
    assert_int_equal(holder_format(buf, sizeof(buf), 0, 1), -1);
    assert_int_equal(holder_format(buf, 4, 12345, 1), -1);
}

static void test_parses_a_prefix(void **state)
{
    (void)state;
    const char *member = "77#3|rest";
    int64_t user = 0;
    int slot = 0;
    assert_int_equal(holder_parse_n(member, 4, &user, &slot), 0);
    assert_true(user == 77);
    assert_int_equal(slot, 3);
    assert_int_equal(holder_parse_n(member, 5, &user, &slot), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_slot_one_is_the_bare_id),
        cmocka_unit_test(test_refuses_what_is_not_a_holder),
        cmocka_unit_test(test_parses_a_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
