/* The scripts' bodies as luascript_load_all builds them from schema/lua (SK_LUA_DIR):
 * prelude.lua, a newline, the script's file; named by the SHA-1 of that body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/luascript.h"
#include "common/sha1.h"

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void test_every_body_is_the_prelude_then_its_file(void **state)
{
    (void)state;
    struct luascript_set set;
    char err[256] = "";
    assert_int_equal(luascript_load_all(&set, SK_LUA_DIR, err, sizeof(err)), 0);
    size_t prelude_len;
    char *prelude = slurp(SK_LUA_DIR, LUASCRIPT_PRELUDE, &prelude_len);
    assert_non_null(strstr(prelude, "local function publish_final"));
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        const struct luascript *s = &set.scripts[i];
        char file[64];
        snprintf(file, sizeof(file), "%s.lua", s->name);
        size_t text_len;
        char *text = slurp(SK_LUA_DIR, file, &text_len);
        assert_int_equal(s->body_len, prelude_len + 1 + text_len);
        assert_memory_equal(s->body, prelude, prelude_len);
        assert_int_equal(s->body[prelude_len], '\n');
        assert_memory_equal(s->body + prelude_len + 1, text, text_len);
        char sha[41];
        sha1_hex(s->body, s->body_len, sha);
        assert_string_equal(s->sha, sha);
        free(text);
    }
    free(prelude);
    luascript_free_all(&set);
}

static void test_a_directory_without_the_prelude_is_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/seckill-lua-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct luascript_set set;
    char err[256] = "";
    assert_int_equal(luascript_load_all(&set, dir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, LUASCRIPT_PRELUDE));
    assert_non_null(strstr(err, "seckill.lua-dir"));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_body_is_the_prelude_then_its_file),
        cmocka_unit_test(test_a_directory_without_the_prelude_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
