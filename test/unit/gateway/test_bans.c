/* bans: the manual bans a gateway holds from Redis's seckill:bans and checks before any
 * Redis call: users by a hash map, addresses by prefix match, a ban per sale or for all,
 * the end honoured at once, the Retry-After of the refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "gateway/bans.h"

#define T0 INT64_C(1796569579000)
#define MIN INT64_C(60000)

static struct config cfg;

/* A list in force as Redis would hold it: "id=record" strings. */
static struct bans *load(int64_t now, const char *const *entries, size_t n)
{
    static char fields[64][24];
    const char *f[64], *v[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(entries[i], '=');
        assert_non_null(eq);
        snprintf(fields[i], sizeof(fields[i]), "%.*s", (int)(eq - entries[i]), entries[i]);
        f[i] = fields[i];
        v[i] = eq + 1;
    }
    struct bans *b = bans_new(NULL, &cfg, NULL);
    assert_non_null(b);
    assert_true(bans_replace(b, n, f, v, now) >= 0);
    return b;
}

static bool banned(const struct bans *b, int64_t user, const char *ip, int64_t activity, int64_t now,
                   struct bans_hit *hit)
{
    struct bans_hit scratch;
    return bans_find(b, user, ip, activity, now, hit ? hit : &scratch);
}

static void test_no_bans_no_refusal(void **state)
{
    (void)state;
    struct bans *b = load(T0, NULL, 0);
    assert_false(banned(b, 1001, "192.0.2.7", 7, T0, NULL));
    assert_int_equal(bans_in_force(b, T0), 0);
    const char *message = NULL;
    int64_t retry = 0;
    assert_false(bans_refused(b, NULL, 1001, 7, &message, &retry));
    assert_false(bans_refused(NULL, NULL, 1001, 7, &message, &retry));
    bans_free(b);
}

static void test_a_user_ban_for_every_sale_or_one(void **state)
{
    (void)state;
    char every[96], one[96];
    snprintf(every, sizeof(every), "3=user 1001 0 %" PRId64 " %" PRId64, T0, T0 + 10 * MIN);
    snprintf(one, sizeof(one), "4=user 2002 7 %" PRId64 " %" PRId64, T0, T0 + 10 * MIN);
    const char *const list[] = { every, one };
    struct bans *b = load(T0, list, 2);
    struct bans_hit hit;
    assert_true(banned(b, 1001, NULL, 7, T0 + 1, &hit));
    assert_int_equal(hit.id, 3);
    assert_int_equal(hit.kind, BANRECORD_USER);
    assert_true(hit.every_sale);
    assert_int_equal(hit.end_ms, T0 + 10 * MIN);
    assert_true(banned(b, 1001, NULL, 8, T0 + 1, NULL));
    /* Sale 7 only: sale 8 is left alone. */
    assert_true(banned(b, 2002, NULL, 7, T0 + 1, &hit));
    assert_int_equal(hit.id, 4);
    assert_false(hit.every_sale);
    assert_false(banned(b, 2002, NULL, 8, T0 + 1, NULL));
    /* Nobody else. */
    assert_false(banned(b, 1002, NULL, 7, T0 + 1, NULL));
    assert_false(banned(b, 0, NULL, 7, T0 + 1, NULL));
    assert_int_equal(bans_in_force(b, T0 + 1), 2);
    bans_free(b);
}

static void test_the_end_lifts_a_ban_at_once(void **state)
{
    (void)state;
    char rec[96];
    snprintf(rec, sizeof(rec), "1=user 1001 0 %" PRId64 " %" PRId64, T0, T0 + MIN);
    const char *const list[] = { rec };
    struct bans *b = load(T0, list, 1);
    assert_false(banned(b, 1001, NULL, 7, T0 - 1, NULL));  /* not yet */
    assert_true(banned(b, 1001, NULL, 7, T0, NULL));
    assert_true(banned(b, 1001, NULL, 7, T0 + MIN - 1, NULL));
    /* Ended: ignored without a new read of Redis. */
    assert_false(banned(b, 1001, NULL, 7, T0 + MIN, NULL));
    assert_int_equal(bans_in_force(b, T0 + MIN), 0);
    bans_free(b);
    /* Read after its end, it is not even kept. */
    b = load(T0 + MIN, list, 1);
    assert_false(banned(b, 1001, NULL, 7, T0 + MIN - 1, NULL));
    bans_free(b);
}

