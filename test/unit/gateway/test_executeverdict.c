/* What each verdict of execute.lua makes the gateway do, and the one table of answer
 * statuses: every verdict the script can give is known, each refusal carries the status
 * and message clients have always seen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/executeverdict.h"
#include "gateway/reply.h"

static void test_refusals_keep_their_status_and_message(void **state)
{
    (void)state;
    const struct {
        const char *verdict;
        enum reply_status status;
        const char *message;
    } want[] = {
        { "DUPLICATE", REPLY_DUPLICATE, "you already hold an order for this activity" },
        { "NOT_STARTED", REPLY_NOT_STARTED, "the sale has not started" },
        { "ENDED", REPLY_ENDED, "the sale has ended" },
        { "CANCELLED", REPLY_CANCELLED, "the sale was cancelled" },
        { "INACTIVE", REPLY_INACTIVE, "the coupon of this sale is deactivated" },
        { "RATE_LIMITED", REPLY_RATE_LIMITED, "too many requests" },
        { "BLOCKED", REPLY_BLOCKED, "too many attempts, temporarily blocked" },
        { "TOKEN_USED", REPLY_FORBIDDEN, "purchase token already used" },
        { "NOT_FOUND", REPLY_NOT_FOUND, "no such activity" },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct executeverdict v = executeverdict_of(want[i].verdict);
        assert_int_equal(v.action, EXECUTEVERDICT_REFUSE);
        assert_int_equal(v.status, want[i].status);
        assert_string_equal(v.message ? v.message : reply_status_message(v.status), want[i].message);
        assert_true(reply_status_code(v.status) >= 400 && reply_status_code(v.status) < 500);
    }
}

static void test_what_each_verdict_carries(void **state)
{
    (void)state;
    assert_true(executeverdict_of("DUPLICATE").holder);
    assert_false(executeverdict_of("ENDED").holder);
    assert_true(executeverdict_of("RATE_LIMITED").retry_after);
    assert_true(executeverdict_of("BLOCKED").retry_after);
    assert_false(executeverdict_of("DUPLICATE").retry_after);
    assert_true(executeverdict_of("CANCELLED").cancelled);
    assert_false(executeverdict_of("ENDED").cancelled);
    assert_int_equal(executeverdict_of("OK").action, EXECUTEVERDICT_RESERVED);
    assert_int_equal(executeverdict_of("OUT_OF_STOCK").action, EXECUTEVERDICT_SOLD_OUT);
    struct executeverdict setup = executeverdict_of("WRONG_BUCKET");
    assert_int_equal(setup.action, EXECUTEVERDICT_SETUP);
    assert_int_equal(reply_status_code(setup.status), 503);
    struct executeverdict lost = executeverdict_of("GONE");
    assert_int_equal(lost.action, EXECUTEVERDICT_LOST);
    assert_int_equal(reply_status_code(lost.status), 503);
}

static void test_anything_else_is_unknown_and_a_503(void **state)
{
    (void)state;
    const char *odd[] = { NULL, "", "ok", "OK ", "SOLD" };
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        struct executeverdict v = executeverdict_of(odd[i]);
        assert_int_equal(v.action, EXECUTEVERDICT_UNKNOWN);
        assert_int_equal(reply_status_code(v.status), 503);
        assert_string_equal(v.message, "unexpected stock service answer");
    }
}

/* Every {'VERDICT' execute.lua returns: a verdict added there and forgotten here would be
 * answered 503 "unexpected" for good. */
static void test_every_verdict_of_execute_lua_is_known(void **state)
{
    (void)state;
    FILE *f = fopen(SK_LUA_DIR "/execute.lua", "r");
    assert_non_null(f);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof(line), f)) {
        for (char *p = strstr(line, "{'"); p; p = strstr(p + 1, "{'")) {
            char verdict[64];
            size_t n = 0;
            for (const char *q = p + 2; (isupper((unsigned char)*q) || *q == '_') &&
                 n + 1 < sizeof(verdict); q++)
                verdict[n++] = *q;
            verdict[n] = '\0';
            if (n == 0 || p[2 + n] != '\'')
                continue;
            found++;
            if (executeverdict_of(verdict).action == EXECUTEVERDICT_UNKNOWN)
                fail_msg("execute.lua answers %s, unknown to executeverdict.c", verdict);
        }
    }
    fclose(f);
    assert_true(found >= 13);
}

static void test_every_status_has_a_name_a_code_and_a_message(void **state)
{
    (void)state;
    for (int s = 0; s < REPLY_STATUS_COUNT; s++) {
        assert_true(strlen(reply_status_name((enum reply_status)s)) > 0);
        assert_true(reply_status_code((enum reply_status)s) >= 400);
        assert_true(strlen(reply_status_message((enum reply_status)s)) > 0);
    }
    assert_string_equal(reply_status_name(REPLY_OUT_OF_STOCK), "OUT_OF_STOCK");
    assert_int_equal(reply_status_code(REPLY_RATE_LIMITED), 429);
    assert_int_equal(reply_status_code(REPLY_UNAVAILABLE), 503);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals_keep_their_status_and_message),
        cmocka_unit_test(test_what_each_verdict_carries),
        cmocka_unit_test(test_anything_else_is_unknown_and_a_503),
        cmocka_unit_test(test_every_verdict_of_execute_lua_is_known),
        cmocka_unit_test(test_every_status_has_a_name_a_code_and_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
