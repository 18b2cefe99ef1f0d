/* The metrics pages' histogram: each value lands in the first bucket whose bound it does
 * not exceed, buckets render cumulatively, _count equals +Inf, durations render in
 * seconds and counts as integers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/histogram.h"

static char *render(struct histogram *h, const char *labels)
{
    struct textbuf t;
    textbuf_init(&t);
    histogram_render(h, &t, "x", labels);
    char *text = textbuf_take(&t);
    assert_non_null(text);
    return text;
}

/* line must be one whole line of text. */
static void assert_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return;
    fail_msg("line \"%s\" missing from:\n%s", line, text);
}

static void test_seconds_buckets_are_cumulative(void **state)
{
    (void)state;
    static struct histogram h;  /* static: zero-initialised, unit SECONDS */
    histogram_observe(&h, 100);      /* exactly a bound: that bucket, not the next */
    histogram_observe(&h, 101);      /* just above: the next one (250 us) */
    histogram_observe(&h, 2000000);  /* 2 s: the 2.5 s bucket */
    histogram_observe(&h, 60000000); /* a minute: only +Inf */
    char *text = render(&h, "");
    assert_line(text, "x_bucket{le=\"0.0001\"} 1");
    assert_line(text, "x_bucket{le=\"0.00025\"} 2");
    assert_line(text, "x_bucket{le=\"1\"} 2");
    assert_line(text, "x_bucket{le=\"2.5\"} 3");
    assert_line(text, "x_bucket{le=\"30\"} 3");
    assert_line(text, "x_bucket{le=\"+Inf\"} 4");
    assert_line(text, "x_sum 62.000201");
    assert_line(text, "x_count 4");
    free(text);
}

static void test_counts_render_as_integers_with_labels(void **state)
{
    (void)state;
    struct histogram h;
    memset(&h, 0, sizeof(h));
    h.unit = HISTOGRAM_COUNT;
    for (int i = 0; i < 3; i++)
        histogram_observe(&h, 7);  /* the 10 bucket */
    histogram_observe(&h, 500);
    char *text = render(&h, "step=\"claim\"");
    assert_line(text, "x_bucket{step=\"claim\",le=\"5\"} 0");
    assert_line(text, "x_bucket{step=\"claim\",le=\"10\"} 3");
    assert_line(text, "x_bucket{step=\"claim\",le=\"500\"} 4");
    assert_line(text, "x_bucket{step=\"claim\",le=\"+Inf\"} 4");
    assert_line(text, "x_sum{step=\"claim\"} 521");
    assert_line(text, "x_count{step=\"claim\"} 4");
    free(text);
}

static void test_empty_histogram_renders_zeros(void **state)
{
    (void)state;
    static struct histogram h;
    char *text = render(&h, "");
    assert_line(text, "x_bucket{le=\"+Inf\"} 0");
    assert_line(text, "x_sum 0.000000");
    assert_line(text, "x_count 0");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seconds_buckets_are_cumulative),
        cmocka_unit_test(test_counts_render_as_integers_with_labels),
        cmocka_unit_test(test_empty_histogram_renders_zeros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
