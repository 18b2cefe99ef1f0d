/* seckillctl's command lines: options and positionals, and the value parsers (ids, counts,
 * times, names, amounts, rates). A refused value must come back as CTLRUN_USAGE with the
 * output untouched; the usage lines on stderr are what an operator reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlrun.h"

#define SENTINEL ((int64_t)-777)

static struct ctlrun test_ctl = { .command = "test", .usage = "ID" };

/* argv as a command handler gets it: the words after the command. */
#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })

enum { COUPON, STOCK, NAME, NOPTS };

static void opts_reset(struct ctlargs_opt *o)
{
    o[COUPON] = (struct ctlargs_opt){ "--coupon", true, NULL };
    o[STOCK] = (struct ctlargs_opt){ "--stock", true, NULL };
    o[NAME] = (struct ctlargs_opt){ "--name", false, NULL };
}

static int parse(struct ctlargs_opt *o, int argc, char **argv, const char **pos, int min_pos,
                 int max_pos, int *npos)
{
    opts_reset(o);
    return ctlargs_parse(&test_ctl, argc, argv, o, NOPTS, pos, min_pos, max_pos, npos);
}

static void test_parse_options_both_spellings(void **state)
{
    (void)state;
    struct ctlargs_opt o[NOPTS];
    char **argv = ARGV("--coupon", "7", "--stock=500", "--name", "a=b");
    assert_int_equal(parse(o, 5, argv, NULL, 0, 0, NULL), CTLRUN_OK);
    assert_string_equal(o[COUPON].value, "7");
    assert_string_equal(o[STOCK].value, "500");
    assert_string_equal(o[NAME].value, "a=b");   /* the value keeps its own '=' */

    /* "--name=" is an empty value, not a missing one. */
    argv = ARGV("--stock", "1", "--coupon", "2", "--name=");
    assert_int_equal(parse(o, 5, argv, NULL, 0, 0, NULL), CTLRUN_OK);
    assert_string_equal(o[NAME].value, "");
}

static void test_parse_optional_absent(void **state)
{
    (void)state;
    struct ctlargs_opt o[NOPTS];
    char **argv = ARGV("--stock", "1", "--coupon", "2");
    assert_int_equal(parse(o, 4, argv, NULL, 0, 0, NULL), CTLRUN_OK);
    assert_null(o[NAME].value);
}

static void test_parse_refusals(void **state)
{
    (void)state;
    struct ctlargs_opt o[NOPTS];
    const char *pos[2];
    /* unknown option */
    assert_int_equal(parse(o, 5, ARGV("--coupon", "1", "--stock", "1", "--nope"), NULL, 0, 0, NULL),
                     CTLRUN_USAGE);
    /* the same option twice, in either spelling */
    assert_int_equal(parse(o, 5, ARGV("--coupon", "1", "--stock", "1", "--coupon=2"), NULL, 0, 0, NULL),
                     CTLRUN_USAGE);
    /* an option without its value at the end */
    assert_int_equal(parse(o, 3, ARGV("--coupon", "1", "--stock"), NULL, 0, 0, NULL), CTLRUN_USAGE);
    /* a required option missing */
    assert_int_equal(parse(o, 2, ARGV("--coupon", "1"), NULL, 0, 0, NULL), CTLRUN_USAGE);
    /* a positional where none is allowed */
    assert_int_equal(parse(o, 5, ARGV("--coupon", "1", "--stock", "1", "extra"), NULL, 0, 0, NULL),
                     CTLRUN_USAGE);
    /* too many, too few positionals */
    assert_int_equal(parse(o, 7, ARGV("--coupon", "1", "--stock", "1", "a", "b", "c"), pos, 0, 2, NULL),
                     CTLRUN_USAGE);
    assert_int_equal(parse(o, 4, ARGV("--coupon", "1", "--stock", "1"), pos, 1, 2, NULL), CTLRUN_USAGE);
}

static void test_parse_positionals(void **state)
{
    (void)state;
    struct ctlargs_opt o[NOPTS];
    const char *pos[2] = { NULL, NULL };
    int n = -1;
    /* "-5" looks like a number, not an option: it is a positional for its parser to refuse;
     * "--" makes even "--stock" a positional. */
    char **argv = ARGV("--coupon", "1", "-5", "--stock", "2", "--", "--stock");
    assert_int_equal(parse(o, 7, argv, pos, 1, 2, &n), CTLRUN_OK);
    assert_int_equal(n, 2);
    assert_string_equal(pos[0], "-5");
    assert_string_equal(pos[1], "--stock");
    assert_string_equal(o[STOCK].value, "2");
}

