#ifndef SK_CONSUMERMETRICS_H
#define SK_CONSUMERMETRICS_H

#include <stddef.h>
#include <stdint.h>

/* The order consumer's Prometheus metrics, declared once here and served on
 * consumer.metrics-host:consumer.metrics-port (GET /metrics) by one thread of their own.
 * The consumer thread writes them, the server thread reads them: relaxed C11 atomics, no
 * locks. The thread shares nothing else with the consumer.
 *
 * One list: X(id, kind, name, labels, help). Entries of one family (same name) are
 * adjacent and differ by their labels; HELP and TYPE are written once per family.
 * Kinds: COUNTER, GAUGE, SECONDS (a histogram of durations), COUNT (a histogram of sizes). */
#define CONSUMERMETRICS_LIST(X)                                                                  \
    X(BATCHES, COUNTER, "seckill_consumer_batches_total", "",                                    \
      "Batches processed up to their Kafka offset commit")                                      \
    X(ORDERS_PERSISTED, COUNTER, "seckill_consumer_orders_persisted_total", "",                  \
      "seckill_order rows newly inserted (replays of persisted orders not counted)")            \
    X(ORDERS_REJECTED, COUNTER, "seckill_consumer_orders_rejected_total", "",                    \
      "Orders confirm.lua answered REJECTED (their reservation was released)")                  \
    X(DEAD_LETTERS, COUNTER, "seckill_consumer_dead_letters_total", "",                          \
      "Messages sent to the dead-letter topic")                                                 \
    X(MYSQL_REFUSED, COUNTER, "seckill_consumer_mysql_refused_total", "",                        \
      "Orders and coupon.used events MySQL refused for good (a constraint, a value out of "     \
      "range, ...): set aside by splitting their batch and dead-lettered")                     \
    X(COUPON_USES, COUNTER, "seckill_consumer_coupon_uses_persisted_total", "",                  \
      "coupon.used events applied in MySQL (replays not counted)")                              \
    X(RETRY_DEAD_LETTER, COUNTER, "seckill_consumer_retries_total",                             \
      "step=\"dead-letter\",backend=\"kafka\"", "Failed batch steps retried, by step")          \
    X(RETRY_CLAIM, COUNTER, "seckill_consumer_retries_total", "step=\"claim\",backend=\"redis\"", "") \
    X(RETRY_PERSIST, COUNTER, "seckill_consumer_retries_total", "step=\"persist\",backend=\"mysql\"", "") \
    X(RETRY_PUBLISH, COUNTER, "seckill_consumer_retries_total", "step=\"publish\",backend=\"redis\"", "") \
    X(RETRY_FINALIZE, COUNTER, "seckill_consumer_retries_total", "step=\"finalize\",backend=\"redis\"", "") \
    X(RETRY_ABANDON, COUNTER, "seckill_consumer_retries_total", "step=\"abandon\",backend=\"redis\"", "") \
    X(BATCH_SIZE, COUNT, "seckill_consumer_batch_size", "", "Orders per batch")                 \
    X(INSERT_DURATION, SECONDS, "seckill_consumer_insert_duration_seconds", "",                  \
      "The MySQL transaction of a batch, from its first statement to COMMIT")                    \
    X(BATCH_DURATION, SECONDS, "seckill_consumer_batch_duration_seconds", "",                    \
      "A batch from the end of its poll to its offsets committed")                               \
    X(LAG, GAUGE, "seckill_consumer_lag", "",                                                    \
      "Messages behind: high watermark minus position, summed over the assigned partitions")    \
    X(PARKED, GAUGE, "seckill_consumer_parked_orders", "",                                       \
      "Orders set aside because a Redis step could not be done on their slot; their "          \
      "partitions' offsets are not committed past them")                                        \
    X(OUTCOMES_PUBLISHED, COUNTER, "seckill_consumer_outcomes_published_total", "",             \
      "Outcome events this consumer's relay published to kafka.outcome-topic (acknowledged)")  \
    X(OUTCOME_RELAY, GAUGE, "seckill_consumer_outcome_relay", "",                                \
      "1 while this consumer is the one relaying outcome events (one at a time per database)") \
    X(OUTCOME_AGE, GAUGE, "seckill_consumer_outcome_oldest_age_seconds", "",                     \
      "Age in whole seconds of the oldest outcome event not yet published, as this consumer's " \
      "relay last saw it (0: none waiting)")                                                    \
    X(READY, GAUGE, "seckill_consumer_ready", "",                                                \
      "1 while consuming, 0 while starting, retrying a failed step or stopping")

#define CONSUMERMETRICS_ENUM(id, kind, name, labels, help) CONSUMERMETRICS_##id,
enum consumermetrics_id { CONSUMERMETRICS_LIST(CONSUMERMETRICS_ENUM) CONSUMERMETRICS_COUNT };
#undef CONSUMERMETRICS_ENUM

/* Counters and gauges. Wait-free; callable from any thread. */
void consumermetrics_add(enum consumermetrics_id id, uint64_t n);
void consumermetrics_set(enum consumermetrics_id id, uint64_t value);
/* Histograms: a duration in microseconds (SECONDS) or a size (COUNT). */
void consumermetrics_observe(enum consumermetrics_id id, int64_t value);

/* The exposition text; returns a malloc'ed string (caller frees), or NULL. */
char *consumermetrics_render(void);

/* Binds host:port and starts the server thread; port 0 starts nothing. Returns -1 with
 * err set (naming consumer.metrics-port) when it cannot. */
int consumermetrics_start(const char *host, int port, char *err, size_t errlen);
/* Stops and joins the thread and frees what it used. Safe when not started. */
void consumermetrics_stop(void);

#endif
