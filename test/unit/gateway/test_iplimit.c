/* The local per-IP limit: one bucket per client address in a fixed table, keyed by a
 * secret hash, where nobody can share a victim's bucket or make it refuse the victim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>

#include "gateway/iplimit.h"

#define SEC 1000000LL
#define T0 (1000 * SEC)

static const uint8_t KEY[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

static int takes(struct iplimit *t, const char *ip, int64_t now, int limit)
{
    int n = 0;
    while (n < limit && iplimit_take(t, ip, now, NULL))
        n++;
    return n;
}

static void test_siphash_reference_vector(void **state)
{
    (void)state;
    /* The paper's example: key 00..0f, message 00..0e. */
    uint8_t msg[15];
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    assert_true(iplimit_siphash(KEY, msg, sizeof(msg)) == 0xa129ca6149be45e5ULL);
}

static void test_each_address_has_its_own_share(void **state)
{
    (void)state;
    struct iplimit *t = iplimit_new(5, 10, 4096, KEY);
    assert_non_null(t);
    assert_int_equal(takes(t, "10.0.0.1", T0, 100), 10);
    int64_t retry = 0;
    assert_false(iplimit_take(t, "10.0.0.1", T0, &retry));
    assert_int_equal(retry, 1);
    /* Another client is untouched by the first one's flood. */
    assert_int_equal(takes(t, "10.0.0.2", T0, 100), 10);
    /* The share comes back at its rate: 5 a second. */
    assert_int_equal(takes(t, "10.0.0.1", T0 + SEC, 100), 5);
    iplimit_free(t);
}

static void test_retry_after_counts_to_the_next_permit(void **state)
{
    (void)state;
    /* 1 permit a second: a quarter second after taking it, 0.75 s are missing. */
    struct iplimit *slow = iplimit_new(1, 1, 64, KEY);
    assert_true(iplimit_take(slow, "192.0.2.7", T0, NULL));
    int64_t retry = 0;
    assert_false(iplimit_take(slow, "192.0.2.7", T0 + SEC / 4, &retry));
    assert_int_equal(retry, 1);   /* 0.75 s missing rounds up to 1 */
    assert_true(iplimit_take(slow, "192.0.2.7", T0 + SEC, NULL));
    iplimit_free(slow);
}

static void test_ipv6_counts_per_64_and_mapped_ipv4_is_ipv4(void **state)
{
    (void)state;
    struct iplimit *t = iplimit_new(1, 4, 4096, KEY);
    assert_int_equal(takes(t, "2001:db8:1:2::1", T0, 2), 2);
    assert_int_equal(takes(t, "2001:db8:1:2:ffff:ffff:ffff:ffff", T0, 10), 2);
    assert_false(iplimit_take(t, "2001:db8:1:2::99", T0, NULL));
    assert_int_equal(takes(t, "2001:db8:1:3::1", T0, 10), 4);   /* the next /64 */
    assert_int_equal(takes(t, "198.51.100.4", T0, 3), 3);
    assert_int_equal(takes(t, "::ffff:198.51.100.4", T0, 10), 1);
    /* Text that is no address is one client. */
    assert_int_equal(takes(t, "unknown", T0, 10), 4);
    assert_false(iplimit_take(t, "garbage", T0, NULL));
    iplimit_free(t);
}

/* A table of one set (IPLIMIT_WAYS entries): every address collides with every other. */
static void test_colliding_addresses_never_share_a_bucket(void **state)
{
    (void)state;
    struct iplimit *t = iplimit_new(1, 3, IPLIMIT_WAYS, KEY);
    char ip[32];
    assert_int_equal(takes(t, "10.1.0.0", T0, 10), 3);
    for (int i = 1; i < IPLIMIT_WAYS; i++) {
        snprintf(ip, sizeof(ip), "10.1.0.%d", i);
        assert_int_equal(takes(t, ip, T0, 10), 3);
    }
    assert_false(iplimit_take(t, "10.1.0.0", T0, NULL));
    iplimit_free(t);
}

static void test_eviction_forgets_the_richest_never_a_client_in_debt(void **state)
{
    (void)state;
    struct iplimit *t = iplimit_new(1, 5, IPLIMIT_WAYS, KEY);
    /* The flooder empties its bucket; the others each took one permit. */
    assert_int_equal(takes(t, "203.0.113.66", T0, 100), 5);
    char ip[32];
    for (int i = 1; i < IPLIMIT_WAYS; i++) {
        snprintf(ip, sizeof(ip), "198.51.100.%d", i);
        assert_true(iplimit_take(t, ip, T0, NULL));
    }
    /* A crowd of new addresses, many times the set's size: each newcomer gets a full
     * bucket, and the flooder in debt is never the one forgotten. */
    for (int i = 0; i < 50 * IPLIMIT_WAYS; i++) {
        snprintf(ip, sizeof(ip), "192.0.2.%d", i % 250);
        assert_true(iplimit_take(t, ip, T0, NULL));
        assert_false(iplimit_take(t, "203.0.113.66", T0, NULL));
    }
    iplimit_free(t);
}

static void test_a_full_table_still_admits_newcomers(void **state)
{
    (void)state;
    struct iplimit *t = iplimit_new(1, 2, IPLIMIT_WAYS, KEY);
    char ip[32];
    for (int i = 0; i < IPLIMIT_WAYS; i++) {
        snprintf(ip, sizeof(ip), "10.9.0.%d", i);
        assert_int_equal(takes(t, ip, T0, 10), 2);   /* every way in debt */
    }
    /* The newcomer evicts one debtor and is served in full; the evicted one comes back
     * with a fresh bucket: forgetting only ever gives, never refuses. */
    assert_int_equal(takes(t, "10.9.1.1", T0, 10), 2);
    int again = 0;
    for (int i = 0; i < IPLIMIT_WAYS; i++) {
        snprintf(ip, sizeof(ip), "10.9.0.%d", i);
        again += iplimit_take(t, ip, T0, NULL);
    }
    assert_true(again >= 1);
    iplimit_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_reference_vector),
        cmocka_unit_test(test_each_address_has_its_own_share),
        cmocka_unit_test(test_retry_after_counts_to_the_next_permit),
        cmocka_unit_test(test_ipv6_counts_per_64_and_mapped_ipv4_is_ipv4),
        cmocka_unit_test(test_colliding_addresses_never_share_a_bucket),
        cmocka_unit_test(test_eviction_forgets_the_richest_never_a_client_in_debt),
        cmocka_unit_test(test_a_full_table_still_admits_newcomers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
