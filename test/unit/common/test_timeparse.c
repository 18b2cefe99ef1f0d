/* Times as an operator types them (ISO-8601, now, +10m) and UTC output.
 * Expected instants were computed independently (Python datetime) and pasted as literals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/timeparse.h"

#define T_2026_12_01_12Z 1796126400000LL /* 2026-12-01T12:00:00Z */
#define NOW_MS 1796126400123LL           /* a fixed "now" with milliseconds */
#define SENTINEL ((int64_t)-424242)

static void use_tz(const char *tz)
{
    assert_int_equal(setenv("TZ", tz, 1), 0);
    tzset();
}

static void expect(const char *s, int64_t want)
{
    int64_t got = SENTINEL;
    if (timeparse_parse(s, NOW_MS, &got) != 0)
        fail_msg("timeparse_parse rejected \"%s\"", s);
    if (got != want)
        fail_msg("\"%s\" -> %" PRId64 ", expected %" PRId64, s, got, want);
}

static void expect_reject(const char *s)
{
    int64_t got = SENTINEL;
    if (timeparse_parse(s, NOW_MS, &got) == 0)
        fail_msg("timeparse_parse accepted \"%s\" as %" PRId64, s, got);
    if (got != SENTINEL)
        fail_msg("\"%s\" was rejected but *out_ms was written", s);
}

