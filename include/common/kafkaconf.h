#ifndef SK_KAFKACONF_H
#define SK_KAFKACONF_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "common/config.h"
#include "common/log.h"

/* What the gateway's producer, the consumer and its dead-letter producer share in
 * setting up librdkafka: properties named as our configuration names them, and one map
 * of librdkafka's log lines onto ours. */

/* Sets key = value. On failure err names label (the key as the config file spells it,
 * e.g. "kafka.producer.linger.ms"), so a bad value points at the right line. */
int kafkaconf_set(rd_kafka_conf_t *conf, const char *label, const char *key, const char *value,
                  char *err, size_t errlen);
/* Sets every pair of a kafka.producer.* / kafka.consumer.* pass-through; prefix is that
 * prefix with its dot, for the labels. */
int kafkaconf_set_pairs(rd_kafka_conf_t *conf, const char *prefix, const struct config_pair *pairs,
                        size_t count, char *err, size_t errlen);

/* The configuration of one of the consumer's idempotent producers (dead letters, outcome
 * events): kafka.brokers, client.id, enable.idempotence, the kafka.producer.* pass-through,
 * our log callback. NULL with err set when a value is refused. */
rd_kafka_conf_t *kafkaconf_idempotent(const struct config *cfg, const char *client_id, char *err,
                                      size_t errlen);

/* librdkafka's syslog levels as ours: 0-3 error, 4 warn, 5-6 info, 7 debug. librdkafka
 * calls an unreachable broker an error though it retries by itself; the level is its own. */
enum log_level kafkaconf_log_level(int syslog_level);
/* For rd_kafka_conf_set_log_cb: librdkafka's threads call it; log_write keeps lines whole. */
void kafkaconf_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf);

#endif
