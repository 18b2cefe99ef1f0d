#include "common/kafkaconf.h"

#include <stdio.h>

int kafkaconf_set(rd_kafka_conf_t *conf, const char *label, const char *key, const char *value,
                  char *err, size_t errlen)
{
    char why[256];
    if (rd_kafka_conf_set(conf, key, value, why, sizeof(why)) != RD_KAFKA_CONF_OK) {
        snprintf(err, errlen, "%s: %s", label, why);
        return -1;
    }
    return 0;
}

int kafkaconf_set_pairs(rd_kafka_conf_t *conf, const char *prefix, const struct config_pair *pairs,
                        size_t count, char *err, size_t errlen)
{
    for (size_t i = 0; i < count; i++) {
        char label[256];
        snprintf(label, sizeof(label), "%s%s", prefix, pairs[i].key);
        if (kafkaconf_set(conf, label, pairs[i].key, pairs[i].value, err, errlen) != 0)
            return -1;
    }
    return 0;
}

rd_kafka_conf_t *kafkaconf_idempotent(const struct config *cfg, const char *client_id, char *err,
                                      size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafkaconf_set(conf, "kafka.brokers", "bootstrap.servers", cfg->kafka_brokers, err, errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "client.id", client_id, err, errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "enable.idempotence", "true", err, errlen) != 0 ||
        kafkaconf_set_pairs(conf, "kafka.producer.", cfg->kafka_producer, cfg->kafka_producer_count, err,
                            errlen) != 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, kafkaconf_log);
    return conf;
}

enum log_level kafkaconf_log_level(int syslog_level)
{
    if (syslog_level <= 3)
        return LOG_LEVEL_ERROR;
    if (syslog_level == 4)
        return LOG_LEVEL_WARN;
    if (syslog_level <= 6)
        return LOG_LEVEL_INFO;
    return LOG_LEVEL_DEBUG;
}

void kafkaconf_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    enum log_level ours = kafkaconf_log_level(level);
    if (log_enabled(ours))
        log_write(ours, "kafka %s %s: %s", rk ? rd_kafka_name(rk) : "-", fac, buf);
}
