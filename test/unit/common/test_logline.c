/* Log lines as a shipper reads them: with log.format = json every line is one JSON object
 * whatever bytes the message holds (quotes, control characters, UTF-8 and bytes that are
 * not), the order number has a field of its own, and a cut line is still whole. Text
 * lines keep the layout they always had. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/logline.h"

/* 2026-12-01T20:00:00.123Z */
#define T0_SEC 1796155200
#define T0_NSEC 123456789

static struct logline line_of(const char *order_no, const char *message)
{
    struct logline l = { "warn", { T0_SEC, T0_NSEC }, "seckill-server", order_no, message };
    return l;
}

static char out[LOGLINE_MAX];

static const char *json_line(const char *order_no, const char *message)
{
    struct logline l = line_of(order_no, message);
    size_t n = logline_format(out, sizeof(out), LOGLINE_JSON, &l);
    assert_int_equal(n, strlen(out));
    return out;
}

/* The line parsed: one object, nothing after it but the newline. */
static cJSON *parse_line(const char *text)
{
    size_t len = strlen(text);
    assert_true(len > 0 && text[len - 1] == '\n');
    assert_null(memchr(text, '\n', len - 1));
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(text, &end, 0);
    if (!j)
        fail_msg("not JSON: %s", text);
    assert_true(cJSON_IsObject(j));
    assert_string_equal(end, "\n");
    return j;
}

static const char *field(const cJSON *j, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, name);
    return cJSON_IsString(f) ? f->valuestring : NULL;
}

static void test_json_fields(void **state)
{
    (void)state;
    const char *text = json_line("2939817-42", "kafka delivery failed: Local: Message timed out");
    assert_string_equal(text, "{\"time\":\"2026-12-01T20:00:00.123Z\",\"level\":\"warn\","
                              "\"component\":\"seckill-server\",\"orderNo\":\"2939817-42\","
                              "\"message\":\"kafka delivery failed: Local: Message timed out\"}\n");
    cJSON *j = parse_line(text);
    assert_string_equal(field(j, "orderNo"), "2939817-42");
    cJSON_Delete(j);
}

static void test_json_without_order_has_no_order_field(void **state)
{
    (void)state;
    cJSON *j = parse_line(json_line(NULL, "ready"));
    assert_null(cJSON_GetObjectItemCaseSensitive(j, "orderNo"));
    assert_string_equal(field(j, "message"), "ready");
    assert_string_equal(field(j, "level"), "warn");
    assert_string_equal(field(j, "component"), "seckill-server");
    assert_string_equal(field(j, "time"), "2026-12-01T20:00:00.123Z");
    cJSON_Delete(j);
}

static void test_json_escapes_quotes_and_backslashes(void **state)
{
    (void)state;
    const char *msg = "config \"a\\b\" refused: '{\"x\":1}'";
    const char *text = json_line(NULL, msg);
    assert_non_null(strstr(text, "\"message\":\"config \\\"a\\\\b\\\" refused: '{\\\"x\\\":1}'\"}"));
    cJSON *j = parse_line(text);
    assert_string_equal(field(j, "message"), msg);
    cJSON_Delete(j);
}

static void test_json_escapes_control_characters(void **state)
{
    (void)state;
    const char *msg = "line1\nline2\r\ttab \x01\x1b[31m\x1f\x7f end";
    const char *text = json_line(NULL, msg);
    assert_non_null(strstr(text, "\"message\":\"line1\\nline2\\r\\ttab \\u0001\\u001b[31m\\u001f\\u007f "
                           "end\"}\n"));
    cJSON *j = parse_line(text);
    assert_string_equal(field(j, "message"), msg);
    cJSON_Delete(j);
}

static void test_json_keeps_utf8(void **state)
{
    (void)state;
    const char *msg = "秒杀 coupon \xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80";
    const char *text = json_line(NULL, msg);
    /* Passed through as the bytes they are, not as \u escapes. */
    char want[256];
    snprintf(want, sizeof(want), "\"message\":\"%s\"}\n", msg);
    assert_non_null(strstr(text, want));
    cJSON *j = parse_line(text);
    assert_string_equal(field(j, "message"), msg);
    cJSON_Delete(j);
}

static void test_json_replaces_bytes_that_are_not_utf8(void **state)
{
    (void)state;
    const struct { const char *in, *want; } cases[] = {
        { "a\xff" "b", "a\\ufffdb" },                  /* never in UTF-8 */
        { "\xc0\xaf", "\\ufffd\\ufffd" },              /* overlong '/' */
        { "\xe0\x80\xaf", "\\ufffd\\ufffd\\ufffd" },   /* overlong, three bytes */
        { "\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd" },   /* a UTF-16 surrogate */
        { "\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd" },  /* above U+10FFFF */
        { "cut \xe7\xa7", "cut \\ufffd\\ufffd" },      /* a sequence cut short */
        { "\x80" "x", "\\ufffdx" },                    /* a lone continuation byte */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *text = json_line(NULL, cases[i].in);
        char want[128];
        snprintf(want, sizeof(want), "\"message\":\"%s\"}\n", cases[i].want);
        if (!strstr(text, want))
            fail_msg("case %zu: %s lacks %s", i, text, want);
        cJSON_Delete(parse_line(text));
    }
}

static void test_json_escapes_the_order_number_too(void **state)
{
    (void)state;
    cJSON *j = parse_line(json_line("x\"}\n{", "m"));
    assert_string_equal(field(j, "orderNo"), "x\"}\n{");
    cJSON_Delete(j);
}

/* A message longer than the buffer: the line is cut, at a character boundary, and is
 * still one whole object with its newline. */
