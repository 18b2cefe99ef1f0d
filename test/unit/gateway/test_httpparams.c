/* httpparams_get_required and httpparams_get_id, on parameters parsed from request parts
 * (httpparams_parse_parts: no evhttp request, no I/O). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gateway/httpparams.h"

static const char JSON[] = "application/json";
static const char FORM[] = "application/x-www-form-urlencoded";
static const char MULTIPART[] = "multipart/form-data; boundary=XyZ";

/* The id `name` from a request of query and body; returns httpparams_get_id's result. */
static int get_id_of(const char *query, const char *type, const char *body, const char *name, bool long_ids,
                     int64_t *id, char *err, size_t errlen)
{
    struct httpparams p;
    err[0] = '\0';
    int rc = httpparams_parse_parts(&p, query, type, body, body ? strlen(body) : 0, err, errlen);
    assert_int_equal(rc, 0);
    rc = httpparams_get_id(&p, name, long_ids, id, err, errlen);
    httpparams_free(&p);
    return rc;
}

static int get_id(const char *query, const char *type, const char *body, const char *name, int64_t *id,
                  char *err, size_t errlen)
{
    return get_id_of(query, type, body, name, false, id, err, errlen);
}

/* http.long-ids: Java's long in the query, a form or a JSON string; a JSON number only
 * while it is exact. */
static void test_long_ids(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    assert_int_equal(get_id_of("activityId=9223372036854775807", NULL, NULL, "activityId", true, &id, err,
                               sizeof(err)), 0);
    assert_int_equal(id, INT64_MAX);
    assert_int_equal(get_id_of(NULL, FORM, "activityId=9007199254740993", "activityId", true, &id, err,
                               sizeof(err)), 0);
    assert_int_equal(id, 9007199254740993LL);
    assert_int_equal(get_id_of(NULL, JSON, "{\"activityId\":\"9223372036854775806\"}", "activityId", true,
                               &id, err, sizeof(err)), 0);
    assert_int_equal(id, INT64_MAX - 1);
    id = 77;
    assert_int_equal(get_id_of("activityId=9223372036854775808", NULL, NULL, "activityId", true, &id, err,
                               sizeof(err)), -1);
    assert_string_equal(err, "activityId must be a positive integer below 2^63");
    assert_int_equal(get_id_of(NULL, JSON, "{\"activityId\":9007199254740993}", "activityId", true, &id, err,
                               sizeof(err)), -1);
    assert_int_equal(get_id("activityId=9007199254740993", NULL, NULL, "activityId", &id, err, sizeof(err)),
                     -1);
    assert_string_equal(err, "activityId must be a positive integer below 2^53");
    assert_int_equal(id, 77);
}