static void test_single_id(void **state)
{
    (void)state;
    int64_t id = SENTINEL;
    assert_int_equal(ctlargs_single_id(&test_ctl, 1, ARGV("42"), "activity id", &id), CTLRUN_OK);
    assert_true(id == 42);

    static const char *const bad[] = { "0", "-1", "x", "4.2", "" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        id = SENTINEL;
        char *argv[] = { (char *)bad[i], NULL };
        assert_int_equal(ctlargs_single_id(&test_ctl, 1, argv, "activity id", &id), CTLRUN_USAGE);
    }
    assert_int_equal(ctlargs_single_id(&test_ctl, 0, ARGV(NULL), "activity id", &id), CTLRUN_USAGE);
    assert_int_equal(ctlargs_single_id(&test_ctl, 2, ARGV("1", "2"), "activity id", &id), CTLRUN_USAGE);
    assert_int_equal(ctlargs_single_id(&test_ctl, 2, ARGV("--json2", "1"), "activity id", &id),
                     CTLRUN_USAGE);
}

static void test_count_bounds(void **state)
{
    (void)state;
    int64_t v = SENTINEL;
    assert_int_equal(ctlargs_count(&test_ctl, "--stock", "1", 1, 10, &v), CTLRUN_OK);
    assert_true(v == 1);
    assert_int_equal(ctlargs_count(&test_ctl, "--stock", "10", 1, 10, &v), CTLRUN_OK);
    assert_true(v == 10);
    /* "0" is a count where the range allows it, though parse_id refuses it as an id. */
    assert_int_equal(ctlargs_count(&test_ctl, "--n", "0", 0, 10, &v), CTLRUN_OK);
    assert_true(v == 0);
    assert_int_equal(ctlargs_count(&test_ctl, "--total", "4294967295", 1, 4294967295LL, &v), CTLRUN_OK);
    assert_true(v == 4294967295LL);

    static const char *const bad[] = { "0", "11", "-1", "01", "1.0", "", "ten", "4294967296" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = SENTINEL;
        int64_t max = strcmp(bad[i], "4294967296") == 0 ? 4294967295LL : 10;
        assert_int_equal(ctlargs_count(&test_ctl, "--stock", bad[i], 1, max, &v), CTLRUN_USAGE);
        assert_true(v == SENTINEL);
    }
}

static void test_time_values(void **state)
{
    (void)state;
    const int64_t now = 1796126400000LL;     /* 2026-12-01T12:00:00Z */
    int64_t t = SENTINEL;
    assert_int_equal(ctlargs_time(&test_ctl, "--start", "now", now, &t), CTLRUN_OK);
    assert_true(t == now);
    assert_int_equal(ctlargs_time(&test_ctl, "--end", "+10m", now, &t), CTLRUN_OK);
    assert_true(t == now + 600000);
    assert_int_equal(ctlargs_time(&test_ctl, "--end", "+1d", now, &t), CTLRUN_OK);
    assert_true(t == now + 86400000);
    assert_int_equal(ctlargs_time(&test_ctl, "--start", "-30s", now, &t), CTLRUN_OK);
    assert_true(t == now - 30000);
    assert_int_equal(ctlargs_time(&test_ctl, "--start", "2026-12-01T20:00:00Z", now, &t), CTLRUN_OK);
    assert_true(t == 1796155200000LL);
    assert_int_equal(ctlargs_time(&test_ctl, "--start", "2026-12-01T20:00:00+08:00", now, &t), CTLRUN_OK);
    assert_true(t == 1796126400000LL);

    static const char *const bad[] = { "", "tomorrow", "+10", "10m", "2026-13-01T00:00:00Z",
                                       "2026-02-30T00:00:00Z", "2026-12-01T24:00:00Z" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        t = SENTINEL;
        assert_int_equal(ctlargs_time(&test_ctl, "--start", bad[i], now, &t), CTLRUN_USAGE);
        assert_true(t == SENTINEL);
    }
}

