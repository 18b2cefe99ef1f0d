/* SHA-1 against published vectors (FIPS 180 examples) and digests precomputed with
 * coreutils `sha1sum`, around the padding boundaries (55/56 and 63/64/65 bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/sha1.h"

static void check(const void *data, size_t len, const char *want)
{
    char out[41];
    memset(out, 'x', sizeof(out));
    sha1_hex(data, len, out);
    assert_int_equal(out[40], '\0');
    assert_string_equal(out, want);
}

/* Hashes n bytes of 'a' from an exact-size heap buffer (ASan sees over-reads). */
static void check_a(size_t n, const char *want)
{
    char *buf = malloc(n ? n : 1);
    assert_non_null(buf);
    memset(buf, 'a', n);
    check(buf, n, want);
    free(buf);
}

static void test_published_vectors(void **state)
{
    (void)state;
    check("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    check("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    const char *s56 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(strlen(s56), 56);
    check(s56, 56, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    const char *fox = "The quick brown fox jumps over the lazy dog";
    check(fox, strlen(fox), "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

static void test_million_a(void **state)
{
    (void)state;
    check_a(1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

static void test_padding_boundaries(void **state)
{
    (void)state;
    static const struct { size_t n; const char *want; } cases[] = {
        { 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a" },
        { 56, "c2db330f6083854c99d4b5bfb6e8f29f201be699" },
        { 63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5" },
        { 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d" },
        { 65, "11655326c708d70319be2610e8a57d9a5b959d3b" },
        { 119, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56" },
        { 120, "f34c1488385346a55709ba056ddd08280dd4c6d6" },
        { 127, "89d95fa32ed44a7c610b7ee38517ddf57e0bb975" },
        { 128, "ad5b3fdbcb526778c2839d2f151ea753995e26a0" },
        { 129, "d96debf1bdcbc896e6c134ea76e8141f40d78536" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_a(cases[i].n, cases[i].want);
}

static void test_all_byte_values(void **state)
{
    (void)state;
    unsigned char bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (unsigned char)i;
    check(bytes, sizeof(bytes), "4916d6bdb7f78e6803698cab32d1586ea457dfc8");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_vectors),
        cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_padding_boundaries),
        cmocka_unit_test(test_all_byte_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
