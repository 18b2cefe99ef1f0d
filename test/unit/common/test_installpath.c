/* Paths of an installed tree found from the binary's own directory: the directory of the
 * running program, ".." resolved where the path exists, a path that does not exist named
 * as it would be, and a buffer too short refused rather than cut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/installpath.h"

static void own_dir(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(out, len, "%s", exe);
}

static void test_resolves_from_the_binary_directory(void **state)
{
    (void)state;
    char dir[PATH_MAX], got[PATH_MAX], want[PATH_MAX + 8];
    own_dir(dir, sizeof(dir));
    assert_int_equal(installpath_from_bin(".", got, sizeof(got)), 0);
    assert_string_equal(got, dir);
    /* build/asan/test/common/.. is build/asan/test: the short form, as an operator reads it */
    assert_int_equal(installpath_from_bin("..", got, sizeof(got)), 0);
    snprintf(want, sizeof(want), "%s", dir);
    *strrchr(want, '/') = '\0';
    assert_string_equal(got, want);
}

static void test_missing_path_is_named_as_joined(void **state)
{
    (void)state;
    char dir[PATH_MAX], got[PATH_MAX], want[PATH_MAX + 64];
    own_dir(dir, sizeof(dir));
    assert_int_equal(installpath_from_bin("../etc/seckill/none.conf", got, sizeof(got)), 0);
    snprintf(want, sizeof(want), "%s/../etc/seckill/none.conf", dir);
    assert_string_equal(got, want);
}

static void test_short_buffer_is_refused(void **state)
{
    (void)state;
    char got[4];
    assert_int_equal(installpath_from_bin(".", got, sizeof(got)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolves_from_the_binary_directory),
        cmocka_unit_test(test_missing_path_is_named_as_joined),
        cmocka_unit_test(test_short_buffer_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
