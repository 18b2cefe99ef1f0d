#include "consumer/kafkacons.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/kafkaconf.h"
#include "common/log.h"
#include "consumer/consumer.h"
#include "consumer/consumermetrics.h"

void kafkacons_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[256];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, fatal, sizeof(fatal));
        LOG_ERROR("kafka %s: fatal %s: %s", rd_kafka_name(rk), rd_kafka_err2name(orig), fatal);
        return;
    }
    /* A lost connection is already in librdkafka's own log line. */
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT)
        LOG_DEBUG("kafka %s: %s", rd_kafka_name(rk), reason);
    else
        LOG_WARN("kafka %s: %s: %s", rd_kafka_name(rk),
                 rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static void format_partitions(const rd_kafka_topic_partition_list_t *parts, char *buf,
                              size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < parts->cnt && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s[%" PRId32 "]", i ? " " : "",
                         parts->elems[i].topic, parts->elems[i].partition);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* Messages stashed from partitions a rebalance takes away are dropped: their new owner
 * (maybe this consumer again) fetches them from the committed offset. Kept, they would be
 * written by two consumers at once (chaos finding 9 came from such a pair of batches) and
 * their offsets, committed once the partition came back, could move its committed
 * position backwards. */
static void stash_drop(struct consumer *c, const rd_kafka_topic_partition_list_t *parts)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < c->stash_count; i++) {
        rd_kafka_message_t *m = c->stash[i];
        if (m->rkt && rd_kafka_topic_partition_list_find(parts, rd_kafka_topic_name(m->rkt), m->partition)) {
            rd_kafka_message_destroy(m);
            dropped++;
        } else {
            c->stash[kept++] = m;
        }
    }
    c->stash_count = kept;
    if (dropped)
        LOG_INFO("%zu fetched messages of revoked partitions dropped (fetched again by their owner)",
                 dropped);
}

/* Parked orders of revoked partitions are forgotten: their offsets were never committed,
 * so their new owner replays them. */
static void parked_drop(struct consumer *c, const rd_kafka_topic_partition_list_t *parts)
{
    size_t dropped = 0;
    for (int i = 0; i < parts->cnt; i++)
        if (strcmp(parts->elems[i].topic, c->cfg.kafka_topic) == 0)
            dropped += parking_drop_partition(&c->parking, parts->elems[i].partition);
    if (dropped)
        LOG_INFO("%zu parked orders of revoked partitions left to their new owner", dropped);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct consumer *c = opaque;
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    char names[512];
    format_partitions(parts, names, sizeof(names));
    rd_kafka_error_t *error = NULL;
    rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (cooperative)
            error = rd_kafka_incremental_assign(rk, parts);
        else
            aerr = rd_kafka_assign(rk, parts);
        /* While a batch is being retried nothing new may flow in. */
        if (c->paused)
            rd_kafka_pause_partitions(rk, parts);
        LOG_INFO("assigned %s%s", names, c->paused ? " (paused)" : "");
    } else {
        if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
            LOG_WARN("rebalance error: %s", rd_kafka_err2str(err));
        /* librdkafka keeps a partition's pause through unassign and a later assign of
         * the same partition: revoked paused during a retry and given back after it,
         * it would never be fetched again (kafkacons_set_paused resumes only what is
         * assigned then). A partition given back while still retrying is paused again
         * above. */
        if (c->paused)
            rd_kafka_resume_partitions(rk, parts);
        stash_drop(c, parts);
        parked_drop(c, parts);
        if (cooperative)
            error = rd_kafka_incremental_unassign(rk, parts);
        else
            aerr = rd_kafka_assign(rk, NULL);
        LOG_INFO("revoked %s", names);
    }
    if (error) {
        LOG_WARN("rebalance: %s", rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    }
    if (aerr)
        LOG_WARN("rebalance: %s", rd_kafka_err2str(aerr));
}

/* The outcome of an asynchronous offset commit, served by rd_kafka_consumer_poll. A
 * failed commit costs a replay of what it covered, which is idempotent. */
static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET)
        return;
    if (err) {
        LOG_WARN("offset commit failed: %s (the batch may replay)", rd_kafka_err2str(err));
        return;
    }
    for (int i = 0; offsets && i < offsets->cnt; i++)
        if (offsets->elems[i].err)
            LOG_WARN("offset commit of partition %" PRId32 " failed: %s (it may replay)",
                     offsets->elems[i].partition, rd_kafka_err2str(offsets->elems[i].err));
}

