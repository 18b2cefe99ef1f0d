/* Strict parsers for untrusted input: parse_id and parse_cents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/parse.h"

#define SENTINEL ((int64_t)-777)

static void test_parse_id_accepts(void **state)
{
    (void)state;
    static const struct { const char *in; int64_t want; } ok[] = {
        { "1", 1 },
        { "9", 9 },
        { "10", 10 },
        { "1234567890", 1234567890 },
        { "9223372036854775806", INT64_MAX - 1 },
        { "9223372036854775807", INT64_MAX },
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t v = SENTINEL;
        assert_int_equal(parse_id(ok[i].in, &v), 0);
        assert_true(v == ok[i].want);
    }
}

static void test_parse_id_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "0", "00", "-1", "+1", "01", "", " 1", "1 ", "1x", "x1", "1.0", "1e3", "0x10",
        "9223372036854775808",   /* INT64_MAX + 1 */
        "9999999999999999999",   /* 19 digits, above INT64_MAX */
        "10000000000000000000",  /* 20 digits */
        "18446744073709551616",  /* 2^64: would wrap a 64-bit accumulator to 0 */
        "18446744073709551617",  /* 2^64 + 1: would wrap to 1 */
        "99999999999999999999999999",
        "1-2", "1\n", "\t1",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = SENTINEL;
        if (parse_id(bad[i], &v) == 0)
            fail_msg("parse_id accepted \"%s\"", bad[i]);
        assert_true(v == SENTINEL); /* nothing written on failure */
    }
    int64_t v = SENTINEL;
    assert_int_equal(parse_id(NULL, &v), -1);
}

static void test_parse_cents_accepts(void **state)
{
    (void)state;
    static const struct { const char *in; int64_t want; } ok[] = {
        { "0", 0 },
        { "0.5", 50 },
        { "0.05", 5 },
        { "0.00", 0 },
        { "1", 100 },
        { "100", 10000 },
        { "100.00", 10000 },
        { "100.5", 10050 },
        { "100.50", 10050 },
        { "100.05", 10005 },
        { "99.99", 9999 },
        { "92233720368547758", 9223372036854775800LL },
        { "92233720368547758.07", INT64_MAX },
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t v = SENTINEL;
        if (parse_cents(ok[i].in, &v) != 0)
            fail_msg("parse_cents rejected \"%s\"", ok[i].in);
        assert_true(v == ok[i].want);
    }
}

static void test_parse_cents_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", ".5", "1.", "1.234", "1.000", "-1", "-0.5", "+1", "1e3", "1E3", " 1", "1 ",
        "1,00", "1.2.3", "1..2", "abc", "1x", "0x10", ".", "1.-5", "1.5x",
        "92233720368547758.08",    /* one cent above INT64_MAX */
        "92233720368547758.99",
        "92233720368547759",       /* whole yuan * 100 above INT64_MAX */
        "9223372036854775807",     /* INT64_MAX yuan */
        "184467440737095516.16",
        "99999999999999999999999",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = SENTINEL;
        if (parse_cents(bad[i], &v) == 0)
            fail_msg("parse_cents accepted \"%s\" as %lld", bad[i], (long long)v);
        assert_true(v == SENTINEL);
    }
    int64_t v = SENTINEL;
    assert_int_equal(parse_cents(NULL, &v), -1);
}

/* Ids that travel as JSON numbers stop at 2^53 - 1, where JSON readers stay exact. */
static void test_parse_json_id(void **state)
{
    (void)state;
    int64_t v = SENTINEL;
    assert_int_equal(parse_json_id("9007199254740991", &v), 0);
    assert_true(v == 9007199254740991LL);
    v = SENTINEL;
    assert_int_equal(parse_json_id("9007199254740992", &v), -1);
    assert_int_equal(parse_json_id("9223372036854775807", &v), -1);
    assert_int_equal(parse_json_id("0", &v), -1);
    assert_int_equal(parse_json_id("12a", &v), -1);
    assert_true(v == SENTINEL);
    assert_int_equal(parse_json_id("42", &v), 0);
    assert_true(v == 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_id_accepts),
        cmocka_unit_test(test_parse_id_rejects),
        cmocka_unit_test(test_parse_json_id),
        cmocka_unit_test(test_parse_cents_accepts),
        cmocka_unit_test(test_parse_cents_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
