/* jwt_verify and jwt_check on tokens jwt_sign makes: exp is required unless the rules
 * waive it; iss and aud are checked when the rules name them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gateway/jwt.h"

#define SECRET "unit-test-jwt-secret-0123456789-abcdef"
#define NOW 1800000000

static const char *sign(const char *payload)
{
    static char token[2048];
    assert_true(jwt_sign(payload, SECRET, token, sizeof(token)) > 0);
    return token;
}

static enum jwt_result check(const char *payload, bool require_exp, const char *iss, const char *aud,
                             int64_t *user)
{
    struct jwt_rules rules = {
        .secret = SECRET, .now_s = NOW, .skew_s = 30, .require_exp = require_exp,
        .issuer = iss, .audience = aud,
    };
    return jwt_check(sign(payload), &rules, user);
}

static void test_exp_required_by_default(void **state)
{
    (void)state;
    int64_t user = 0;
    assert_int_not_equal(jwt_verify(sign("{\"sub\":\"42\"}"), SECRET, NOW, 30, &user), JWT_OK);
    assert_int_equal(jwt_verify(sign("{\"sub\":\"42\"}"), SECRET, NOW, 30, &user), JWT_NO_EXPIRY);
    assert_string_equal(jwt_result_text(JWT_NO_EXPIRY), "token has no expiry (exp)");
    assert_int_equal(jwt_verify(sign("{\"sub\":\"42\",\"exp\":1800000600}"), SECRET, NOW, 30, &user), JWT_OK);
    assert_int_equal(user, 42);
    assert_int_equal(check("{\"sub\":\"42\"}", true, NULL, NULL, &user), JWT_NO_EXPIRY);
    /* an exp that is not a number is refused too */
    assert_int_equal(check("{\"sub\":\"42\",\"exp\":null}", true, NULL, NULL, &user), JWT_MALFORMED);
}

static void test_exp_waived(void **state)
{
    (void)state;
    int64_t user = 0;
    assert_int_equal(check("{\"sub\":\"43\"}", false, "", "", &user), JWT_OK);
    assert_int_equal(user, 43);
    /* a given exp still counts */
    assert_int_equal(check("{\"sub\":\"43\",\"exp\":1799999000}", false, NULL, NULL, &user), JWT_EXPIRED);
}

static void test_issuer(void **state)
{
    (void)state;
    int64_t user = 0;
    const char *iss = "https://login.example.test";
    assert_int_equal(check("{\"sub\":\"1\",\"exp\":1800000600,"
                           "\"iss\":\"https://login.example.test\"}", true, iss, NULL, &user), JWT_OK);
    static const char *const bad[] = {
        "{\"sub\":\"1\",\"exp\":1800000600}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"iss\":\"https://login.example.test/\"}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"iss\":\"https://login.example\"}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"iss\":7}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"iss\":[\"https://login.example.test\"]}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"iss\":\"HTTPS://LOGIN.EXAMPLE.TEST\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(check(bad[i], true, iss, NULL, &user), JWT_WRONG_ISSUER);
    /* not configured: not looked at */
    assert_int_equal(check(bad[3], true, "", NULL, &user), JWT_OK);
    assert_int_equal(check(bad[3], true, NULL, NULL, &user), JWT_OK);
}

static void test_audience(void **state)
{
    (void)state;
    int64_t user = 0;
    static const char *const good[] = {
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":\"seckill\"}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":[\"seckill\"]}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":[\"other\",7,\"seckill\"]}",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(check(good[i], true, NULL, "seckill", &user), JWT_OK);
    static const char *const bad[] = {
        "{\"sub\":\"1\",\"exp\":1800000600}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":\"seckill2\"}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":\"seck\"}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":[]}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":[\"other\",\"seckill-admin\"]}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":7}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":{\"seckill\":1}}",
        "{\"sub\":\"1\",\"exp\":1800000600,\"aud\":[[\"seckill\"]]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(check(bad[i], true, NULL, "seckill", &user), JWT_WRONG_AUDIENCE);
    assert_int_equal(check(bad[5], true, NULL, "", &user), JWT_OK);
    /* both configured: both must hold */
    assert_int_equal(check("{\"sub\":\"1\",\"exp\":1800000600,\"iss\":\"i\",\"aud\":\"seckill\"}", true, "i",
                           "seckill", &user), JWT_OK);
    assert_int_equal(check("{\"sub\":\"1\",\"exp\":1800000600,\"iss\":\"j\",\"aud\":\"seckill\"}", true, "i",
                           "seckill", &user), JWT_WRONG_ISSUER);
    assert_int_equal(check("{\"sub\":\"1\",\"exp\":1800000600,\"iss\":\"i\",\"aud\":\"x\"}", true, "i",
                           "seckill", &user), JWT_WRONG_AUDIENCE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp_required_by_default),
        cmocka_unit_test(test_exp_waived),
        cmocka_unit_test(test_issuer),
        cmocka_unit_test(test_audience),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
