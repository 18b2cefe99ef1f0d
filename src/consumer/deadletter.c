#include "consumer/deadletter.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/kafkaconf.h"
#include "common/log.h"
#include "consumer/consumer.h"
#include "consumer/kafkacons.h"

#define FLUSH_MS 10000   /* longest wait for dead letters to be acknowledged */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct consumer *c = opaque;
    struct batch_dead *d = msg->_private;
    if (!d)
        return;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        d->state = BATCH_DEAD_DELIVERED;
        return;
    }
    d->state = BATCH_DEAD_PENDING;
    snprintf(c->dlq_error, sizeof(c->dlq_error), "%s", rd_kafka_err2str(msg->err));
}

static rd_kafka_t *producer_new(struct consumer *c, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = kafkaconf_idempotent(&c->cfg, "order-consumer-dlq", err, errlen);
    if (!conf)
        return NULL;
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, kafkacons_on_error);
    char kerr[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, kerr, sizeof(kerr));
    if (!rk) {
        snprintf(err, errlen, "kafka dead-letter producer: %s", kerr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return rk;
}

int deadletter_start(struct consumer *c, char *err, size_t errlen)
{
    c->dlq = producer_new(c, err, errlen);
    return c->dlq ? 0 : -1;
}

/* An idempotent producer that hit a fatal error refuses everything: start a new one. The
 * old one is destroyed first, so no delivery report of it can touch an entry again. */
static int renew(struct consumer *c, char *err, size_t errlen)
{
    char fatal[256];
    if (rd_kafka_fatal_error(c->dlq, fatal, sizeof(fatal)) == RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    LOG_WARN("dead-letter producer failed (%s): starting a new one", fatal);
    rd_kafka_destroy(c->dlq);
    c->dlq = NULL;
    struct batch *b = &c->batch;
    for (size_t i = 0; i < b->dead_count; i++)
        if (b->dead[i]->state == BATCH_DEAD_INFLIGHT)
            b->dead[i]->state = BATCH_DEAD_PENDING;
    c->dlq = producer_new(c, err, errlen);
    return c->dlq ? 0 : -1;
}

int deadletter_send(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->dead_count == 0)
        return 0;
    if (c->dlq && renew(c, err, errlen) != 0)
        return -1;
    if (!c->dlq) {
        c->dlq = producer_new(c, err, errlen);
        if (!c->dlq)
            return -1;
    }
    char partition[16], offset[24];
    size_t refused = 0;
    for (size_t i = 0; i < b->dead_count; i++) {
        struct batch_dead *d = b->dead[i];
        if (d->state != BATCH_DEAD_PENDING)
            continue;
        snprintf(partition, sizeof(partition), "%" PRId32, d->partition);
        snprintf(offset, sizeof(offset), "%" PRId64, d->offset);
        rd_kafka_resp_err_t perr = rd_kafka_producev(
            c->dlq, RD_KAFKA_V_TOPIC(c->cfg.kafka_dead_letter_topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(d->payload, d->payload_len),
            RD_KAFKA_V_KEY(d->key, d->key_len), RD_KAFKA_V_HEADER("x-error", d->error, -1),
            RD_KAFKA_V_HEADER("x-source-topic", c->cfg.kafka_topic, -1),
            RD_KAFKA_V_HEADER("x-source-partition", partition, -1),
            RD_KAFKA_V_HEADER("x-source-offset", offset, -1), RD_KAFKA_V_OPAQUE(d),
            RD_KAFKA_V_END);
        if (perr) {
            snprintf(c->dlq_error, sizeof(c->dlq_error), "%s", rd_kafka_err2str(perr));
            refused++;
            continue;
        }
        d->state = BATCH_DEAD_INFLIGHT;
    }
    /* Sliced so that delivery reports are served as they come. */
    int64_t deadline = clock_mono_ms() + FLUSH_MS;
    while (rd_kafka_outq_len(c->dlq) > 0 && clock_mono_ms() < deadline) {
        rd_kafka_flush(c->dlq, CONSUMER_SLICE_MS);
        /* Stopping: a healthy broker acknowledges within a second, a sick one never. */
        if (c->stop && deadline > clock_mono_ms() + 1000)
            deadline = clock_mono_ms() + 1000;
    }
    size_t undelivered = 0;
    for (size_t i = 0; i < b->dead_count; i++)
        if (b->dead[i]->state != BATCH_DEAD_DELIVERED)
            undelivered++;
    if (undelivered == 0)
        return 0;
    snprintf(err, errlen, "%zu dead letter(s) to %s not acknowledged (%s%s)", undelivered,
             c->cfg.kafka_dead_letter_topic, refused ? "refused: " : "", c->dlq_error);
    return -1;
}

void deadletter_poll(struct consumer *c)
{
    if (c->dlq)
        rd_kafka_poll(c->dlq, 0);
}

void deadletter_close(struct consumer *c)
{
    if (c->dlq) {
        rd_kafka_flush(c->dlq, 2000);
        rd_kafka_destroy(c->dlq);
        c->dlq = NULL;
    }
}
