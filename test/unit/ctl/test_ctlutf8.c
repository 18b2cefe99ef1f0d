/* UTF-8 for names: sequence lengths (malformed input refused), truncation by characters,
 * and terminal widths for the text tables (CJK counts two columns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ctl/ctlutf8.h"

static size_t seq(const char *s)
{
    return ctlutf8_seq((const unsigned char *)s);
}

static void test_seq_lengths(void **state)
{
    (void)state;
    assert_int_equal(seq("a"), 1);
    assert_int_equal(seq("\xc3\xa9"), 2);           /* é */
    assert_int_equal(seq("券"), 3);
    assert_int_equal(seq("\xf0\x9f\x8e\x81"), 4);   /* 🎁 */
    assert_int_equal(seq("\xf4\x8f\xbf\xbf"), 4);   /* U+10FFFF, the last code point */
}

static void test_seq_refuses_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\x80",             /* a continuation byte first */
        "\xff", "\xfe",
        "\xc0\xaf",         /* overlong '/' */
        "\xe0\x80\xaf",     /* overlong, three bytes */
        "\xf0\x80\x80\xaf", /* overlong, four bytes */
        "\xed\xa0\x80",     /* U+D800, a surrogate */
        "\xf4\x90\x80\x80", /* U+110000, past the last code point */
        "\xe5\x88",         /* cut short by the end of the string */
        "\xe5" "a" "\x88",  /* a continuation missing */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(seq(bad[i]), 0);
}

static void test_truncate_by_characters(void **state)
{
    (void)state;
    char s[64];
    strcpy(s, "双十一满减");
    ctlutf8_truncate(s, 3);
    assert_string_equal(s, "双十一");
    strcpy(s, "abc");
    ctlutf8_truncate(s, 3);
    assert_string_equal(s, "abc");
    ctlutf8_truncate(s, 10);
    assert_string_equal(s, "abc");
    ctlutf8_truncate(s, 0);
    assert_string_equal(s, "");
    /* A byte that is not UTF-8 counts as one character and is never split from. */
    strcpy(s, "a\xff" "bc");
    ctlutf8_truncate(s, 2);
    assert_string_equal(s, "a\xff");
}

static void test_width_columns(void **state)
{
    (void)state;
    assert_int_equal(ctlutf8_width(""), 0);
    assert_int_equal(ctlutf8_width("coupon"), 6);
    assert_int_equal(ctlutf8_width("满100减10"), 2 + 3 + 2 + 2);
    assert_int_equal(ctlutf8_width("caf\xc3\xa9"), 4);           /* é is narrow */
    assert_int_equal(ctlutf8_width("\xef\xbc\xa1"), 2);          /* full-width A */
    assert_int_equal(ctlutf8_width("\xea\xb0\x80"), 2);          /* Hangul 가 */
    assert_int_equal(ctlutf8_width("a\xff" "b"), 3);             /* junk: a column a byte */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_lengths),
        cmocka_unit_test(test_seq_refuses_malformed),
        cmocka_unit_test(test_truncate_by_characters),
        cmocka_unit_test(test_width_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
