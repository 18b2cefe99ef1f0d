/* Which http.host values only this machine can reach: the start-up warning about an open
 * gateway (auth.mode=none) is said for every other one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/exposure.h"

static void test_loopback_addresses(void **state)
{
    (void)state;
    assert_true(exposure_loopback("127.0.0.1"));
    assert_true(exposure_loopback("127.255.255.254"));
    assert_true(exposure_loopback("127.0.0.2"));
    assert_true(exposure_loopback("::1"));
    assert_true(exposure_loopback("::ffff:127.0.0.1"));
}

static void test_reachable_addresses(void **state)
{
    (void)state;
    assert_false(exposure_loopback("0.0.0.0"));
    assert_false(exposure_loopback("::"));
    assert_false(exposure_loopback("10.0.0.5"));
    assert_false(exposure_loopback("128.0.0.1"));
    assert_false(exposure_loopback("126.255.255.255"));
    assert_false(exposure_loopback("::2"));
    assert_false(exposure_loopback("::ffff:10.0.0.1"));
    assert_false(exposure_loopback("fe80::1"));
    /* Not an address at all (the gateway refuses to bind it): never called safe. */
    assert_false(exposure_loopback("localhost"));
    assert_false(exposure_loopback(""));
    assert_false(exposure_loopback("127.0.0.1 "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loopback_addresses),
        cmocka_unit_test(test_reachable_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
