/* httpparams_get_required and httpparams_get_id, on parameters parsed from request parts
 * (httpparams_parse_parts: no evhttp request, no I/O). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gateway/httpparams.h"

static const char JSON[] = "application/json";
static const char FORM[] = "application/x-www-form-urlencoded";

/* The id `name` from a request of query and body; returns httpparams_get_id's result. */
static int get_id(const char *query, const char *type, const char *body, const char *name, int64_t *id,
                  char *err, size_t errlen)
{
    struct httpparams p;
    err[0] = '\0';
    int rc = httpparams_parse_parts(&p, query, type, body, body ? strlen(body) : 0, err, errlen);
    assert_int_equal(rc, 0);
    rc = httpparams_get_id(&p, name, id, err, errlen);
    httpparams_free(&p);
    return rc;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_found),
        cmocka_unit_test(test_id_required),
        cmocka_unit_test(test_id_malformed),
        cmocka_unit_test(test_json_id_spellings),
        cmocka_unit_test(test_id_conflicts),
        cmocka_unit_test(test_required_text),
        cmocka_unit_test(test_nul_in_json_refused),
        cmocka_unit_test(test_encoded_names),
        cmocka_unit_test(test_pairs_without_name_or_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
