/* Key -> slot as Redis Cluster computes it: the spec's CRC16 test vector, slots Redis
 * itself reports (CLUSTER KEYSLOT), and the hash-tag rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/redisslot.h"

static int slot(const char *key) { return redisslot_of(key, strlen(key)); }

static void test_crc16_spec_vector(void **state)
{
    (void)state;
    assert_int_equal(redisslot_crc16("123456789", 9), 0x31C3);
    assert_int_equal(redisslot_crc16("", 0), 0);
}

static void test_slots_redis_reports(void **state)
{
    (void)state;
    /* Answers of CLUSTER KEYSLOT on redis-server 7.0 */
    assert_int_equal(slot("123456789"), 12739);
    assert_int_equal(slot("foo"), 12182);
    assert_int_equal(slot("bar"), 5061);
    assert_int_equal(slot("seckill:stock:{1}"), slot("1"));
    assert_int_equal(slot("1"), 9842);
}

static void test_tag_rules(void **state)
{
    (void)state;
    /* the tag alone is hashed */
    assert_int_equal(slot("{user1000}.following"), slot("user1000"));
    assert_int_equal(slot("{user1000}.followers"), slot("{user1000}.following"));
    /* the first '{' and the first '}' after it */
    assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
    assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
    /* an empty tag: the whole key, even when a later pair is not empty */
    assert_int_equal(slot("foo{}{bar}"), redisslot_crc16("foo{}{bar}", 10) & 16383);
    assert_int_not_equal(slot("foo{}{bar}"), slot("bar"));
    /* no '}' after the '{': the whole key */
    assert_int_equal(slot("foo{bar"), redisslot_crc16("foo{bar", 7) & 16383);
    assert_int_equal(slot("foo}bar{"), redisslot_crc16("foo}bar{", 8) & 16383);
}

static void test_every_key_of_an_activity_shares_its_slot(void **state)
{
    (void)state;
    const char *keys[] = { "seckill:activity:{42}", "seckill:stock:{42}", "seckill:user:{42}",
                           "seckill:order:{42}", "seckill:resv:{42}", "seckill:rl:ip:{42}:10.0.0.1",
                           "seckill:ban:{42}:7" };
    for (size_t i = 1; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_int_equal(slot(keys[i]), slot(keys[0]));
    assert_int_not_equal(slot("seckill:stock:{42}"), slot("seckill:stock:{43}"));
}

static void test_binary_keys(void **state)
{
    (void)state;
    const char key[] = { 'a', '\0', '{', 'x', '}' };
    assert_int_equal(redisslot_of(key, sizeof(key)), slot("x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc16_spec_vector),
        cmocka_unit_test(test_slots_redis_reports),
        cmocka_unit_test(test_tag_rules),
        cmocka_unit_test(test_every_key_of_an_activity_shares_its_slot),
        cmocka_unit_test(test_binary_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
