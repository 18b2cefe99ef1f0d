/* The admin API's bearer check: only the configured token, in a well-formed header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "admin/adminauth.h"

static const char token[] = "0123456789abcdef0123456789abcdef";

static void test_the_token_passes(void **state)
{
    (void)state;
    assert_true(adminauth_allows("Bearer 0123456789abcdef0123456789abcdef", token));
    assert_true(adminauth_allows("bearer 0123456789abcdef0123456789abcdef", token));
    assert_true(adminauth_allows("BEARER  0123456789abcdef0123456789abcdef", token));
}

static void test_anything_else_is_refused(void **state)
{
    (void)state;
    assert_false(adminauth_allows(NULL, token));
    assert_false(adminauth_allows("", token));
    assert_false(adminauth_allows("Bearer", token));
    assert_false(adminauth_allows("Bearer ", token));
    assert_false(adminauth_allows("Basic 0123456789abcdef0123456789abcdef", token));
    assert_false(adminauth_allows("Bearer0123456789abcdef0123456789abcdef", token));
    /* a prefix, a longer token, one byte off */
    assert_false(adminauth_allows("Bearer 0123456789abcdef0123456789abcde", token));
    assert_false(adminauth_allows("Bearer 0123456789abcdef0123456789abcdef0", token));
    assert_false(adminauth_allows("Bearer 0123456789abcdef0123456789abcdeF", token));
    assert_false(adminauth_allows("Bearer 0123456789abcdef0123456789abcdef ", token));
    /* no token configured lets nobody in */
    assert_false(adminauth_allows("Bearer ", ""));
}

static void test_same(void **state)
{
    (void)state;
    assert_true(adminauth_same("", ""));
    assert_true(adminauth_same("abc", "abc"));
    assert_false(adminauth_same("abc", "abd"));
    assert_false(adminauth_same("abc", "ab"));
    assert_false(adminauth_same("", "a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_token_passes),
        cmocka_unit_test(test_anything_else_is_refused),
        cmocka_unit_test(test_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
