/* librdkafka set-up shared by the producer and the consumer: a bad property names the
 * setting as our config file spells it, and librdkafka's syslog levels map onto ours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/kafkaconf.h"

static void test_log_levels(void **state)
{
    (void)state;
    static const struct { int syslog; enum log_level ours; } map[] = {
        { 0, LOG_LEVEL_ERROR }, { 3, LOG_LEVEL_ERROR }, { 4, LOG_LEVEL_WARN },
        { 5, LOG_LEVEL_INFO },  { 6, LOG_LEVEL_INFO },  { 7, LOG_LEVEL_DEBUG },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        assert_int_equal(kafkaconf_log_level(map[i].syslog), map[i].ours);
}

static void test_bad_pair_names_the_config_key(void **state)
{
    (void)state;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char key1[] = "linger.ms", value1[] = "3", key2[] = "no.such.property", value2[] = "1";
    struct config_pair pairs[] = { { key1, value1 }, { key2, value2 } };
    char err[512] = "";
    assert_int_equal(kafkaconf_set_pairs(conf, "kafka.producer.", pairs, 1, err, sizeof(err)), 0);
    char got[32];
    size_t len = sizeof(got);
    assert_int_equal(rd_kafka_conf_get(conf, "linger.ms", got, &len), RD_KAFKA_CONF_OK);
    assert_string_equal(got, "3");
    assert_int_equal(kafkaconf_set_pairs(conf, "kafka.producer.", pairs, 2, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "kafka.producer.no.such.property: "));
    assert_int_equal(kafkaconf_set(conf, "kafka.brokers", "bootstrap.servers", "127.0.0.1:1", err,
                                   sizeof(err)), 0);
    assert_int_equal(kafkaconf_set(conf, "kafka.producer.acks", "acks", "sometimes", err, sizeof(err)), -1);
    assert_true(strncmp(err, "kafka.producer.acks: ", 21) == 0);
    rd_kafka_conf_destroy(conf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_bad_pair_names_the_config_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