static void test_a_user_with_several_bans(void **state)
{
    (void)state;
    char recs[4][96];
    snprintf(recs[0], sizeof(recs[0]), "10=user 5 7 %" PRId64 " %" PRId64, T0, T0 + 5 * MIN);
    snprintf(recs[1], sizeof(recs[1]), "11=user 6 0 %" PRId64 " %" PRId64, T0, T0 + 5 * MIN);
    snprintf(recs[2], sizeof(recs[2]), "12=user 5 0 %" PRId64 " %" PRId64, T0, T0 + 2 * MIN);
    snprintf(recs[3], sizeof(recs[3]), "13=user 5 8 %" PRId64 " %" PRId64, T0, T0 + 9 * MIN);
    const char *const list[] = { recs[0], recs[1], recs[2], recs[3] };
    struct bans *b = load(T0, list, 4);
    struct bans_hit hit;
    /* Sale 7: the sale's ban and the one for every sale; the one that ends last answers. */
    assert_true(banned(b, 5, NULL, 7, T0, &hit));
    assert_int_equal(hit.id, 10);
    assert_int_equal(hit.end_ms, T0 + 5 * MIN);
    assert_true(banned(b, 5, NULL, 8, T0, &hit));
    assert_int_equal(hit.id, 13);
    assert_true(banned(b, 5, NULL, 9, T0, &hit));
    assert_int_equal(hit.id, 12);
    /* Once the ban for every sale ended, sale 9 is free, 7 is not. */
    assert_false(banned(b, 5, NULL, 9, T0 + 3 * MIN, NULL));
    assert_true(banned(b, 5, NULL, 7, T0 + 3 * MIN, NULL));
    assert_true(banned(b, 6, NULL, 9, T0, NULL));
    bans_free(b);
}

static void test_address_ranges(void **state)
{
    (void)state;
    char recs[3][128];
    snprintf(recs[0], sizeof(recs[0]), "20=ip 100.64.77.0/24 0 %" PRId64 " %" PRId64, T0, T0 + MIN);
    snprintf(recs[1], sizeof(recs[1]), "21=ip 2001:db8:bad::/48 7 %" PRId64 " %" PRId64, T0, T0 + MIN);
    snprintf(recs[2], sizeof(recs[2]), "22=ip 198.51.100.128/25 7 %" PRId64 " %" PRId64, T0, T0 + 2 * MIN);
    const char *const list[] = { recs[0], recs[1], recs[2] };
    struct bans *b = load(T0, list, 3);
    struct bans_hit hit;
    assert_true(banned(b, 1, "100.64.77.9", 3, T0, &hit));
    assert_int_equal(hit.id, 20);
    assert_int_equal(hit.kind, BANRECORD_ADDRESS);
    assert_true(hit.every_sale);
    assert_false(banned(b, 1, "100.64.78.9", 3, T0, NULL));
    assert_true(banned(b, 1, "::ffff:100.64.77.200", 3, T0, NULL));  /* a dual-stack socket's peer */
    assert_true(banned(b, 1, "2001:db8:bad:ffff::1", 7, T0, &hit));
    assert_int_equal(hit.id, 21);
    assert_false(banned(b, 1, "2001:db8:bad:ffff::1", 8, T0, NULL));
    assert_false(banned(b, 1, "2001:db8:bae::1", 7, T0, NULL));
    assert_true(banned(b, 1, "198.51.100.129", 7, T0, NULL));
    assert_false(banned(b, 1, "198.51.100.127", 7, T0, NULL));
    /* No address known, or none given: only the user counts. */
    assert_false(banned(b, 1, "unknown", 7, T0, NULL));
    assert_false(banned(b, 1, NULL, 7, T0, NULL));
    bans_free(b);
}

static void test_user_and_address_both_banned(void **state)
{
    (void)state;
    char recs[2][128];
    snprintf(recs[0], sizeof(recs[0]), "30=user 42 0 %" PRId64 " %" PRId64, T0, T0 + MIN);
    snprintf(recs[1], sizeof(recs[1]), "31=ip 192.0.2.0/24 0 %" PRId64 " %" PRId64, T0, T0 + 3 * MIN);
    const char *const list[] = { recs[0], recs[1] };
    struct bans *b = load(T0, list, 2);
    struct bans_hit hit;
    assert_true(banned(b, 42, "192.0.2.1", 1, T0, &hit));
    assert_int_equal(hit.id, 31);  /* ends last */
    assert_true(banned(b, 42, "203.0.113.1", 1, T0, &hit));
    assert_int_equal(hit.id, 30);
    assert_true(banned(b, 43, "192.0.2.1", 1, T0, &hit));
    assert_int_equal(hit.id, 31);
    bans_free(b);
}