static void test_json_cut_line_stays_whole(void **state)
{
    (void)state;
    char msg[1200];
    size_t n = 0;
    while (n + 4 < sizeof(msg)) {
        memcpy(msg + n, "\xe7\xa7\x92\"", 4);  /* 秒 and a quote: 3 bytes, then 2 escaped */
        n += 4;
    }
    msg[n] = '\0';
    for (size_t size = 64; size < 400; size += 7) {
        char buf[400];
        struct logline l = line_of("2939817-42", msg);
        size_t len = logline_format(buf, size, LOGLINE_JSON, &l);
        assert_true(len < size);
        assert_int_equal(len, strlen(buf));
        cJSON *j = parse_line(buf);
        const char *m = field(j, "message");
        if (m) {
            /* Only whole characters: a prefix of the original made of 秒" pairs. */
            assert_int_equal(strncmp(m, msg, strlen(m)), 0);
            size_t ml = strlen(m);
            assert_true(ml % 4 == 0 || ml % 4 == 3);
        }
        cJSON_Delete(j);
    }
}

static void test_text_layout_unchanged(void **state)
{
    (void)state;
    struct logline l = line_of("2939817-42", "rolled back, stock returned");
    logline_format(out, sizeof(out), LOGLINE_TEXT, &l);
    assert_string_equal(out, "2026-12-01T20:00:00.123Z warn seckill-server: order 2939817-42: "
                             "rolled back, stock returned\n");
    l = line_of(NULL, "ready");
    logline_format(out, sizeof(out), LOGLINE_TEXT, &l);
    assert_string_equal(out, "2026-12-01T20:00:00.123Z warn seckill-server: ready\n");
}

static void test_text_cut_at_character_boundary(void **state)
{
    (void)state;
    struct logline l = line_of(NULL, "\xe7\xa7\x92\xe7\xa7\x92\xe7\xa7\x92\xe7\xa7\x92\xe7\xa7\x92"
                                     "\xe7\xa7\x92\xe7\xa7\x92\xe7\xa7\x92\xe7\xa7\x92\xe7\xa7\x92");
    char buf[64];
    size_t len = logline_format(buf, sizeof(buf), LOGLINE_TEXT, &l);
    assert_true(len < sizeof(buf));
    assert_int_equal(buf[len - 1], '\n');
    const char *body = strstr(buf, "seckill-server: ") + strlen("seckill-server: ");
    assert_int_equal((size_t)(buf + len - 1 - body) % 3, 0);
}

/* A client's path with a CR LF and a made-up entry after it: one line, the entry visible
 * as part of this one's message, not as a line of its own. */
static void test_text_escapes_what_would_forge_a_line(void **state)
{
    (void)state;
    struct logline l = line_of(NULL, "POST /admin/x\r\n2026-12-01T20:00:00.123Z info seckill-admin: "
                                     "POST /admin/activities/7/cancel -> 200 -> 404");
    size_t len = logline_format(out, sizeof(out), LOGLINE_TEXT, &l);
    assert_int_equal(len, strlen(out));
    assert_null(memchr(out, '\n', len - 1));
    assert_null(memchr(out, '\r', len));
    assert_string_equal(out, "2026-12-01T20:00:00.123Z warn seckill-server: POST /admin/x\\r\\n"
                             "2026-12-01T20:00:00.123Z info seckill-admin: POST /admin/activities/7/cancel "
                             "-> 200 -> 404\n");
}

static void test_text_escapes_control_bytes_backslashes_and_bytes_not_utf8(void **state)
{
    (void)state;
    struct logline l = line_of("1-\x1b", "a\tb\x01" "c\\d\x7f e\xff\xc3(f \xe7\xa7\x92");
    logline_format(out, sizeof(out), LOGLINE_TEXT, &l);
    assert_string_equal(out, "2026-12-01T20:00:00.123Z warn seckill-server: order 1-\\x1b: "
                             "a\\tb\\x01c\\\\d\\x7f e\\xff\\xc3(f \xe7\xa7\x92\n");
    for (const unsigned char *p = (const unsigned char *)out; *p != '\n'; p++)
        assert_true(*p >= 0x20 && *p != 0x7F);
}

static void test_parse_format(void **state)
{
    (void)state;
    enum logline_format f = LOGLINE_JSON;
    assert_int_equal(logline_parse_format("text", &f), 0);
    assert_int_equal(f, LOGLINE_TEXT);
    assert_int_equal(logline_parse_format("json", &f), 0);
    assert_int_equal(f, LOGLINE_JSON);
    assert_int_equal(logline_parse_format("JSON", &f), -1);
    assert_int_equal(logline_parse_format("", &f), -1);
    assert_int_equal(f, LOGLINE_JSON);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_fields),
        cmocka_unit_test(test_json_without_order_has_no_order_field),
        cmocka_unit_test(test_json_escapes_quotes_and_backslashes),
        cmocka_unit_test(test_json_escapes_control_characters),
        cmocka_unit_test(test_json_keeps_utf8),
        cmocka_unit_test(test_json_replaces_bytes_that_are_not_utf8),
        cmocka_unit_test(test_json_escapes_the_order_number_too),
        cmocka_unit_test(test_json_cut_line_stays_whole),
        cmocka_unit_test(test_text_layout_unchanged),
        cmocka_unit_test(test_text_cut_at_character_boundary),
        cmocka_unit_test(test_text_escapes_what_would_forge_a_line),
        cmocka_unit_test(test_text_escapes_control_bytes_backslashes_and_bytes_not_utf8),
        cmocka_unit_test(test_parse_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
