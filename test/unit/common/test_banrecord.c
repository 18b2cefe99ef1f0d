/* banrecord: the address ranges of the manual bans and the record text Redis carries to the
 * gateways; everything an operator can mistype is refused, never widened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "common/banrecord.h"

static struct banrecord_cidr cidr(const char *text)
{
    struct banrecord_cidr c;
    char err[200];
    assert_int_equal(banrecord_cidr_parse(text, &c, err, sizeof(err)), 0);
    return c;
}

static void refused(const char *text, const char *why)
{
    struct banrecord_cidr c;
    char err[200] = "";
    assert_int_equal(banrecord_cidr_parse(text, &c, err, sizeof(err)), -1);
    if (!strstr(err, why))
        fail_msg("'%s': error '%s' does not say '%s'", text, err, why);
}

static bool holds(const char *range, const char *client)
{
    struct banrecord_cidr c = cidr(range);
    int family;
    uint8_t addr[16];
    assert_int_equal(banrecord_address(client, &family, addr), 0);
    return banrecord_cidr_contains(&c, family, addr);
}

static void formats_as(const char *text, const char *want)
{
    struct banrecord_cidr c = cidr(text);
    char out[BANRECORD_CIDR_LEN];
    assert_true(banrecord_cidr_format(&c, out, sizeof(out)) > 0);
    assert_string_equal(out, want);
}

static void test_networks_of_both_families(void **state)
{
    (void)state;
    formats_as("203.0.113.0/24", "203.0.113.0/24");
    formats_as("192.0.2.7", "192.0.2.7/32");
    formats_as("0.0.0.0/0", "0.0.0.0/0");
    formats_as("2001:db8::/32", "2001:db8::/32");
    formats_as("2001:0DB8:0:0::/48", "2001:db8::/48");
    formats_as("::1", "::1/128");
    formats_as("::/0", "::/0");
    /* A client behind a dual-stack socket is IPv4: so is its range. */
    formats_as("::ffff:192.0.2.0/120", "192.0.2.0/24");
    formats_as("::ffff:192.0.2.7", "192.0.2.7/32");
}

static void test_mistakes_are_refused(void **state)
{
    (void)state;
    refused("", "not an IPv4 or IPv6 address");
    refused("10.0.0", "not an IPv4 or IPv6 address");
    refused("10.0.0.256/8", "not an IPv4 or IPv6 address");
    refused("example.com", "not an IPv4 or IPv6 address");
    refused("fe80::1%eth0/64", "not an IPv4 or IPv6 address");
    refused(" 10.0.0.0/8", "not an IPv4 or IPv6 address");
    refused("10.0.0.0/33", "prefix /33 is too long for an IPv4 address (at most /32)");
    refused("2001:db8::/129", "prefix /129 is too long for an IPv6 address (at most /128)");
    refused("10.0.0.0/", "the prefix after '/' must be a number from 0 to 32");
    refused("10.0.0.0/-1", "from 0 to 32");
    refused("10.0.0.0/08", "from 0 to 32");
    refused("10.0.0.0/8 ", "from 0 to 32");
    refused("10.0.0.0/1000", "from 0 to 32");
    refused("2001:db8::/+32", "from 0 to 128");
    /* A typo must not ban a wider range than meant: the error names the network. */
    refused("10.1.2.3/8", "bits are set past the prefix /8 (the network would be 10.0.0.0/8)");
    refused("2001:db8::1/64", "(the network would be 2001:db8::/64)");
}

static void test_prefix_matching(void **state)
{
    (void)state;
    assert_true(holds("203.0.113.0/24", "203.0.113.0"));
    assert_true(holds("203.0.113.0/24", "203.0.113.255"));
    assert_false(holds("203.0.113.0/24", "203.0.114.0"));
    assert_false(holds("203.0.113.0/24", "203.0.112.255"));
    /* A prefix that ends inside a byte. */
    assert_true(holds("198.51.100.128/25", "198.51.100.200"));
    assert_false(holds("198.51.100.128/25", "198.51.100.127"));
    assert_true(holds("100.64.0.0/10", "100.127.255.255"));
    assert_false(holds("100.64.0.0/10", "100.128.0.0"));
    assert_true(holds("192.0.2.7", "192.0.2.7"));
    assert_false(holds("192.0.2.7", "192.0.2.8"));
    assert_true(holds("0.0.0.0/0", "8.8.8.8"));
    assert_true(holds("2001:db8:bad::/48", "2001:db8:bad:1::7"));
    assert_false(holds("2001:db8:bad::/48", "2001:db8:bae::7"));
    assert_true(holds("2001:db8::/31", "2001:db9::1"));
    assert_false(holds("2001:db8::/32", "2001:db9::1"));
    assert_true(holds("::/0", "::1"));
    /* The families never meet: an IPv6 range holds no IPv4 client and the reverse. */
    assert_false(holds("::/0", "192.0.2.7"));
    assert_false(holds("0.0.0.0/0", "2001:db8::1"));
    /* A mapped client address is its IPv4 one. */
    assert_true(holds("192.0.2.0/24", "::ffff:192.0.2.9"));
    int family;
    uint8_t addr[16];
    assert_int_equal(banrecord_address("unknown", &family, addr), -1);
    assert_int_equal(banrecord_address("", &family, addr), -1);
}