static void test_version_and_malformed_fields(void **state)
{
    (void)state;
    char rec[96];
    snprintf(rec, sizeof(rec), "7=user 77 0 %" PRId64 " %" PRId64, T0, T0 + MIN);
    static const char *const junk[] = { "version=1796569579849-13294-1-0", "8=user 78 0 oops",
                                        "x=user 79 0 1 2", "9=ip 10.1.2.3/8 0 1 99999999999999", "10=" };
    const char *const list[] = { junk[0], rec, junk[1], junk[2], junk[3], junk[4] };
    struct bans *b = load(T0, list, 6);
    assert_true(banned(b, 77, NULL, 1, T0, NULL));
    assert_false(banned(b, 78, NULL, 1, T0, NULL));
    assert_false(banned(b, 79, NULL, 1, T0, NULL));
    assert_false(banned(b, 1, "10.1.2.3", 1, T0, NULL));
    assert_int_equal(bans_in_force(b, T0), 1);
    bans_free(b);
}

static void test_a_new_list_replaces_the_old(void **state)
{
    (void)state;
    char a[96], c[96];
    snprintf(a, sizeof(a), "1=user 100 0 %" PRId64 " %" PRId64, T0, T0 + MIN);
    snprintf(c, sizeof(c), "2=user 200 0 %" PRId64 " %" PRId64, T0, T0 + MIN);
    const char *const first[] = { a };
    struct bans *b = load(T0, first, 1);
    assert_true(banned(b, 100, NULL, 1, T0, NULL));
    const char *f[] = { "2" }, *v[] = { c + 2 };
    assert_int_equal(bans_replace(b, 1, f, v, T0), 1);
    assert_false(banned(b, 100, NULL, 1, T0, NULL));  /* removed: gone at the next read */
    assert_true(banned(b, 200, NULL, 1, T0, NULL));
    assert_int_equal(bans_replace(b, 0, NULL, NULL, T0), 0);
    assert_false(banned(b, 200, NULL, 1, T0, NULL));
    bans_free(b);
}

static void test_many_users_each_found(void **state)
{
    (void)state;
    /* Thousands of user bans: each found through the map, users in between not. */
    enum { N = 5000 };
    static char fields[N][24], values[N][96];
    static const char *f[N], *v[N];
    for (int i = 0; i < N; i++) {
        snprintf(fields[i], sizeof(fields[i]), "%d", i + 1);
        snprintf(values[i], sizeof(values[i]), "user %d %d %" PRId64 " %" PRId64, 1000 + 2 * (N - i), i % 3,
                 T0, T0 + MIN);
        f[i] = fields[i];
        v[i] = values[i];
    }
    struct bans *b = bans_new(NULL, &cfg, NULL);
    assert_int_equal(bans_replace(b, N, f, v, T0), N);
    for (int i = 0; i < N; i++) {
        int64_t user = 1000 + 2 * (N - i);
        int64_t activity = i % 3 == 0 ? 12345 : i % 3;
        assert_true(banned(b, user, NULL, activity, T0, NULL));
        assert_false(banned(b, user + 1, NULL, activity, T0, NULL));
    }
    bans_free(b);
}

static void test_refusal_says_banned_with_retry_after(void **state)
{
    (void)state;
    int64_t now = clock_wall_ms();
    char recs[3][96];
    snprintf(recs[0], sizeof(recs[0]), "1=user 11 0 %" PRId64 " %" PRId64, now - 1000, now + 1500);
    int64_t month = INT64_C(30) * 86400000;
    snprintf(recs[1], sizeof(recs[1]), "2=user 12 7 %" PRId64 " %" PRId64, now - 1000, now + month);
    snprintf(recs[2], sizeof(recs[2]), "3=user 13 7 %" PRId64 " %" PRId64, now - 1000, now + 600000);
    const char *const list[] = { recs[0], recs[1], recs[2] };
    struct bans *b = load(now, list, 3);
    const char *message = NULL;
    int64_t retry = 0;
    assert_true(bans_refused(b, NULL, 11, 7, &message, &retry));
    assert_string_equal(message, "your account is banned from every sale");
    assert_true(retry >= 1 && retry <= 2);
    /* A long ban says an hour: a ban lifted early is found within it. */
    assert_true(bans_refused(b, NULL, 12, 7, &message, &retry));
    assert_string_equal(message, "your account is banned from this sale");
    assert_int_equal(retry, BANS_RETRY_AFTER_MAX);
    assert_true(bans_refused(b, NULL, 13, 7, &message, &retry));
    assert_true(retry > 590 && retry <= 600);
    assert_false(bans_refused(b, NULL, 12, 8, &message, &retry));
    bans_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_bans_no_refusal),
        cmocka_unit_test(test_a_user_ban_for_every_sale_or_one),
        cmocka_unit_test(test_the_end_lifts_a_ban_at_once),
        cmocka_unit_test(test_a_user_with_several_bans),
        cmocka_unit_test(test_address_ranges),
        cmocka_unit_test(test_user_and_address_both_banned),
        cmocka_unit_test(test_version_and_malformed_fields),
        cmocka_unit_test(test_a_new_list_replaces_the_old),
        cmocka_unit_test(test_many_users_each_found),
        cmocka_unit_test(test_refusal_says_banned_with_retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
