/* The admin API's routes and the command lines they become: what seckillctl itself
 * would be given, so that both validate alike. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "admin/adminroutes.h"

static const struct adminroutes_route *find(const char *method, const char *path, char *id, char *allow)
{
    const struct adminroutes_route *r = NULL;
    enum adminroutes_match m = adminroutes_find(method, path, &r, id, 64, allow, 64);
    return m == ADMINROUTES_FOUND ? r : NULL;
}

static void test_paths_and_methods(void **state)
{
    (void)state;
    char id[64], allow[64];
    const struct adminroutes_route *r = find("GET", "/admin/activities/42/verify", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "verify");
    assert_string_equal(id, "42");
    r = find("HEAD", "/admin/stats", id, allow);
    assert_non_null(r);
    assert_string_equal(id, "");
    r = find("POST", "/admin/coupons", id, allow);
    assert_non_null(r);
    assert_int_equal(r->created, 201);

    const struct adminroutes_route *none = NULL;
    assert_int_equal(adminroutes_find("DELETE", "/admin/activities/7", &none, id, 64, allow, 64),
                     ADMINROUTES_WRONG_METHOD);
    assert_string_equal(allow, "GET, HEAD, PATCH");
    assert_int_equal(adminroutes_find("GET", "/admin/activities/7/cancel", &none, id, 64, allow, 64),
                     ADMINROUTES_WRONG_METHOD);
    assert_string_equal(allow, "POST");
    assert_int_equal(adminroutes_find("GET", "/admin/activities//verify", &none, id, 64, allow, 64),
                     ADMINROUTES_NO_PATH);
    assert_int_equal(adminroutes_find("GET", "/admin/activities/7/verify/", &none, id, 64, allow, 64),
                     ADMINROUTES_NO_PATH);
    assert_int_equal(adminroutes_find("GET", "/admin/nothing", &none, id, 64, allow, 64),
                     ADMINROUTES_NO_PATH);
}

static void test_body_becomes_options(void **state)
{
    (void)state;
    char id[64], allow[64], err[256];
    const struct adminroutes_route *r = find("POST", "/admin/coupons", id, allow);
    cJSON *body = cJSON_Parse("{\"name\":\"-x\",\"rate\":0.85,\"total\":100,\"minOrder\":\"10.00\"}");
    char **argv = NULL;
    int argc = 0;
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 4);
    assert_string_equal(argv[0], "--name=-x");
    assert_string_equal(argv[1], "--rate=0.85");
    assert_string_equal(argv[2], "--total=100");
    assert_string_equal(argv[3], "--min-order=10.00");
    adminroutes_free_argv(argv, argc);
    cJSON_Delete(body);

    r = find("POST", "/admin/coupons/9/grant", id, allow);
    body = cJSON_Parse("{\"userId\":1001}");
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 2);
    assert_string_equal(argv[0], "--coupon=9");
    assert_string_equal(argv[1], "--user=1001");
    adminroutes_free_argv(argv, argc);
    cJSON_Delete(body);

    /* A text field given a number is refused, not taken as its digits (the contract
     * types it as a string). */
    r = find("POST", "/admin/coupons/9/grant", id, allow);
    body = cJSON_Parse("{\"userId\":\"1\",\"ref\":0}");
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), -1);
    assert_string_equal(err, "ref: must be a string");
    cJSON_Delete(body);

    /* A user coupon's revocation: its id is the positional, the reason an option. */
    r = find("POST", "/admin/user-coupons/7/revoke", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "coupon revoke");
    body = cJSON_Parse("{\"reason\":\"chargeback\"}");
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 2);
    assert_string_equal(argv[0], "7");
    assert_string_equal(argv[1], "--reason=chargeback");
    adminroutes_free_argv(argv, argc);
    cJSON_Delete(body);

    r = find("GET", "/admin/activities/5", id, allow);
    assert_int_equal(adminroutes_argv(r, id, NULL, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 1);
    assert_string_equal(argv[0], "5");
    adminroutes_free_argv(argv, argc);

    /* The reads the gateway forwards for archived sales (a GET's query as the body). */
    r = find("GET", "/admin/activities/5/orders", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "order find");
    body = cJSON_Parse("{\"userId\":\"1001\"}");
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 2);
    assert_string_equal(argv[0], "--activity=5");
    assert_string_equal(argv[1], "--user=1001");
    adminroutes_free_argv(argv, argc);
    cJSON_Delete(body);
    r = find("GET", "/admin/orders/386208977643421695-1", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "order show");
    assert_int_equal(adminroutes_argv(r, id, NULL, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 1);
    assert_string_equal(argv[0], "386208977643421695-1");
    adminroutes_free_argv(argv, argc);
}