static void test_records_round_trip(void **state)
{
    (void)state;
    struct banrecord r;
    memset(&r, 0, sizeof(r));
    r.kind = BANRECORD_USER;
    r.user_id = 1001;
    r.activity_id = 7;
    r.start_ms = 1000;
    r.end_ms = 61000;
    char text[BANRECORD_LEN];
    assert_true(banrecord_encode(&r, text, sizeof(text)) > 0);
    assert_string_equal(text, "user 1001 7 1000 61000");
    struct banrecord back;
    assert_int_equal(banrecord_decode(text, &back), 0);
    assert_int_equal(back.kind, BANRECORD_USER);
    assert_int_equal(back.user_id, 1001);
    assert_int_equal(back.activity_id, 7);
    assert_int_equal(back.start_ms, 1000);
    assert_int_equal(back.end_ms, 61000);

    memset(&r, 0, sizeof(r));
    r.kind = BANRECORD_ADDRESS;
    r.cidr = cidr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124");
    r.start_ms = 1796569579816;
    r.end_ms = 9223372036854775807LL;
    assert_true(banrecord_encode(&r, text, sizeof(text)) > 0);
    assert_string_equal(text,
                        "ip ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124 0 1796569579816 9223372036854775807");
    assert_int_equal(banrecord_decode(text, &back), 0);
    assert_int_equal(back.kind, BANRECORD_ADDRESS);
    assert_int_equal(back.cidr.family, AF_INET6);
    assert_int_equal(back.cidr.prefix, 124);
    assert_int_equal(back.activity_id, 0);
    /* The longest record fits the buffer with room. */
    assert_true(strlen(text) < BANRECORD_LEN);
}

static void test_malformed_records_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "user 1001 0 1000",
        "user 1001 0 1000 2000 3000",
        "user 1001 0 1000 2000 ",
        "user  1001 0 1000 2000",
        "user 0 0 1000 2000",
        "user -5 0 1000 2000",
        "user 1001 -1 1000 2000",
        "user 1001 0 2000 2000",
        "user 1001 0 3000 2000",
        "user 1001 0 1000 2x",
        "User 1001 0 1000 2000",
        "ip 10.1.2.3/8 0 1000 2000",
        "ip 10.0.0.1 0 1000 2000",
        "ip 10.0.0.0/33 0 1000 2000",
        "ip nowhere/8 0 1000 2000",
        "coupon 1 0 1000 2000",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct banrecord r;
        if (banrecord_decode(bad[i], &r) == 0)
            fail_msg("'%s' decoded", bad[i]);
    }
    struct banrecord r;
    assert_int_equal(banrecord_decode("ip 10.0.0.0/8 3 1000 2000", &r), 0);
}

static void test_when_and_where_a_ban_applies(void **state)
{
    (void)state;
    struct banrecord every, one;
    assert_int_equal(banrecord_decode("user 1 0 1000 2000", &every), 0);
    assert_int_equal(banrecord_decode("user 1 7 1000 2000", &one), 0);
    assert_true(banrecord_applies(&every, 7, 1000));
    assert_true(banrecord_applies(&every, 8, 1999));
    assert_false(banrecord_applies(&every, 7, 999));
    assert_false(banrecord_applies(&every, 7, 2000));   /* ends at its end */
    assert_true(banrecord_applies(&one, 7, 1500));
    assert_false(banrecord_applies(&one, 8, 1500));     /* another sale */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_networks_of_both_families),
        cmocka_unit_test(test_mistakes_are_refused),
        cmocka_unit_test(test_prefix_matching),
        cmocka_unit_test(test_records_round_trip),
        cmocka_unit_test(test_malformed_records_are_refused),
        cmocka_unit_test(test_when_and_where_a_ban_applies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