static void test_window_end_counts_from_an_absolute_start(void **state)
{
    (void)state;
    const int64_t now = 1796126400000LL;     /* 2026-12-01T12:00:00Z */
    static const struct { const char *start, *end; int64_t start_ms, end_ms; } cases[] = {
        /* The example of docs/administration.md: one hour from 20:00 Beijing time (12:00Z tomorrow). */
        { "2026-12-02T20:00:00+08:00", "+1h", 1796212800000LL, 1796212800000LL + 3600000 },
        { "2026-12-02T12:00:00Z", "+30m", 1796212800000LL, 1796212800000LL + 1800000 },
        { "2026-12-02T12:00:00Z", "2026-12-02T13:00:00Z", 1796212800000LL, 1796216400000LL },
        /* After now or a relative start, both count from now, as they always did. */
        { "now", "+1h", now, now + 3600000 },
        { "+1h", "+2h", now + 3600000, now + 7200000 },
        { "-1m", "+1d", now - 60000, now + 86400000 },
        { "+1h", "2026-12-02T12:00:00Z", now + 3600000, 1796212800000LL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t s = SENTINEL, e = SENTINEL;
        assert_int_equal(ctlargs_window(&test_ctl, cases[i].start, cases[i].end, now, &s, &e), CTLRUN_OK);
        if (s != cases[i].start_ms || e != cases[i].end_ms)
            fail_msg("case %zu: %s .. %s gave %lld .. %lld", i, cases[i].start, cases[i].end,
                     (long long)s, (long long)e);
    }
    int64_t s = SENTINEL, e = SENTINEL;
    assert_int_equal(ctlargs_window(&test_ctl, "tomorrow", "+1h", now, &s, &e), CTLRUN_USAGE);
    assert_int_equal(ctlargs_window(&test_ctl, "now", "1h", now, &s, &e), CTLRUN_USAGE);
    assert_true(s == SENTINEL && e == SENTINEL);
}

static void test_name_rules(void **state)
{
    (void)state;
    char name[600];
    assert_int_equal(ctlargs_name(&test_ctl, "--name", "10 off 100"), CTLRUN_OK);
    assert_int_equal(ctlargs_name(&test_ctl, "--name", "双十一 满100减10"), CTLRUN_OK);
    assert_int_equal(ctlargs_name(&test_ctl, "--name", " x "), CTLRUN_OK);

    /* 128 characters is the column; three bytes each still counts 128. */
    name[0] = '\0';
    for (int i = 0; i < 128; i++)
        strcat(name, "券");
    assert_int_equal(ctlargs_name(&test_ctl, "--name", name), CTLRUN_OK);
    strcat(name, "x");
    assert_int_equal(ctlargs_name(&test_ctl, "--name", name), CTLRUN_USAGE);
    memset(name, 'a', 129);
    name[129] = '\0';
    assert_int_equal(ctlargs_name(&test_ctl, "--name", name), CTLRUN_USAGE);
    name[128] = '\0';
    assert_int_equal(ctlargs_name(&test_ctl, "--name", name), CTLRUN_OK);

    static const char *const bad[] = {
        "", "   ", "tab\there", "nl\n", "del\x7f", "\xff", "\xc0\xaf" /* overlong '/' */,
        "\xed\xa0\x80" /* a surrogate */, "\xe5\x88" /* cut short */,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(ctlargs_name(&test_ctl, "--name", bad[i]), CTLRUN_USAGE);
}

static void test_amounts(void **state)
{
    (void)state;
    int64_t c = SENTINEL;
    assert_int_equal(ctlargs_amount(&test_ctl, "--amount", "10.00", &c), CTLRUN_OK);
    assert_true(c == 1000);
    assert_int_equal(ctlargs_amount(&test_ctl, "--amount", "0.5", &c), CTLRUN_OK);
    assert_true(c == 50);
    assert_int_equal(ctlargs_amount(&test_ctl, "--min-order", "0", &c), CTLRUN_OK);
    assert_true(c == 0);
    /* DECIMAL(15,2): 13 digits of yuan fit, 14 do not. */
    assert_int_equal(ctlargs_amount(&test_ctl, "--amount", "9999999999999.99", &c), CTLRUN_OK);
    assert_true(c == 999999999999999LL);

    static const char *const bad[] = { "10.001", "-1", "1e3", "", "ten", "10000000000000.00" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = SENTINEL;
        assert_int_equal(ctlargs_amount(&test_ctl, "--amount", bad[i], &c), CTLRUN_USAGE);
    }
}

static void test_rates(void **state)
{
    (void)state;
    static const struct { const char *in; int64_t want; } ok[] = {
        { "0.85", 8500 }, { "1", 10000 }, { "1.0", 10000 }, { "0.0001", 1 }, { "0.1234", 1234 },
        { "0.5", 5000 },
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t r = SENTINEL;
        assert_int_equal(ctlargs_rate(&test_ctl, ok[i].in, &r), CTLRUN_OK);
        assert_true(r == ok[i].want);
    }
    static const char *const bad[] = { "0", "0.0", "1.0001", "1.5", "2", "0.12345", ".5", "0.",
                                       "", "10", "-0.5", "0.5x", "0,5" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t r = SENTINEL;
        assert_int_equal(ctlargs_rate(&test_ctl, bad[i], &r), CTLRUN_USAGE);
        assert_true(r == SENTINEL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_options_both_spellings),
        cmocka_unit_test(test_parse_optional_absent),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_parse_positionals),
        cmocka_unit_test(test_single_id),
        cmocka_unit_test(test_count_bounds),
        cmocka_unit_test(test_time_values),
        cmocka_unit_test(test_window_end_counts_from_an_absolute_start),
        cmocka_unit_test(test_name_rules),
        cmocka_unit_test(test_amounts),
        cmocka_unit_test(test_rates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