static void test_id_found(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    assert_int_equal(get_id("activityId=42&userId=7", NULL, NULL, "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 42);
    assert_int_equal(get_id(NULL, JSON, "{\"activityId\":9007199254740991}", "activityId", &id, err,
                            sizeof(err)), 0);
    assert_int_equal(id, 9007199254740991LL);
    assert_int_equal(get_id(NULL, JSON, "{\"activityId\":\"12\"}", "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 12);
    assert_int_equal(get_id(NULL, FORM, "activityId=5", "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 5);
    /* query and body agreeing is fine */
    assert_int_equal(get_id("activityId=3", JSON, "{\"activityId\":3}", "activityId", &id, err, sizeof(err)),
                     0);
    assert_int_equal(id, 3);
}

static void test_id_required(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 77;
    assert_int_equal(get_id("userId=7", NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "activityId is required");
    assert_int_equal(get_id(NULL, NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "activityId is required");
    assert_int_equal(id, 77);
}

static void test_id_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "activityId=0", "activityId=-1", "activityId=abc", "activityId=12x", "activityId=",
        "activityId=007", "activityId=9007199254740992", "activityId=99999999999999999999",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[160];
        int64_t id = 77;
        assert_int_equal(get_id(bad[i], NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
        assert_string_equal(err, "activityId must be a positive integer below 2^53");
        assert_int_equal(id, 77);
    }
}

/* What docs/api.md ("In a JSON body an id is ...") promises: a number by its value, a string by
 * the strict digits rule of the query string. */
static void test_json_id_spellings(void **state)
{
    (void)state;
    static const struct { const char *body; int64_t id; } good[] = {
        { "{\"userId\":1001}", 1001 }, { "{\"userId\":\"1001\"}", 1001 },
        { "{\"userId\":1001.0}", 1001 }, { "{\"userId\":1.001e3}", 1001 },
    };
    static const char *const bad[] = {
        "{\"userId\":1001.5}", "{\"userId\":\"1001.0\"}", "{\"userId\":\"+1001\"}",
        "{\"userId\":\" 1001\"}", "{\"userId\":\"1e3\"}", "{\"userId\":\"01001\"}",
        "{\"userId\":-1001}", "{\"userId\":true}",
    };
    char err[160];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int64_t id = 0;
        assert_int_equal(get_id(NULL, JSON, good[i].body, "userId", &id, err, sizeof(err)), 0);
        assert_int_equal(id, good[i].id);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t id = 77;
        if (get_id(NULL, JSON, bad[i], "userId", &id, err, sizeof(err)) != -1)
            fail_msg("%s was read as %lld", bad[i], (long long)id);
        assert_int_equal(id, 77);
    }
}

static void test_id_conflicts(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    assert_int_equal(get_id("activityId=1&activityId=2", NULL, NULL, "activityId", &id, err, sizeof(err)),
                     -1);
    assert_string_equal(err, "activityId: given twice with different values");
    assert_int_equal(get_id("activityId=1", JSON, "{\"activityId\":2}", "activityId", &id, err, sizeof(err)),
                     -1);
    assert_string_equal(err, "activityId: query and body disagree");
}

static void test_required_text(void **state)
{
    (void)state;
    struct httpparams p;
    char err[160] = "", out[HTTPPARAMS_VALUE_LEN];
    const char body[] = "{\"orderRef\":\"ref-1\",\"orderAmount\":100.5}";
    assert_int_equal(httpparams_parse_parts(&p, NULL, JSON, body, strlen(body), err, sizeof(err)), 0);
    assert_int_equal(httpparams_get_required(&p, "orderRef", out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "ref-1");
    assert_int_equal(httpparams_get_required(&p, "orderAmount", out, sizeof(out), err, sizeof(err)), 0);
    assert_string_equal(out, "100.5");
    assert_int_equal(httpparams_get_required(&p, "userId", out, sizeof(out), err, sizeof(err)), -1);
    assert_string_equal(err, "userId is required");
    char small[4];
    assert_int_equal(httpparams_get_required(&p, "orderRef", small, sizeof(small), err, sizeof(err)), -1);
    assert_string_equal(err, "orderRef: too long");
    httpparams_free(&p);
}

/* httpparams_parse_parts on len bytes (which may hold a NUL); returns its result. */
static int parse_bytes(const char *query, const char *type, const char *body, size_t len, char *err,
                       size_t errlen)
{
    struct httpparams p;
    err[0] = '\0';
    int rc = httpparams_parse_parts(&p, query, type, body, len, err, errlen);
    httpparams_free(&p);
    return rc;
}

/* A raw NUL inside a JSON string would end every C string after it: "1\0junk" read as 1. */
static void test_nul_in_json_refused(void **state)
{
    (void)state;
    char err[160];
    static const char raw[] = "{\"userId\":\"1\0junk\"}";
    assert_int_equal(parse_bytes(NULL, JSON, raw, sizeof(raw) - 1, err, sizeof(err)), -1);
    assert_string_equal(err, "NUL byte in a parameter");
    static const char in_name[] = "{\"user\0x\":\"2\",\"userId\":\"1\"}";
    assert_int_equal(parse_bytes(NULL, JSON, in_name, sizeof(in_name) - 1, err, sizeof(err)), -1);
    static const char escaped[] = "{\"userId\":\"1\\u0000junk\"}";
    assert_int_equal(parse_bytes(NULL, JSON, escaped, sizeof(escaped) - 1, err, sizeof(err)), -1);
    assert_string_equal(err, "NUL byte in a parameter");
    static const char form[] = "userId=1\0junk";
    assert_int_equal(parse_bytes(NULL, FORM, form, sizeof(form) - 1, err, sizeof(err)), -1);
    /* The same values without the NUL are fine. */
    static const char clean[] = "{\"userId\":\"1junk\"}";
    assert_int_equal(parse_bytes(NULL, JSON, clean, sizeof(clean) - 1, err, sizeof(err)), 0);
}

/* Names are percent-decoded as values are: "user%49d" is userId, so a conflicting repeat
 * is refused and a lone one is read. */
static void test_encoded_names(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    assert_int_equal(get_id("user%49d=2&userId=1", NULL, NULL, "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId: given twice with different values");
    assert_int_equal(get_id("userId=1&%75%73%65%72%49%64=2", NULL, NULL, "userId", &id, err, sizeof(err)),
                     -1);
    assert_string_equal(err, "userId: given twice with different values");
    assert_int_equal(get_id(NULL, FORM, "user%49d=2&userId=1", "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId: given twice with different values");
    assert_int_equal(get_id("user%49d=2", JSON, "{\"userId\":1}", "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId: query and body disagree");

    assert_int_equal(get_id("user%49d=5", NULL, NULL, "userId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 5);
    assert_int_equal(get_id("user%69d=6", NULL, NULL, "userId", &id, err, sizeof(err)), 0);  /* any case */
    assert_int_equal(id, 6);
    assert_int_equal(get_id("user%49d=7&userId=7", NULL, NULL, "userId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 7);
    /* Malformed escapes stay literal (as evhttp leaves them in values): no match. */
    assert_int_equal(get_id("user%4=8&userI%d=9&userId%=1&userId=3", NULL, NULL, "userId", &id, err,
                            sizeof(err)), 0);
    assert_int_equal(id, 3);
    assert_int_equal(get_id("user%49=8", NULL, NULL, "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId is required");
}

/* A pair without a name ("=x", "=") or without "=" ("flag") does not make the whole query
 * or form malformed, as browsers send them: nameless pairs are nobody's, "flag" is the
 * empty value, and so a known name given without "=" is an empty (malformed) id. */
static void test_pairs_without_name_or_value(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    assert_int_equal(get_id("=x&activityId=4&flag&&=", NULL, NULL, "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 4);
    assert_int_equal(get_id(NULL, FORM, "=null&activityId=6&debug", "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 6);
    assert_int_equal(get_id("activityId&userId=1", NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "activityId must be a positive integer below 2^53");
    /* Still one value per name: "activityId" (empty) and "activityId=5" disagree. */
    assert_int_equal(get_id("activityId=5&activityId", NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "activityId: given twice with different values");
    assert_int_equal(get_id("&&&", NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "activityId is required");
}

/* ---- multipart/form-data (multipart.c): what Spring's @RequestParam reads ---------------- */

/* A form-data part named name with value, under boundary XyZ. */
#define PART(name, value) "--XyZ\r\nContent-Disposition: form-data; name=\"" name "\"\r\n\r\n" value "\r\n"
#define CLOSE "--XyZ--\r\n"

/* Parses a multipart body of content_type; returns httpparams_parse_parts's result. */
static int parse_multipart(const char *content_type, const char *body, char *err, size_t errlen)
{
    return parse_bytes(NULL, content_type, body, strlen(body), err, errlen);
}

static void test_multipart_ids(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    static const char body[] = PART("userId", "1001") PART("activityId", "7") CLOSE;
    assert_int_equal(get_id(NULL, MULTIPART, body, "userId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 1001);
    assert_int_equal(get_id(NULL, MULTIPART, body, "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 7);
    /* Java's long, with http.long-ids; the query agreeing is fine. */
    static const char longs[] = PART("userId", "9223372036854775807") CLOSE;
    assert_int_equal(get_id_of("userId=9223372036854775807", MULTIPART, longs, "userId", true, &id, err,
                               sizeof(err)), 0);
    assert_int_equal(id, INT64_MAX);
    /* As clients write them: a quoted boundary after another parameter, the part's own
     * Content-Type, a preamble and an epilogue, unquoted names, blanks after a delimiter. */
    static const char java[] = "ignored preamble\r\n--a'(b)+_,-./:=?\r\n"
                               "Content-Disposition: form-data; name=activityId\r\n"
                               "Content-Type: text/plain; charset=UTF-8\r\n"
                               "Content-Transfer-Encoding: 8bit\r\n\r\n"
                               "12\r\n--a'(b)+_,-./:=? \t\r\n"
                               "content-disposition: FORM-DATA;name=\"userId\"\r\n\r\n"
                               "5\r\n--a'(b)+_,-./:=?--\r\nepilogue --a'(b)+_,-./:=?\r\n";
    assert_int_equal(get_id(NULL, "Multipart/Form-Data; charset=utf-8; boundary=\"a'(b)+_,-./:=?\"", java,
                            "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 12);
    assert_int_equal(get_id(NULL, "multipart/form-data;boundary=\"a'(b)+_,-./:=?\"", java, "userId", &id, err,
                            sizeof(err)), 0);
    assert_int_equal(id, 5);
}

/* A part is its value byte for byte: nothing is percent-decoded, "+" is no space, "%00" is
 * text, line breaks stay; a name is compared decoded, as a browser encodes a quote (%22). */
static void test_multipart_values_as_sent(void **state)
{
    (void)state;
    struct httpparams p;
    char err[160] = "", out[HTTPPARAMS_VALUE_LEN];
    static const char body[] = PART("orderRef", "a+b%41%00") PART("note", "two\r\nlines\r\n-XyZ--")
                               PART("", "nobody's") PART("say%22hi%22", "x") CLOSE;
    assert_int_equal(httpparams_parse_parts(&p, NULL, MULTIPART, body, strlen(body), err, sizeof(err)), 0);
    assert_int_equal(httpparams_get(&p, "orderRef", out, sizeof(out), err, sizeof(err)), 1);
    assert_string_equal(out, "a+b%41%00");
    assert_int_equal(httpparams_get(&p, "note", out, sizeof(out), err, sizeof(err)), 1);
    assert_string_equal(out, "two\r\nlines\r\n-XyZ--");
    assert_int_equal(httpparams_get(&p, "say\"hi\"", out, sizeof(out), err, sizeof(err)), 1);
    assert_string_equal(out, "x");
    assert_int_equal(httpparams_get(&p, "", out, sizeof(out), err, sizeof(err)), 0);
    httpparams_free(&p);
    /* No part at all (an empty form), and an empty body. */
    assert_int_equal(parse_multipart(MULTIPART, CLOSE, err, sizeof(err)), 0);
    assert_int_equal(parse_multipart(MULTIPART, "", err, sizeof(err)), 0);
}

/* One value per name, as in a query or a form. */
static void test_multipart_conflicts(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    static const char twice[] = PART("userId", "1") PART("userId", "2") CLOSE;
    assert_int_equal(get_id(NULL, MULTIPART, twice, "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId: given twice with different values");
    static const char any_case[] = PART("userId", "1") PART("USERID", "2") CLOSE;
    assert_int_equal(get_id(NULL, MULTIPART, any_case, "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId: given twice with different values");
    static const char same[] = PART("userId", "3") PART("userId", "3") CLOSE;
    assert_int_equal(get_id(NULL, MULTIPART, same, "userId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 3);
    static const char one[] = PART("userId", "4") CLOSE;
    assert_int_equal(get_id("userId=5", MULTIPART, one, "userId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "userId: query and body disagree");
}

#define BAD_BOUNDARY "multipart/form-data: malformed boundary (1 to 70 of RFC 2046's characters)"
#define BAD_PARAMETERS "multipart/form-data: malformed Content-Type parameters"

/* What is refused, each with a message that says why. */
static void test_multipart_refused(void **state)
{
    (void)state;
    static const struct { const char *type, *body, *err; } bad[] = {
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"userId\"; filename=\"a.txt\"\r\n\r\n"
                     "1\r\n" CLOSE, "multipart body: a part with a filename (files are not parameters)" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename*=UTF-8''a\r\n\r\n"
                     "1\r\n" CLOSE, "multipart body: a part with a filename (files are not parameters)" },
        { "multipart/form-data", CLOSE, "multipart/form-data needs a boundary parameter" },
        { "multipart/form-data; charset=utf-8", CLOSE, "multipart/form-data needs a boundary parameter" },
        { "multipart/form-data; boundary=", CLOSE, BAD_PARAMETERS },
        { "multipart/form-data; boundary=\"\"", CLOSE, BAD_BOUNDARY },
        { "multipart/form-data; boundary=\"a\\b\"", CLOSE, BAD_BOUNDARY },
        { "multipart/form-data; boundary=\"ab \"", CLOSE, BAD_BOUNDARY },
        { "multipart/form-data; boundary=1234567890123456789012345678901234567890"
          "1234567890123456789012345678901", CLOSE, BAD_BOUNDARY },
        { "multipart/form-data; boundary=XyZ; boundary=XyZ", CLOSE,
          "multipart/form-data: boundary given twice" },
        { "multipart/form-data; boundary=\"XyZ", CLOSE, BAD_PARAMETERS },
        { "multipart/form-data boundary=XyZ", CLOSE, BAD_PARAMETERS },
        { MULTIPART, "userId=1", "multipart body: no boundary line" },
        { MULTIPART, PART("userId", "1"), "multipart body: ends before its closing boundary" },
        { MULTIPART, PART("userId", "1") "--XyZ", "multipart body: ends before its closing boundary" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"userId\"\r\n\r\n1",
          "multipart body: ends before its closing boundary" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"userId\"\r\n",
          "multipart body: ends inside a part's headers" },
        { MULTIPART, PART("userId", "1") "--XyZjunk\r\n" CLOSE, "multipart body: malformed boundary line" },
        { MULTIPART, "--XyZ\nContent-Disposition: form-data; name=\"userId\"\n\n1\n--XyZ--\n",
          "multipart body: malformed boundary line" },
        { MULTIPART, "--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n" CLOSE,
          "multipart body: a part without Content-Disposition" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: attachment; name=\"userId\"\r\n\r\n1\r\n" CLOSE,
          "multipart body: a part that is not Content-Disposition: form-data" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data\r\n\r\n1\r\n" CLOSE,
          "multipart body: a part without a name" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"a\"; name=\"b\"\r\n\r\n1\r\n" CLOSE,
          "multipart body: a part named twice" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\n1\r\n" CLOSE,
          "multipart body: malformed Content-Disposition" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n"
                     "Content-Disposition: form-data; name=\"b\"\r\n\r\n1\r\n" CLOSE,
          "multipart body: a part with two Content-Disposition headers" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data;\r\n name=\"userId\"\r\n\r\n1\r\n" CLOSE,
          "multipart body: malformed Content-Disposition" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"userId\"\r\n\tx\r\n\r\n1\r\n" CLOSE,
          "multipart body: malformed part header" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"u\"\rx\r\n\r\n1\r\n" CLOSE,
          "multipart body: malformed part header" },
        { MULTIPART, "--XyZ\r\nContent-Disposition: form-data; name=\"userId\"\r\n"
                     "Content-Transfer-Encoding: base64\r\n\r\nMQ==\r\n" CLOSE,
          "multipart body: a Content-Transfer-Encoding other than 7bit, 8bit, binary" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[160];
        if (parse_multipart(bad[i].type, bad[i].body, err, sizeof(err)) != -1)
            fail_msg("case %zu was accepted: %s", i, bad[i].body);
        if (strcmp(err, bad[i].err) != 0)
            fail_msg("case %zu: '%s', expected '%s'", i, err, bad[i].err);
    }
    /* A raw NUL is refused before the parts are read. */
    char err[160];
    static const char raw[] = "--XyZ\r\nContent-Disposition: form-data; name=\"userId\"\r\n\r\n1\0\r\n" CLOSE;
    assert_int_equal(parse_bytes(NULL, MULTIPART, raw, sizeof(raw) - 1, err, sizeof(err)), -1);
    assert_string_equal(err, "NUL byte in a parameter");
    /* Other types still name the three that are read. */
    assert_int_equal(parse_multipart("multipart/mixed; boundary=XyZ", CLOSE, err, sizeof(err)), -1);
    assert_string_equal(err, "unsupported Content-Type (use application/json, "
                             "application/x-www-form-urlencoded or multipart/form-data)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_found),
        cmocka_unit_test(test_id_required),
        cmocka_unit_test(test_id_malformed),
        cmocka_unit_test(test_long_ids),
        cmocka_unit_test(test_json_id_spellings),
        cmocka_unit_test(test_id_conflicts),
        cmocka_unit_test(test_required_text),
        cmocka_unit_test(test_nul_in_json_refused),
        cmocka_unit_test(test_encoded_names),
        cmocka_unit_test(test_pairs_without_name_or_value),
        cmocka_unit_test(test_multipart_ids),
        cmocka_unit_test(test_multipart_values_as_sent),
        cmocka_unit_test(test_multipart_conflicts),
        cmocka_unit_test(test_multipart_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
