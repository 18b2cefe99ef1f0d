/* The stages of one execute request and the moves between them: a reservation is
 * delivered or rolled back (forgotten when its verdict was lost), a failed delivery is
 * rolled back unless its client was told 200 (promised: then it is delivered again, never
 * rolled back), and a rollback or a forgetting is final. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "gateway/executestage.h"

static void test_the_moves_of_the_protocol(void **state)
{
    (void)state;
    const struct {
        enum executestage from, to;
    } ok[] = {
        { EXECUTESTAGE_RESERVING, EXECUTESTAGE_DELIVERING },
        { EXECUTESTAGE_RESERVING, EXECUTESTAGE_ROLLING_BACK },
        { EXECUTESTAGE_RESERVING, EXECUTESTAGE_FORGETTING },
        { EXECUTESTAGE_DELIVERING, EXECUTESTAGE_PROMISED },
        { EXECUTESTAGE_DELIVERING, EXECUTESTAGE_ROLLING_BACK },
        { EXECUTESTAGE_PROMISED, EXECUTESTAGE_REDELIVERING },
        { EXECUTESTAGE_ROLLING_BACK, EXECUTESTAGE_ROLLING_BACK },
        { EXECUTESTAGE_REDELIVERING, EXECUTESTAGE_REDELIVERING },
    };
    int allowed = 0;
    for (int from = 0; from < EXECUTESTAGE_COUNT; from++)
        for (int to = 0; to < EXECUTESTAGE_COUNT; to++)
            allowed += executestage_may_move((enum executestage)from, (enum executestage)to);
    assert_int_equal(allowed, (int)(sizeof(ok) / sizeof(ok[0])));
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_true(executestage_may_move(ok[i].from, ok[i].to));
}

static void test_a_promised_order_is_never_rolled_back_and_a_rollback_is_final(void **state)
{
    (void)state;
    assert_false(executestage_may_move(EXECUTESTAGE_REDELIVERING, EXECUTESTAGE_ROLLING_BACK));
    assert_false(executestage_may_move(EXECUTESTAGE_PROMISED, EXECUTESTAGE_ROLLING_BACK));
    assert_false(executestage_may_move(EXECUTESTAGE_DELIVERING, EXECUTESTAGE_REDELIVERING));
    assert_false(executestage_may_move(EXECUTESTAGE_FORGETTING, EXECUTESTAGE_ROLLING_BACK));
    assert_false(executestage_may_move(EXECUTESTAGE_FORGETTING, EXECUTESTAGE_DELIVERING));
    assert_false(executestage_may_move(EXECUTESTAGE_DELIVERING, EXECUTESTAGE_FORGETTING));
    assert_false(executestage_may_move(EXECUTESTAGE_ROLLING_BACK, EXECUTESTAGE_DELIVERING));
    assert_false(executestage_may_move(EXECUTESTAGE_ROLLING_BACK, EXECUTESTAGE_REDELIVERING));
    assert_false(executestage_may_move(EXECUTESTAGE_DELIVERING, EXECUTESTAGE_RESERVING));
    assert_false(executestage_may_move(EXECUTESTAGE_RESERVING, EXECUTESTAGE_REDELIVERING));
}

static void test_move_changes_only_what_it_may(void **state)
{
    (void)state;
    enum executestage s = EXECUTESTAGE_RESERVING;
    assert_true(executestage_move(&s, EXECUTESTAGE_DELIVERING));
    assert_int_equal(s, EXECUTESTAGE_DELIVERING);
    assert_false(executestage_move(&s, EXECUTESTAGE_RESERVING));
    assert_int_equal(s, EXECUTESTAGE_DELIVERING);
    assert_false(executestage_move(&s, EXECUTESTAGE_COUNT));
    assert_string_equal(executestage_name(EXECUTESTAGE_ROLLING_BACK), "rolling back");
    assert_string_equal(executestage_name(EXECUTESTAGE_COUNT), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_moves_of_the_protocol),
        cmocka_unit_test(test_a_promised_order_is_never_rolled_back_and_a_rollback_is_final),
        cmocka_unit_test(test_move_changes_only_what_it_may),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
