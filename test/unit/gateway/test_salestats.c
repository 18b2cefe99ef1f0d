/* salestats: the per-sale gauges rendered from salestats.lua answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/textbuf.h"
#include "gateway/salestats.h"

static struct config cfg;
static struct salestats *stats;

/* An array reply of integers, as hiredis builds it. */
static redisReply elements[8], *element_ptrs[8];
static redisReply array;

static const redisReply *answer(const long long v[8], size_t n)
{
    for (size_t i = 0; i < 8; i++) {
        elements[i] = (redisReply){ .type = REDIS_REPLY_INTEGER, .integer = v[i] };
        element_ptrs[i] = &elements[i];
    }
    array = (redisReply){ .type = REDIS_REPLY_ARRAY, .elements = n, .element = element_ptrs };
    return &array;
}

static int setup(void **state)
{
    (void)state;
    config_init(&cfg);
    cfg.sale_stats_interval_ms = 0;  /* no timer: the test feeds the answers */
    cfg.pre_reduce_timeout = 30;
    stats = salestats_new(NULL, &cfg, NULL, NULL);
    return stats ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    salestats_free(stats);
    config_free(&cfg);
    return 0;
}

static char *render(int64_t now_ms)
{
    struct textbuf t;
    textbuf_init(&t);
    salestats_render(stats, &t, now_ms);
    return textbuf_take(&t);
}

static void test_a_balanced_sale_shows_every_term(void **state)
{
    (void)state;
    /* stock 100: 60 left, 5 reserved, 10 queued, 3 claimed, 22 sold, none returned; the
     * oldest reservation accepted at 1,000,000 ms */
    const long long v[8] = { 100, 60, 5, 10, 3, 22, 0, 1000000 };
    assert_int_equal(salestats_apply(stats, 7, answer(v, 8)), 0);
    char *text = render(1012345);
    assert_non_null(strstr(text, "seckill_reservation_timeout_seconds 30\n"));
    assert_non_null(strstr(text, "seckill_sale_stock{activity=\"7\"} 100\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"7\",state=\"left\"} 60\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"7\",state=\"reserved\"} 5\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"7\",state=\"queued\"} 10\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"7\",state=\"claimed\"} 3\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"7\",state=\"sold\"} 22\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"7\",state=\"returned\"} 0\n"));
    assert_non_null(strstr(text, "seckill_sale_imbalance{activity=\"7\"} 0\n"));
    assert_non_null(strstr(text, "seckill_sale_oldest_reservation_seconds{activity=\"7\"} 12.345\n"));
    free(text);
}

static void test_an_imbalance_shows_its_sign(void **state)
{
    (void)state;
    const long long over[8] = { 10, 8, 0, 0, 0, 5, 0, -1 };   /* 13 units of 10 */
    const long long short_[8] = { 10, 2, 0, 0, 0, 5, 1, -1 }; /* 8 units of 10 */
    assert_int_equal(salestats_apply(stats, 1, answer(over, 8)), 0);
    assert_int_equal(salestats_apply(stats, 2, answer(short_, 8)), 0);
    char *text = render(5000);
    assert_non_null(strstr(text, "seckill_sale_imbalance{activity=\"1\"} 3\n"));
    assert_non_null(strstr(text, "seckill_sale_imbalance{activity=\"2\"} -2\n"));
    /* no reservation: age 0, not the distance to the epoch */
    assert_non_null(strstr(text, "seckill_sale_oldest_reservation_seconds{activity=\"1\"} 0.000\n"));
    free(text);
}

static void test_a_failed_read_leaves_the_sale_off_the_page(void **state)
{
    (void)state;
    const long long v[8] = { 10, 10, 0, 0, 0, 0, 0, -1 };
    assert_int_equal(salestats_apply(stats, 9, answer(v, 8)), 0);
    assert_int_equal(salestats_apply(stats, 9, NULL), -1);           /* Redis failed */
    assert_int_equal(salestats_apply(stats, 4, answer(v, 0)), -1);   /* not warmed: {} */
    assert_int_equal(salestats_apply(stats, 5, answer(v, 7)), -1);   /* not the script's shape */
    char *text = render(5000);
    assert_null(strstr(text, "activity=\"9\""));
    assert_null(strstr(text, "activity=\"4\""));
    assert_null(strstr(text, "activity=\"5\""));
    /* the families are still declared, for promtool and dashboards */
    assert_non_null(strstr(text, "# TYPE seckill_sale_imbalance gauge\n"));
    free(text);
}

static void test_a_sale_without_counter_shows_no_sold_nor_imbalance(void **state)
{
    (void)state;
    /* warmed before the 'sold' counter existed: salestats.lua answers -1 */
    const long long v[8] = { 100, 60, 5, 10, 3, -1, 0, -1 };
    assert_int_equal(salestats_apply(stats, 3, answer(v, 8)), 0);
    char *text = render(5000);
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"3\",state=\"left\"} 60\n"));
    assert_non_null(strstr(text, "seckill_sale_units{activity=\"3\",state=\"returned\"} 0\n"));
    assert_null(strstr(text, "state=\"sold\""));
    assert_null(strstr(text, "seckill_sale_imbalance{activity=\"3\"}"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_balanced_sale_shows_every_term, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_imbalance_shows_its_sign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_read_leaves_the_sale_off_the_page, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_sale_without_counter_shows_no_sold_nor_imbalance, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