static void test_iso_utc_and_offsets(void **state)
{
    (void)state;
    use_tz("UTC");
    static const struct { const char *in; int64_t want; } cases[] = {
        { "2026-12-01T12:00:00Z", T_2026_12_01_12Z },
        { "2026-12-01T12:00:00z", T_2026_12_01_12Z },
        { "2026-12-01T12:00Z", T_2026_12_01_12Z },            /* seconds optional */
        { "2026-12-01 12:00:00Z", T_2026_12_01_12Z },          /* space separator */
        { "2026-12-01T20:00:00+08:00", T_2026_12_01_12Z },
        { "2026-12-01T20:00:00+0800", T_2026_12_01_12Z },
        { "2026-12-01T20:00:00+08", T_2026_12_01_12Z },
        { "2026-12-01T07:00:00-0500", T_2026_12_01_12Z },
        { "2026-12-01T07:00:00-05:00", T_2026_12_01_12Z },
        { "2026-12-01T17:30:00+05:30", T_2026_12_01_12Z },
        { "2026-12-01T12:00:00+00:00", T_2026_12_01_12Z },
        { "2026-12-01T12:00:00-00:00", T_2026_12_01_12Z },
        { "2026-12-02T02:00:00+14:00", T_2026_12_01_12Z },    /* across the date line */
        { "2026-11-30T23:00:00-13:00", T_2026_12_01_12Z },
        /* fractions: 1-9 digits, milliseconds kept, the rest dropped */
        { "2026-12-01T12:00:00.5Z", T_2026_12_01_12Z + 500 },
        { "2026-12-01T12:00:00.05Z", T_2026_12_01_12Z + 50 },
        { "2026-12-01T12:00:00.250Z", T_2026_12_01_12Z + 250 },
        { "2026-12-01T12:00:00.999Z", T_2026_12_01_12Z + 999 },
        { "2026-12-01T12:00:00.1239Z", T_2026_12_01_12Z + 123 },
        { "2026-12-01T12:00:00.123456789Z", T_2026_12_01_12Z + 123 },
        { "2026-12-01T20:00:00.750+08:00", T_2026_12_01_12Z + 750 },
        /* other instants */
        { "1970-01-01T00:00:00Z", 0 },
        { "2024-01-01T00:00:00Z", 1704067200000LL },
        { "2000-02-29T12:34:56Z", 951827696000LL },
        { "2026-06-15T23:59:59Z", 1781567999000LL },
        { "9999-12-31T23:59:59.999Z", 253402300799999LL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect(cases[i].in, cases[i].want);
}

static void test_local_time(void **state)
{
    (void)state;
    /* Without an offset the process's time zone applies. */
    use_tz("UTC");
    expect("2026-12-01T12:00:00", T_2026_12_01_12Z);
    expect("2026-12-01T12:00", T_2026_12_01_12Z);
    expect("2026-12-01T12:00:00.5", T_2026_12_01_12Z + 500);
    use_tz("CST-8"); /* UTC+8, POSIX form: no tzdata needed */
    expect("2026-12-01T20:00:00", T_2026_12_01_12Z);
    /* An explicit offset ignores the zone. */
    expect("2026-12-01T12:00:00Z", T_2026_12_01_12Z);
    expect("2026-12-01T07:00:00-0500", T_2026_12_01_12Z);

    /* US Eastern with its DST rule: 2027-03-14 02:00-03:00 does not exist. */
    use_tz("EST5EDT,M3.2.0,M11.1.0");
    expect("2027-03-14T01:30:00", 1805005800000LL); /* EST, 06:30Z */
    expect("2027-03-14T03:30:00", 1805009400000LL); /* EDT, 07:30Z */
    expect_reject("2027-03-14T02:30:00");
    expect("2027-03-14T02:30:00-05:00", 1805009400000LL); /* with an offset it is fine */
    use_tz("UTC");
}

static void test_absolute_or_from_now(void **state)
{
    (void)state;
    static const char *const absolute[] = { "2026-12-01T20:00:00+08:00", "2026-12-01 20:00",
                                            "2026-12-01T12:00:00Z" };
    static const char *const from_now[] = { "now", "+1h", "-30s", "+0d" };
    for (size_t i = 0; i < sizeof(absolute) / sizeof(absolute[0]); i++)
        assert_true(timeparse_is_absolute(absolute[i]));
    for (size_t i = 0; i < sizeof(from_now) / sizeof(from_now[0]); i++)
        assert_false(timeparse_is_absolute(from_now[i]));
}

static void test_relative(void **state)
{
    (void)state;
    static const struct { const char *in; int64_t delta; } cases[] = {
        { "now", 0 },
        { "+0s", 0 },
        { "+30s", 30000 },
        { "+10m", 600000 },
        { "+2h", 7200000 },
        { "+1d", 86400000 },
        { "+90m", 5400000 },
        { "+365d", 365LL * 86400000 },
        { "-30s", -30000 },
        { "-1d", -86400000 },
        { "+9999999999d", 9999999999LL * 86400000 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect(cases[i].in, NOW_MS + cases[i].delta);
    /* Relative to whatever now is passed. */
    int64_t out = 0;
    assert_int_equal(timeparse_parse("+1h", 0, &out), 0);
    assert_true(out == 3600000);
    assert_int_equal(timeparse_parse("now", 42, &out), 0);
    assert_true(out == 42);
    /* No overflow at the ends of the range. */
    out = SENTINEL;
    assert_int_equal(timeparse_parse("+1d", INT64_MAX - 1000, &out), -1);
    assert_int_equal(timeparse_parse("-1d", INT64_MIN + 1000, &out), -1);
    assert_true(out == SENTINEL);
    assert_int_equal(timeparse_parse("+1s", INT64_MAX - 1000, &out), 0);
    assert_true(out == INT64_MAX);
}

static void test_leap_days(void **state)
{
    (void)state;
    expect("2028-02-29T00:00:00Z", 1835395200000LL);
    expect("2000-02-29T12:34:56Z", 951827696000LL);
    expect_reject("2027-02-29T00:00:00Z");
    expect_reject("2100-02-29T00:00:00Z"); /* divisible by 100, not by 400 */
    expect_reject("2028-02-30T00:00:00Z");
    /* Every year 1970-2400: Feb 29 exists exactly in Gregorian leap years, and the day
     * after Feb 28 is Feb 29 or Mar 1 accordingly. */
    for (int y = 1970; y <= 2400; y++) {
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        char s[40];
        int64_t feb28 = 0, mar1 = 0, feb29 = SENTINEL, jan1 = 0, next_jan1 = 0;
        snprintf(s, sizeof(s), "%04d-02-28T00:00:00Z", y);
        assert_int_equal(timeparse_parse(s, 0, &feb28), 0);
        snprintf(s, sizeof(s), "%04d-03-01T00:00:00Z", y);
        assert_int_equal(timeparse_parse(s, 0, &mar1), 0);
        snprintf(s, sizeof(s), "%04d-02-29T00:00:00Z", y);
        int rc = timeparse_parse(s, 0, &feb29);
        if (leap) {
            assert_int_equal(rc, 0);
            assert_true(feb29 - feb28 == 86400000LL);
            assert_true(mar1 - feb28 == 2 * 86400000LL);
        } else {
            assert_int_equal(rc, -1);
            assert_true(mar1 - feb28 == 86400000LL);
        }
        snprintf(s, sizeof(s), "%04d-01-01T00:00:00Z", y);
        assert_int_equal(timeparse_parse(s, 0, &jan1), 0);
        snprintf(s, sizeof(s), "%04d-01-01T00:00:00Z", y + 1);
        assert_int_equal(timeparse_parse(s, 0, &next_jan1), 0);
        assert_true(next_jan1 - jan1 == (leap ? 366 : 365) * 86400000LL);
    }
}

static void test_rejects_junk(void **state)
{
    (void)state;
    use_tz("UTC");
    static const char *const bad[] = {
        "", " ", "now ", " now", "NOW", "Now", "nowx", "today", "tomorrow",
        /* relative */
        "+", "-", "+10", "10m", "+m", "+10x", "+10M", "+10mm", "+10 m", "+ 10m", "++10m",
        "+-10m", "+1.5h", "+1h30m", "+10ms", "+99999999999d",
        /* shape */
        "2026", "2026-12", "2026-12-01", "2026-12-01T", "2026-12-01T12", "2026-12-01T12Z",
        "2026-12-01T12:0", "2026-12-01T12:00:0", "2026-12-01T12:00:0Z", "2026-1-01T12:00:00Z",
        "2026-12-1T12:00:00Z", "26-12-01T12:00:00Z", "2026/12/01T12:00:00Z",
        "2026-12-01X12:00:00Z", "2026-12-01  12:00:00Z", "2026-12-01T12:00:00ZZ",
        "2026-12-01T12:00:00Z ", " 2026-12-01T12:00:00Z", "2026-12-01T12:00:00 Z",
        "2026-12-01T12:00:00.Z", "2026-12-01T12:00:00.", "2026-12-01T12:00:00.1234567890Z",
        "2026-12-01T12:00.5Z", "2026-12-01T12:00:00,5Z", "2026-12-01T12:00:00UTC",
        "2026-12-01T12:00:00GMT", "+2026-12-01T12:00:00Z", "2026-12-01T12:00:00Zjunk",
        /* offsets */
        "2026-12-01T12:00:00+8", "2026-12-01T12:00:00+8:00", "2026-12-01T12:00:00+08:0",
        "2026-12-01T12:00:00+080", "2026-12-01T12:00:00+08000", "2026-12-01T12:00:00+08:00:00",
        "2026-12-01T12:00:00+24:00", "2026-12-01T12:00:00+08:60", "2026-12-01T12:00:00+",
        "2026-12-01T12:00:00+08:", "2026-12-01T12:00:00+08:00Z", "2026-12-01T12:00:00Z+08:00",
        /* ranges */
        "2026-13-01T12:00:00Z", "2026-00-01T12:00:00Z", "2026-12-00T12:00:00Z",
        "2026-12-32T12:00:00Z", "2026-04-31T12:00:00Z", "2026-06-31T12:00:00Z",
        "2026-12-01T24:00:00Z", "2026-12-01T25:00:00Z", "2026-12-01T12:60:00Z",
        "2026-12-01T12:00:60Z", "2026-12-31T23:59:60Z", "1969-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "-2026-12-01T12:00:00Z",
        "2026-12-01T-1:00:00Z", "2026-12-01T12:-1:00Z", "2026-+2-01T12:00:00Z",
        "2027-02-29T00:00:00", "2026-02-30T00:00:00",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_reject(bad[i]);
    int64_t out = SENTINEL;
    assert_int_equal(timeparse_parse(NULL, NOW_MS, &out), -1);
    assert_true(out == SENTINEL);
    assert_int_equal(timeparse_parse("now", NOW_MS, NULL), -1);
}

static void test_format(void **state)
{
    (void)state;
    static const struct { int64_t ms; const char *want; } cases[] = {
        { T_2026_12_01_12Z, "2026-12-01T12:00:00Z" },
        { T_2026_12_01_12Z + 250, "2026-12-01T12:00:00.250Z" },
        { T_2026_12_01_12Z + 5, "2026-12-01T12:00:00.005Z" },
        { T_2026_12_01_12Z + 999, "2026-12-01T12:00:00.999Z" },
        { 0, "1970-01-01T00:00:00Z" },
        { 951827696000LL, "2000-02-29T12:34:56Z" },
        { 1835395200000LL, "2028-02-29T00:00:00Z" },
        { 1781567999000LL, "2026-06-15T23:59:59Z" },
        { 253402300799999LL, "9999-12-31T23:59:59.999Z" },
        { -1, "1969-12-31T23:59:59.999Z" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        int n = timeparse_format(cases[i].ms, buf, sizeof(buf));
        assert_int_equal(n, (int)strlen(cases[i].want));
        assert_string_equal(buf, cases[i].want);
    }
    /* Exactly n + 1 bytes fit; n do not. */
    char buf[32];
    int n = timeparse_format(T_2026_12_01_12Z + 250, buf, sizeof(buf));
    assert_int_equal(n, 24);
    char small[25];
    assert_int_equal(timeparse_format(T_2026_12_01_12Z + 250, small, 25), 24);
    assert_int_equal(timeparse_format(T_2026_12_01_12Z + 250, small, 24), -1);
    assert_int_equal(timeparse_format(T_2026_12_01_12Z, small, 5), -1);

    /* MySQL DATETIME(3) literal, UTC. */
    assert_int_equal(timeparse_format_sql(T_2026_12_01_12Z + 250, buf, sizeof(buf)), 23);
    assert_string_equal(buf, "2026-12-01 12:00:00.250");
    assert_int_equal(timeparse_format_sql(0, buf, sizeof(buf)), 23);
    assert_string_equal(buf, "1970-01-01 00:00:00.000");
    assert_int_equal(timeparse_format_sql(0, buf, 23), -1);
}

static void test_format_parse_round_trip(void **state)
{
    (void)state;
    use_tz("CST-8"); /* the output is UTC whatever the zone */
    const int64_t max = 253402300799999LL; /* 9999-12-31T23:59:59.999Z */
    uint64_t seed = 12345;
    for (int i = 0; i < 20000; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t ms = (int64_t)((seed >> 11) % (uint64_t)(max + 1));
        if (i % 3 == 0)
            ms -= ms % 1000; /* whole seconds take the other format */
        if (i == 0)
            ms = 0;
        if (i == 1)
            ms = max;
        char buf[32];
        int n = timeparse_format(ms, buf, sizeof(buf));
        assert_true(n > 0);
        assert_int_equal(buf[n - 1], 'Z');
        int64_t back = SENTINEL;
        if (timeparse_parse(buf, 0, &back) != 0)
            fail_msg("format gave \"%s\", which parse rejects", buf);
        if (back != ms)
            fail_msg("%" PRId64 " -> \"%s\" -> %" PRId64, ms, buf, back);
    }
    use_tz("UTC");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iso_utc_and_offsets),
        cmocka_unit_test(test_local_time),
        cmocka_unit_test(test_relative),
        cmocka_unit_test(test_absolute_or_from_now),
        cmocka_unit_test(test_leap_days),
        cmocka_unit_test(test_rejects_junk),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_parse_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
