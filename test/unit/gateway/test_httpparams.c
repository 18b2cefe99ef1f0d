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
    assert_int_equal(get_id(NULL, JSON, "{\"activityId\":9007199254740991}", "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 9007199254740991LL);
    assert_int_equal(get_id(NULL, JSON, "{\"activityId\":\"12\"}", "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 12);
    assert_int_equal(get_id(NULL, FORM, "activityId=5", "activityId", &id, err, sizeof(err)), 0);
    assert_int_equal(id, 5);
    /* query and body agreeing is fine */
    assert_int_equal(get_id("activityId=3", JSON, "{\"activityId\":3}", "activityId", &id, err, sizeof(err)), 0);
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

static void test_id_conflicts(void **state)
{
    (void)state;
    char err[160];
    int64_t id = 0;
    assert_int_equal(get_id("activityId=1&activityId=2", NULL, NULL, "activityId", &id, err, sizeof(err)), -1);
    assert_string_equal(err, "activityId: given twice with different values");
    assert_int_equal(get_id("activityId=1", JSON, "{\"activityId\":2}", "activityId", &id, err, sizeof(err)), -1);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_found),
        cmocka_unit_test(test_id_required),
        cmocka_unit_test(test_id_malformed),
        cmocka_unit_test(test_id_conflicts),
        cmocka_unit_test(test_required_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