static rd_kafka_t *handle_new(struct consumer *c, char *err, size_t errlen)
{
    const struct config *cfg = &c->cfg;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafkaconf_set(conf, "kafka.brokers", "bootstrap.servers", cfg->kafka_brokers, err,
                  errlen) != 0 ||
        kafkaconf_set(conf, "consumer.group-id", "group.id", cfg->consumer_group_id, err,
                  errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "client.id", "order-consumer", err, errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "enable.auto.commit", "false", err, errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "enable.auto.offset.store", "false", err, errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "auto.offset.reset", "earliest", err, errlen) != 0 ||
        kafkaconf_set_pairs(conf, "kafka.consumer.", cfg->kafka_consumer,
                          cfg->kafka_consumer_count, err, errlen) != 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
    rd_kafka_conf_set_error_cb(conf, kafkacons_on_error);
    rd_kafka_conf_set_log_cb(conf, kafkaconf_log);
    char kerr[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, kerr, sizeof(kerr));
    if (!rk) {
        snprintf(err, errlen, "kafka consumer: %s", kerr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    /* Errors and logs are then served by rd_kafka_consumer_poll. */
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

int kafkacons_start(struct consumer *c, char *err, size_t errlen)
{
    c->rk = handle_new(c, err, errlen);
    if (!c->rk)
        return -1;
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, c->cfg.kafka_topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t kerr = rd_kafka_subscribe(c->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (kerr) {
        snprintf(err, errlen, "subscribe to %s: %s", c->cfg.kafka_topic, rd_kafka_err2str(kerr));
        return -1;
    }
    return 0;
}

void kafkacons_close(struct consumer *c)
{
    for (size_t i = 0; i < c->stash_count; i++)
        rd_kafka_message_destroy(c->stash[i]);
    c->stash_count = 0;
    if (c->rk) {
        rd_kafka_consumer_close(c->rk);
        rd_kafka_destroy(c->rk);
        c->rk = NULL;
    }
}

void kafkacons_set_paused(struct consumer *c, int paused)
{
    if (c->paused == paused)
        return;
    rd_kafka_topic_partition_list_t *parts = NULL;
    rd_kafka_resp_err_t err = rd_kafka_assignment(c->rk, &parts);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR && parts) {
        err = paused ? rd_kafka_pause_partitions(c->rk, parts)
                     : rd_kafka_resume_partitions(c->rk, parts);
        if (err)
            LOG_WARN("%s partitions: %s", paused ? "pause" : "resume", rd_kafka_err2str(err));
    }
    if (parts)
        rd_kafka_topic_partition_list_destroy(parts);
    c->paused = paused;
}

static void stash_push(struct consumer *c, rd_kafka_message_t *msg)
{
    if (c->stash_count == c->stash_cap) {
        size_t n = c->stash_cap ? c->stash_cap * 2 : 16;
        rd_kafka_message_t **grown = realloc(c->stash, n * sizeof(*grown));
        if (!grown) {
            /* Not committing past it is enough: it is fetched again after a restart. */
            LOG_ERROR("out of memory keeping partition %" PRId32 " offset %" PRId64,
                      msg->partition, msg->offset);
            rd_kafka_message_destroy(msg);
            return;
        }
        c->stash = grown;
        c->stash_cap = n;
    }
    c->stash[c->stash_count++] = msg;
}

/* High watermark minus position, summed over the assigned partitions, from the
 * watermarks librdkafka caches from its fetches (no broker round trip). A partition
 * without a position (nothing consumed since it was assigned) counts 0. */
void kafkacons_update_lag(struct consumer *c)
{
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (rd_kafka_assignment(c->rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR || !parts)
        return;
    uint64_t lag = 0;
    if (parts->cnt > 0 && rd_kafka_position(c->rk, parts) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < parts->cnt; i++) {
            const rd_kafka_topic_partition_t *p = &parts->elems[i];
            int64_t low, high;
            if (p->offset < 0 || rd_kafka_get_watermark_offsets(c->rk, p->topic, p->partition,
                                                                &low, &high) != 0)
                continue;
            if (high > p->offset)
                lag += (uint64_t)(high - p->offset);
        }
    }
    rd_kafka_topic_partition_list_destroy(parts);
    consumermetrics_set(CONSUMERMETRICS_LAG, lag);
}

void kafkacons_wait(struct consumer *c, int64_t ms)
{
    int64_t deadline = clock_mono_ms() + ms;
    for (;;) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0 || c->stop)
            return;
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(
            c->rk, (int)(left < CONSUMER_SLICE_MS ? left : CONSUMER_SLICE_MS));
        if (msg)
            stash_push(c, msg);
        kafkacons_update_lag(c);
    }
}

/* Offsets of partitions we no longer own are left to their new owner, which replays
 * them: committing them could move its committed position backwards.
 * Asynchronous while running: the next batch need not wait for the broker (it is only
 * ever sent after this batch's SUCCESS, and commits go out in order); on_commit reports
 * failures. Synchronous once stopping, so that SIGTERM leaves the batch committed. */
void kafkacons_commit(struct consumer *c)
{
    struct batch *b = &c->batch;
    if (b->offset_count == 0)
        return;
    rd_kafka_topic_partition_list_t *owned = NULL;
    if (rd_kafka_assignment(c->rk, &owned) != RD_KAFKA_RESP_ERR_NO_ERROR || !owned) {
        LOG_WARN("offset commit skipped: assignment unknown (the batch may replay)");
        return;
    }
    rd_kafka_topic_partition_list_t *list =
        rd_kafka_topic_partition_list_new((int)b->offset_count);
    for (size_t i = 0; i < b->offset_count; i++) {
        if (!rd_kafka_topic_partition_list_find(owned, c->cfg.kafka_topic,
                                                b->offsets[i].partition)) {
            LOG_INFO("partition %" PRId32 " was revoked: its offset is not committed",
                     b->offsets[i].partition);
            continue;
        }
        /* Parked orders replay from Kafka after a restart or a rebalance: nothing from
         * the lowest of them on is committed. */
        int64_t next = b->offsets[i].offset + 1;
        int64_t floor = parking_floor(&c->parking, b->offsets[i].partition);
        rd_kafka_topic_partition_list_add(list, c->cfg.kafka_topic, b->offsets[i].partition)
            ->offset = next < floor ? next : floor;
    }
    rd_kafka_topic_partition_list_destroy(owned);
    if (list->cnt > 0) {
        int async = !c->stop;
        rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, list, async);
        if (err)
            LOG_WARN("offset commit failed: %s (the batch may replay)", rd_kafka_err2str(err));
        for (int i = 0; !err && !async && i < list->cnt; i++)
            if (list->elems[i].err)
                LOG_WARN("offset commit of partition %" PRId32 " failed: %s (it may replay)",
                         list->elems[i].partition, rd_kafka_err2str(list->elems[i].err));
    }
    rd_kafka_topic_partition_list_destroy(list);
}