static void test_bad_bodies_are_refused(void **state)
{
    (void)state;
    char id[64], allow[64], err[256];
    const struct adminroutes_route *r = find("POST", "/admin/activities", id, allow);
    char **argv = NULL;
    int argc = 0;
    const char *bad[] = { "{\"stok\":5}", "{\"stock\":true}", "{\"stock\":null}", "{\"name\":[\"a\"]}",
                          "{\"name\":{}}", "[1]" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *body = cJSON_Parse(bad[i]);
        assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), -1);
        assert_true(err[0] != '\0');
        cJSON_Delete(body);
    }
    cJSON *body = cJSON_Parse("{\"stok\":5}");
    adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err));
    assert_non_null(strstr(err, "unknown field 'stok'"));
    assert_non_null(strstr(err, "couponId, stock, start, end, name"));
    cJSON_Delete(body);
    r = find("POST", "/admin/activities/3/cancel", id, allow);
    body = cJSON_Parse("{\"force\":1}");
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), -1);
    cJSON_Delete(body);
}

static void test_messages_name_the_fields(void **state)
{
    (void)state;
    char id[64], allow[64], out[256];
    const struct adminroutes_route *r = find("POST", "/admin/coupons", id, allow);
    adminroutes_words(r, "--min-order '1x': not an amount; --max-discount needs --rate", out, sizeof(out));
    assert_string_equal(out, "minOrder '1x': not an amount; maxDiscount needs rate");
    r = find("POST", "/admin/coupons/9/grant", id, allow);
    adminroutes_words(r, "--user is required", out, sizeof(out));
    assert_string_equal(out, "userId is required");
    adminroutes_words(r, "a message", out, 4);
    assert_string_equal(out, "a m");
}

/* The manual bans: one path with two methods, an id beside a literal segment. */
static void test_ban_routes(void **state)
{
    (void)state;
    char id[64], allow[64], err[256];
    const struct adminroutes_route *r = find("GET", "/admin/bans", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "ban list");
    r = find("POST", "/admin/bans", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "ban add");
    assert_int_equal(r->created, 201);
    cJSON *body = cJSON_Parse("{\"ip\":\"203.0.113.0/24\",\"activityId\":7,\"for\":\"2h\"}");
    char **argv = NULL;
    int argc = 0;
    assert_int_equal(adminroutes_argv(r, id, body, &argv, &argc, err, sizeof(err)), 0);
    assert_int_equal(argc, 3);
    assert_string_equal(argv[0], "--ip=203.0.113.0/24");
    assert_string_equal(argv[1], "--activity=7");
    assert_string_equal(argv[2], "--for=2h");
    adminroutes_free_argv(argv, argc);
    cJSON_Delete(body);
    r = find("DELETE", "/admin/bans/12", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "ban remove");
    assert_string_equal(id, "12");
    /* "sync" is the literal route's, not an id of DELETE's. */
    r = find("POST", "/admin/bans/sync", id, allow);
    assert_non_null(r);
    assert_string_equal(r->command, "ban sync");
    const struct adminroutes_route *none = NULL;
    assert_int_equal(adminroutes_find("DELETE", "/admin/bans/sync", &none, id, 64, allow, 64),
                     ADMINROUTES_WRONG_METHOD);
    assert_string_equal(allow, "POST");
    assert_int_equal(adminroutes_find("POST", "/admin/bans/12", &none, id, 64, allow, 64),
                     ADMINROUTES_WRONG_METHOD);
    assert_string_equal(allow, "DELETE");
    assert_int_equal(adminroutes_find("PUT", "/admin/bans", &none, id, 64, allow, 64),
                     ADMINROUTES_WRONG_METHOD);
    assert_string_equal(allow, "GET, HEAD, POST");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_and_methods),
        cmocka_unit_test(test_body_becomes_options),
        cmocka_unit_test(test_bad_bodies_are_refused),
        cmocka_unit_test(test_messages_name_the_fields),
        cmocka_unit_test(test_ban_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
