/* Redis key names: every key of one activity carries the hash tag {activityId} (one slot
 * per activity, Redis Cluster ready), the configured prefixes are honoured, and a prefix
 * too long for a key is refused rather than truncated into another activity's key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/keys.h"

static void test_set_has_every_key_with_the_hash_tag(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    struct keys_set set;
    assert_int_equal(keys_set_build(&set, &cfg, 42), 0);
    assert_int_equal(set.activity_id, 42);
    assert_string_equal(set.name[KEYS_ACTIVITY], "seckill:activity:{42}");
    assert_string_equal(set.name[KEYS_STOCK], "seckill:stock:{42}");
    assert_string_equal(set.name[KEYS_USERS], "seckill:user:{42}");
    assert_string_equal(set.name[KEYS_ORDERS], "seckill:order:{42}");
    assert_string_equal(set.name[KEYS_RESERVED], "seckill:resv:{42}");
    assert_string_equal(set.name[KEYS_QUEUED], "seckill:queued:{42}");
    assert_string_equal(set.name[KEYS_CLAIMED], "seckill:claimed:{42}");
    config_free(&cfg);
}

static void test_set_matches_single_keys_and_prefixes(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    char err[256];
    assert_int_equal(config_set(&cfg, "seckill.stock.prefix", "shop:s", err, sizeof(err)), 0);
    assert_int_equal(config_set(&cfg, "seckill.user.prefix", "shop:u", err, sizeof(err)), 0);
    struct keys_set set;
    assert_int_equal(keys_set_build(&set, &cfg, 9007199254740991LL), 0);
    assert_string_equal(set.name[KEYS_STOCK], "shop:s:{9007199254740991}");
    assert_string_equal(set.name[KEYS_USERS], "shop:u:{9007199254740991}");
    for (int kind = 0; kind < KEYS_KIND_COUNT; kind++) {
        char one[KEYS_LEN];
        assert_true(keys_activity(one, sizeof(one), &cfg, (enum keys_kind)kind, 9007199254740991LL) > 0);
        assert_string_equal(one, set.name[kind]);
    }
    config_free(&cfg);
}

static void test_too_long_prefix_is_refused(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    char err[256], prefix[KEYS_LEN + 10];
    memset(prefix, 'p', sizeof(prefix) - 1);
    prefix[sizeof(prefix) - 1] = '\0';
    assert_int_equal(config_set(&cfg, "seckill.stock.prefix", prefix, err, sizeof(err)), 0);
    struct keys_set set;
    assert_int_equal(keys_set_build(&set, &cfg, 1), -1);
    char small[8];
    assert_int_equal(keys_activity(small, sizeof(small), &cfg, KEYS_ORDERS, 1), -1);
    config_free(&cfg);
}

static void test_subject_keys_share_the_activity_slot(void **state)
{
    (void)state;
    char buf[KEYS_LEN];
    assert_true(keys_subject(buf, sizeof(buf), KEYS_RATE_IP, 5, "10.0.0.1") > 0);
    assert_string_equal(buf, "seckill:rl:ip:{5}:10.0.0.1");
    assert_true(keys_subject(buf, sizeof(buf), KEYS_BAN, 5, "77") > 0);
    assert_string_equal(buf, "seckill:ban:{5}:77");
    assert_true(keys_subject(buf, sizeof(buf), KEYS_TOKEN, 5, "abc") > 0);
    assert_string_equal(buf, "seckill:token:{5}:abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_has_every_key_with_the_hash_tag),
        cmocka_unit_test(test_set_matches_single_keys_and_prefixes),
        cmocka_unit_test(test_too_long_prefix_is_refused),
        cmocka_unit_test(test_subject_keys_share_the_activity_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
