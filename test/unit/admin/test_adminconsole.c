/* The console's files compiled into seckill-admin: found by exact name only (no path is
 * ever taken apart, so nothing outside the table can be served), each with its type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "admin/adminconsole.h"

static void test_the_index_and_its_scripts_are_there(void **state)
{
    (void)state;
    const struct adminconsole_asset *index = adminconsole_find("");
    assert_non_null(index);
    assert_string_equal(index->name, "index.html");
    assert_ptr_equal(adminconsole_find("index.html"), index);
    assert_int_equal(strlen((const char *)index->text), index->len);
    assert_non_null(strstr((const char *)index->text, "<script src=\"app.js\"></script>"));
    for (size_t i = 0; i < adminconsole_count; i++)
        assert_ptr_equal(adminconsole_find(adminconsole_assets[i].name), &adminconsole_assets[i]);
    assert_non_null(adminconsole_find("app.js"));
    assert_non_null(adminconsole_find("console.css"));
}

static void test_only_exact_names_are_found(void **state)
{
    (void)state;
    assert_null(adminconsole_find("../admin/stats"));
    assert_null(adminconsole_find("./app.js"));
    assert_null(adminconsole_find("app.js/"));
    assert_null(adminconsole_find("APP.JS"));
    assert_null(adminconsole_find("index.html%00"));
}

static void test_types(void **state)
{
    (void)state;
    assert_string_equal(adminconsole_type("index.html"), "text/html; charset=utf-8");
    assert_string_equal(adminconsole_type("app.js"), "text/javascript; charset=utf-8");
    assert_string_equal(adminconsole_type("console.css"), "text/css; charset=utf-8");
    assert_string_equal(adminconsole_type("js"), "application/octet-stream");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_index_and_its_scripts_are_there),
        cmocka_unit_test(test_only_exact_names_are_found),
        cmocka_unit_test(test_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
