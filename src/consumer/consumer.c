/* order-consumer: reads order.created events from Kafka in batches, claims them in Redis,
 * writes them to MySQL in one transaction, shows them as SUCCESS in Redis, and only then
 * commits the Kafka offsets. A crash anywhere replays the batch, which is idempotent.
 * coupon.used events share the topic: they are written in the same transaction, after
 * the orders, and need nothing in Redis (the gateway marked the coupon used already).
 * Its Prometheus metrics (consumermetrics) are served by a thread of their own. */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "consumer/batch.h"
#include "common/clock.h"
#include "common/config.h"
#include "consumer/consumermetrics.h"
#include "store/couponsync.h"
#include "store/db.h"
#include "common/kafkaconf.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/luascript.h"
#include "common/orderevent.h"
#include "consumer/persist.h"
#include "common/redeemevent.h"

extern char **environ;

#define CLAIM_CHUNK 500            /* orders per confirm.lua / finalize.lua call */
#define SLICE_MS 100               /* longest wait without looking at the stop flag */
#define DLQ_FLUSH_MS 10000         /* longest wait for dead letters to be acknowledged */
#define SUMMARY_INTERVAL_MS 5000
#define ACTIVITY_KEYS 7
#define TERMS_CACHE 64             /* coupons whose terms are kept between batches */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct consumer_stats {
    uint64_t batches;
    uint64_t persisted;   /* orders whose row is in MySQL and shown as SUCCESS */
    uint64_t added;       /* rows that were new (the rest were replays) */
    uint64_t rejected;
    uint64_t dead;
    uint64_t conflicts;
    uint64_t uses;        /* coupon.used events applied or found applied already */
};

/* The terms of one coupon, as couponsync_load read them: they never change after the
 * coupon is created, so they are read once per coupon and kept. */
struct terms_entry {
    int64_t coupon_id;
    struct usercoupon tmpl;
};

/* Milliseconds spent in each part of the current batch, for the DEBUG line. */
struct batch_times {
    int64_t fill, dead, claim, persist, publish, finalize, commit;
};

/* The process. Ownership: every handle, the stash and the batch belong to it and are
 * released by consumer_free; redis and db are NULL while disconnected. */
struct consumer {
    struct config cfg;
    struct luascript_set scripts;
    rd_kafka_t *rk;              /* high-level consumer */
    rd_kafka_t *dlq;             /* idempotent producer of the dead-letter topic */
    redisContext *redis;
    MYSQL *db;
    struct batch batch;
    /* Messages that arrived while a step was being retried (a rebalance can hand over
     * partitions that are not paused yet): they open the next batch. */
    rd_kafka_message_t **stash;
    size_t stash_count;
    size_t stash_cap;
    int paused;                  /* the assignment is paused while a step is retried */
    char dlq_error[256];         /* last failed dead-letter delivery */
    struct persist_coupon *coupons;  /* parallel to batch.accepted */
    size_t coupons_cap;
    struct persist_use_result *use_results;  /* parallel to batch.uses */
    size_t use_results_cap;
    struct usercoupon *records;         /* the user coupon records step_publish writes */
    size_t records_cap;
    struct terms_entry terms[TERMS_CACHE];
    size_t terms_count;
    size_t terms_next;               /* the entry a new coupon replaces when full */
    struct batch_times times;
    struct persist_stats persisted;  /* of the current batch */
    struct consumer_stats total;
    struct consumer_stats reported;
    int64_t reported_ms;
};

/* ---- backends ------------------------------------------------------------------- */

static int redis_ensure(struct consumer *c, char *err, size_t errlen)
{
    if (c->redis)
        return 0;
    struct timeval tv = clock_timeval_ms(c->cfg.redis_timeout_ms);
    redisContext *r = redisConnectWithTimeout(c->cfg.redis_host, (int)c->cfg.redis_port, tv);
    if (!r || r->err || redisSetTimeout(r, tv) != REDIS_OK) {
        snprintf(err, errlen, "redis %s:%" PRId64 ": %s", c->cfg.redis_host, c->cfg.redis_port,
                 r ? r->errstr : "out of memory");
        if (r)
            redisFree(r);
        return -1;
    }
    c->redis = r;
    LOG_INFO("connected to redis %s:%" PRId64, c->cfg.redis_host, c->cfg.redis_port);
    return 0;
}

static void redis_drop(struct consumer *c)
{
    if (c->redis)
        redisFree(c->redis);
    c->redis = NULL;
}

static int db_ensure(struct consumer *c, char *err, size_t errlen)
{
    if (c->db)
        return 0;
    c->db = db_connect(&c->cfg, err, errlen);
    if (!c->db)
        return -1;
    LOG_INFO("connected to mysql %s:%" PRId64, c->cfg.mysql_host, c->cfg.mysql_port);
    return 0;
}

static void db_drop(struct consumer *c)
{
    if (c->db)
        mysql_close(c->db);
    c->db = NULL;
}

/* ---- Kafka set-up ----------------------------------------------------------------- */

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
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

static rd_kafka_t *consumer_kafka_new(struct consumer *c, char *err, size_t errlen)
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
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
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

static void on_dlq_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
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

static rd_kafka_t *consumer_dlq_new(struct consumer *c, char *err, size_t errlen)
{
    const struct config *cfg = &c->cfg;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafkaconf_set(conf, "kafka.brokers", "bootstrap.servers", cfg->kafka_brokers, err,
                  errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "client.id", "order-consumer-dlq", err, errlen) != 0 ||
        kafkaconf_set(conf, "order-consumer", "enable.idempotence", "true", err, errlen) != 0 ||
        kafkaconf_set_pairs(conf, "kafka.producer.", cfg->kafka_producer,
                          cfg->kafka_producer_count, err, errlen) != 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, c);
    rd_kafka_conf_set_dr_msg_cb(conf, on_dlq_delivery);
    rd_kafka_conf_set_error_cb(conf, on_kafka_error);
    rd_kafka_conf_set_log_cb(conf, kafkaconf_log);
    char kerr[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, kerr, sizeof(kerr));
    if (!rk) {
        snprintf(err, errlen, "kafka dead-letter producer: %s", kerr);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return rk;
}

/* ---- pausing while a step is retried ---------------------------------------------- */

static void consumer_set_paused(struct consumer *c, int paused)
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

/* The lag gauge: high watermark minus position, summed over the assigned partitions,
 * from the watermarks librdkafka caches from its fetches (no broker round trip). A
 * partition without a position (nothing consumed since it was assigned) counts 0. */
static void consumer_update_lag(struct consumer *c)
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

/* Sleeps ms in slices, serving the group (heartbeats, rebalances) and noticing SIGTERM. */
static void consumer_wait(struct consumer *c, int64_t ms)
{
    int64_t deadline = clock_mono_ms() + ms;
    for (;;) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0 || stop_requested)
            return;
        rd_kafka_message_t *msg =
            rd_kafka_consumer_poll(c->rk, (int)(left < SLICE_MS ? left : SLICE_MS));
        if (msg)
            stash_push(c, msg);
        consumer_update_lag(c);
    }
}

typedef int (*consumer_step)(struct consumer *c, char *err, size_t errlen);

/* Runs step until it succeeds, backing off in between. Gives up only when asked to stop,
 * leaving the batch uncommitted so that it replays. Each retry counts in metric. */
static int consumer_retry(struct consumer *c, const char *what, consumer_step step,
                          enum consumermetrics_id metric)
{
    int64_t delay = c->cfg.consumer_retry_min_ms;
    int failed = 0;
    for (;;) {
        char err[512] = "";
        if (step(c, err, sizeof(err)) == 0) {
            if (failed)
                consumermetrics_set(CONSUMERMETRICS_READY, 1);
            return 0;
        }
        if (!failed)
            consumermetrics_set(CONSUMERMETRICS_READY, 0);
        failed = 1;
        if (stop_requested) {
            LOG_WARN("%s failed: %s; stopping with the batch uncommitted (it replays)", what,
                     err);
            return -1;
        }
        LOG_WARN("%s failed: %s; retrying in %" PRId64 " ms", what, err, delay);
        consumermetrics_add(metric, 1);
        consumer_set_paused(c, 1);
        consumer_wait(c, delay);
        delay = delay * 2 > c->cfg.consumer_retry_max_ms ? c->cfg.consumer_retry_max_ms
                                                         : delay * 2;
    }
}

/* ---- reading a batch -------------------------------------------------------------- */

/* Errors that belong to one message at one offset: it is skipped and dead-lettered. The
 * others (broker down, offset out of range, unknown topic) say nothing about a message,
 * and committing past them could skip orders. */
static int is_message_error(rd_kafka_resp_err_t err)
{
    return err == RD_KAFKA_RESP_ERR__BAD_MSG || err == RD_KAFKA_RESP_ERR__BAD_COMPRESSION ||
           err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           err == RD_KAFKA_RESP_ERR_INVALID_MSG;
}

static int consumer_dead_letter(struct consumer *c, const rd_kafka_message_t *msg,
                                const char *error)
{
    LOG_WARN("dead-lettering partition %" PRId32 " offset %" PRId64 ": %s", msg->partition,
             msg->offset, error);
    return batch_add_dead(&c->batch, msg->payload, msg->len, msg->key, msg->key_len,
                          msg->partition, msg->offset, error);
}

/* Keeps what msg means for the batch: an order, a dead letter, or nothing (an error
 * that is not about one message). Returns 1 when it counts towards the batch size. */
static int consumer_take(struct consumer *c, const rd_kafka_message_t *msg)
{
    char error[160];
    int rc;
    if (msg->err) {
        if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            return 0;
        if (!msg->rkt || msg->offset < 0 || !is_message_error(msg->err)) {
            LOG_WARN("kafka: %s%s%s", rd_kafka_message_errstr(msg),
                     msg->rkt ? " on " : "", msg->rkt ? rd_kafka_topic_name(msg->rkt) : "");
            return 0;
        }
        snprintf(error, sizeof(error), "kafka: %s", rd_kafka_message_errstr(msg));
        rc = consumer_dead_letter(c, msg, error);
    } else if (msg->payload && redeemevent_is(msg->payload, msg->len)) {
        struct redeemevent ev;
        if (redeemevent_decode(msg->payload, msg->len, &ev, error, sizeof(error)) != 0)
            rc = consumer_dead_letter(c, msg, error);
        else
            rc = batch_add_use(&c->batch, &ev, msg->payload, msg->len, msg->key, msg->key_len,
                               msg->partition, msg->offset);
    } else {
        struct orderevent ev;
        if (orderevent_decode(msg->payload, msg->len, &ev, error, sizeof(error)) != 0)
            rc = consumer_dead_letter(c, msg, error);
        else if (ev.created_ms > PERSIST_MAX_ACCEPTED_MS)
            rc = consumer_dead_letter(c, msg, "createdAt: beyond the range of DATETIME");
        else
            rc = batch_add_order(&c->batch, &ev);
    }
    if (rc != 0 || batch_note_offset(&c->batch, msg->partition, msg->offset) != 0) {
        /* Nothing later may be taken, or its offset would commit past this message:
         * finish what is kept, stop, and let this one replay. */
        LOG_ERROR("out of memory at partition %" PRId32 " offset %" PRId64 "; stopping",
                  msg->partition, msg->offset);
        stop_requested = 1;
        return 0;
    }
    c->batch.messages++;
    return 1;
}

/* Polls until batch-size messages, or batch-timeout-ms after the first one, or SIGTERM. */
static void consumer_fill(struct consumer *c)
{
    struct batch *b = &c->batch;
    size_t limit = (size_t)c->cfg.consumer_batch_size;
    int64_t first_ms = 0;
    for (size_t i = 0; i < c->stash_count; i++) {
        /* Once stopping, the rest is left uncommitted: it is fetched again. */
        if (!stop_requested)
            consumer_take(c, c->stash[i]);
        rd_kafka_message_destroy(c->stash[i]);
    }
    c->stash_count = 0;
    if (b->messages > 0)
        first_ms = clock_mono_ms();
    memset(&c->times, 0, sizeof(c->times));
    while (!stop_requested && b->messages < limit) {
        int64_t wait = SLICE_MS;
        if (b->messages > 0) {
            int64_t left = first_ms + c->cfg.consumer_batch_timeout_ms - clock_mono_ms();
            if (left <= 0)
                break;
            if (left < wait)
                wait = left;
        }
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(c->rk, (int)wait);
        if (!msg) {
            if (b->messages == 0)
                return;  /* idle: let the caller do its periodic work */
            continue;
        }
        if (consumer_take(c, msg) && b->messages == 1)
            first_ms = clock_mono_ms();
        rd_kafka_message_destroy(msg);
    }
    if (b->messages > 0)
        c->times.fill = clock_mono_ms() - first_ms;
}

/* ---- the steps of a batch --------------------------------------------------------- */

/* An idempotent producer that hit a fatal error refuses everything: start a new one. The
 * old one is destroyed first, so no delivery report of it can touch an entry again. */
static int dlq_renew(struct consumer *c, char *err, size_t errlen)
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
    c->dlq = consumer_dlq_new(c, err, errlen);
    return c->dlq ? 0 : -1;
}

static int step_dead_letters(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->dead_count == 0)
        return 0;
    if (c->dlq && dlq_renew(c, err, errlen) != 0)
        return -1;
    if (!c->dlq) {
        c->dlq = consumer_dlq_new(c, err, errlen);
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
    int64_t deadline = clock_mono_ms() + DLQ_FLUSH_MS;
    while (rd_kafka_outq_len(c->dlq) > 0 && clock_mono_ms() < deadline) {
        rd_kafka_flush(c->dlq, SLICE_MS);
        /* Stopping: a healthy broker acknowledges within a second, a sick one never. */
        if (stop_requested && deadline > clock_mono_ms() + 1000)
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

/* The seven keys of an activity, in the order confirm.lua expects; finalize takes 3 and 6. */
struct activity_keys {
    char names[ACTIVITY_KEYS][KEYS_LEN];
    const char *argv[ACTIVITY_KEYS];
};

static int activity_keys_make(struct activity_keys *k, const struct config *cfg,
                              int64_t activity_id)
{
    static const enum keys_kind kinds[ACTIVITY_KEYS] = {
        KEYS_STOCK, KEYS_USERS, KEYS_ORDERS, KEYS_RESERVED, KEYS_QUEUED, KEYS_CLAIMED, KEYS_ACTIVITY,
    };
    for (int i = 0; i < ACTIVITY_KEYS; i++) {
        if (keys_activity(k->names[i], sizeof(k->names[i]), cfg, kinds[i], activity_id) < 0)
            return -1;
        k->argv[i] = k->names[i];
    }
    return 0;
}

/* ARGV of confirm.lua and finalize.lua: orderNo, userId pairs. */
struct pair_args {
    const char *argv[CLAIM_CHUNK * 2];
    char users[CLAIM_CHUNK][24];
    int count;   /* pairs */
};

static void pair_args_add(struct pair_args *a, const struct orderevent *ev)
{
    snprintf(a->users[a->count], sizeof(a->users[a->count]), "%" PRId64, ev->user_id);
    a->argv[a->count * 2] = ev->order_no;
    a->argv[a->count * 2 + 1] = a->users[a->count];
    a->count++;
}

/* One script call. A NULL reply means the connection is unusable: it is dropped. */
static redisReply *consumer_eval(struct consumer *c, enum luascript_id id, int nkeys,
                                 const char *const *keys, const struct pair_args *a,
                                 char *err, size_t errlen)
{
    const struct luascript *s = &c->scripts.scripts[id];
    redisReply *reply = luascript_call_sync(c->redis, s, nkeys, keys, a->count * 2, a->argv);
    if (!reply) {
        snprintf(err, errlen, "%s.lua: %s", s->name,
                 c->redis->err ? c->redis->errstr : "out of memory");
        redis_drop(c);
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s.lua: %s", s->name, reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

static int claim_chunk(struct consumer *c, const struct activity_keys *k, size_t first,
                       const struct pair_args *a, char *err, size_t errlen)
{
    redisReply *reply = consumer_eval(c, LUASCRIPT_CONFIRM, ACTIVITY_KEYS, k->argv, a, err,
                                      errlen);
    if (!reply)
        return -1;
    int rc = -1;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != (size_t)a->count) {
        snprintf(err, errlen, "confirm.lua: unexpected reply");
        goto out;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *v = reply->element[i];
        if (v->type != REDIS_REPLY_STRING && v->type != REDIS_REPLY_STATUS) {
            snprintf(err, errlen, "confirm.lua: unexpected verdict");
            goto out;
        }
        enum batch_verdict verdict;
        if (strcmp(v->str, "CLAIMED") == 0 || strcmp(v->str, "CONFIRMED") == 0)
            verdict = BATCH_ACCEPTED;
        else if (strcmp(v->str, "REJECTED") == 0)
            verdict = BATCH_REJECTED;
        else {
            snprintf(err, errlen, "confirm.lua: unknown verdict '%s'", v->str);
            goto out;
        }
        c->batch.verdicts[first + i] = verdict;
    }
    rc = 0;
out:
    freeReplyObject(reply);
    return rc;
}

static int step_claim(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->count == 0)
        return 0;
    if (redis_ensure(c, err, errlen) != 0)
        return -1;
    struct pair_args *a = malloc(sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t start = 0; start < b->count && rc == 0;) {
        size_t end = batch_run_end(b->orders, b->count, start);
        struct activity_keys k;
        if (activity_keys_make(&k, &c->cfg, b->orders[start].activity_id) != 0) {
            snprintf(err, errlen, "activity %" PRId64 ": key too long", b->orders[start].activity_id);
            rc = -1;
            break;
        }
        for (size_t chunk = start; chunk < end && rc == 0; chunk += CLAIM_CHUNK) {
            a->count = 0;
            for (size_t i = chunk; i < end && a->count < CLAIM_CHUNK; i++)
                pair_args_add(a, &b->orders[i]);
            rc = claim_chunk(c, &k, chunk, a, err, errlen);
        }
        start = end;
    }
    free(a);
    return rc;
}

/* Makes room for need elements in an array of the consumer's own, keeping its contents:
 * the grown array, or NULL (the old one stays valid). */
static void *grow_array(void *array, size_t need, size_t size)
{
    return realloc(array, (need ? need : 1) * size);
}

static int step_persist(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->accepted_count == 0 && b->use_count == 0)
        return 0;
    if (b->accepted_count > c->coupons_cap) {
        struct persist_coupon *grown = grow_array(c->coupons, b->accepted_count,
                                                  sizeof(*grown));
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        c->coupons = grown;
        c->coupons_cap = b->accepted_count;
    }
    if (b->use_count > c->use_results_cap) {
        struct persist_use_result *grown = grow_array(c->use_results, b->use_count,
                                                      sizeof(*grown));
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        c->use_results = grown;
        c->use_results_cap = b->use_count;
    }
    if (db_ensure(c, err, errlen) != 0)
        return -1;
    int64_t t0 = clock_mono_us();
    enum persist_result r = persist_batch(c->db, b->accepted, b->accepted_count, b->in_db,
                                          c->coupons, b->uses, b->use_count, c->use_results,
                                          &c->persisted, err, errlen);
    if (r == PERSIST_OK)
        consumermetrics_observe(CONSUMERMETRICS_INSERT_DURATION, clock_mono_us() - t0);
    if (r == PERSIST_DISCONNECTED)
        db_drop(c);
    return r == PERSIST_OK ? 0 : -1;
}

/* The terms of one coupon: from the cache, else from MySQL (and then kept). Returns the
 * template, or NULL: with *failed set when MySQL failed (retry), else when the coupon row
 * is missing or malformed, which no retry mends. */
static const struct usercoupon *coupon_terms(struct consumer *c, int64_t coupon_id, int *failed,
                                          char *err, size_t errlen)
{
    *failed = 0;
    for (size_t i = 0; i < c->terms_count; i++)
        if (c->terms[i].coupon_id == coupon_id)
            return &c->terms[i].tmpl;
    if (db_ensure(c, err, errlen) != 0) {
        *failed = 1;
        return NULL;
    }
    struct usercoupon tmpl;
    char why[256];
    int rc = couponsync_load(c->db, coupon_id, &tmpl, why, sizeof(why));
    if (rc == 0) {
        size_t slot = c->terms_count < TERMS_CACHE ? c->terms_count++ : c->terms_next;
        if (c->terms_count == TERMS_CACHE)
            c->terms_next = (slot + 1) % TERMS_CACHE;
        c->terms[slot].coupon_id = coupon_id;
        c->terms[slot].tmpl = tmpl;
        return &c->terms[slot].tmpl;
    }
    unsigned int code = mysql_errno(c->db);
    if (rc < 0 && code != 0) {
        snprintf(err, errlen, "%s", why);
        if (persist_connection_lost(code))
            db_drop(c);
        *failed = 1;
        return NULL;
    }
    LOG_ERROR("%s: its user coupons of this batch are not published to redis", why);
    return NULL;
}

/* The Redis record of each issued user coupon (GET /coupons reads it), before SUCCESS
 * shows, so that a winner who looks finds the coupon too. Written once: a repeat changes
 * nothing. One pipeline for the whole batch. */
static int step_publish(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->accepted_count == 0)
        return 0;
    if (redis_ensure(c, err, errlen) != 0)
        return -1;
    if (b->accepted_count > c->records_cap) {
        struct usercoupon *grown = grow_array(c->records, b->accepted_count, sizeof(*grown));
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        c->records = grown;
        c->records_cap = b->accepted_count;
    }
    size_t n = 0;
    const struct usercoupon *tmpl = NULL;
    int64_t looked_up = 0;
    for (size_t i = 0; i < b->accepted_count; i++) {
        const struct persist_coupon *pc = &c->coupons[i];
        if (!b->in_db[i] || pc->id <= 0)
            continue;
        if (pc->coupon_id != looked_up) {
            int failed;
            tmpl = coupon_terms(c, pc->coupon_id, &failed, err, errlen);
            if (failed)
                return -1;
            looked_up = pc->coupon_id;
        }
        if (!tmpl)
            continue;
        struct usercoupon *uc = &c->records[n++];
        *uc = *tmpl;
        uc->id = pc->id;
        uc->user_id = b->accepted[i].user_id;
    }
    char why[256];
    if (n > 0 && couponsync_publish_many(c->redis, c->records, n, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s", why);
        if (c->redis->err)
            redis_drop(c);
        return -1;
    }
    return 0;
}

static int finalize_chunk(struct consumer *c, const struct activity_keys *k,
                          const struct pair_args *a, char *err, size_t errlen)
{
    const char *keys[2] = { k->argv[2], k->argv[5] };  /* orders, claimed */
    redisReply *reply = consumer_eval(c, LUASCRIPT_FINALIZE, 2, keys, a, err, errlen);
    if (!reply)
        return -1;
    int ok = reply->type == REDIS_REPLY_INTEGER && reply->integer == a->count;
    freeReplyObject(reply);
    if (!ok) {
        snprintf(err, errlen, "finalize.lua: unexpected reply");
        return -1;
    }
    return 0;
}

/* Only after the COMMIT (I6): SUCCESS must never be visible before the row is. */
static int step_finalize(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->accepted_count == 0)
        return 0;
    if (redis_ensure(c, err, errlen) != 0)
        return -1;
    struct pair_args *a = malloc(sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t start = 0; start < b->accepted_count && rc == 0;) {
        size_t end = batch_run_end(b->accepted, b->accepted_count, start);
        struct activity_keys k;
        if (activity_keys_make(&k, &c->cfg, b->accepted[start].activity_id) != 0) {
            snprintf(err, errlen, "activity %" PRId64 ": key too long",
                     b->accepted[start].activity_id);
            rc = -1;
            break;
        }
        a->count = 0;
        for (size_t i = start; i < end && rc == 0; i++) {
            if (b->in_db[i])
                pair_args_add(a, &b->accepted[i]);
            if (a->count == CLAIM_CHUNK || (i + 1 == end && a->count > 0)) {
                rc = finalize_chunk(c, &k, a, err, errlen);
                a->count = 0;
            }
        }
        start = end;
    }
    free(a);
    return rc;
}

/* Offsets of partitions we no longer own are left to their new owner, which replays
 * them: committing them could move its committed position backwards.
 * Asynchronous while running: the next batch need not wait for the broker (it is only
 * ever sent after this batch's SUCCESS, and commits go out in order); on_commit reports
 * failures. Synchronous once stopping, so that SIGTERM leaves the batch committed. */
static void consumer_commit(struct consumer *c)
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
        rd_kafka_topic_partition_list_add(list, c->cfg.kafka_topic, b->offsets[i].partition)
            ->offset = b->offsets[i].offset + 1;
    }
    rd_kafka_topic_partition_list_destroy(owned);
    if (list->cnt > 0) {
        int async = !stop_requested;
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

static void log_rejections(const struct batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        if (b->verdicts[i] == BATCH_REJECTED)
            LOG_INFO("order %s of user %" PRId64 " rejected: its reservation was released "
                     "before it could be persisted", b->orders[i].order_no, b->orders[i].user_id);
}

/* consumer_retry, adding the time it took to *ms. */
static int timed_retry(struct consumer *c, const char *what, consumer_step step,
                       enum consumermetrics_id metric, int64_t *ms)
{
    int64_t t0 = clock_mono_ms();
    int rc = consumer_retry(c, what, step, metric);
    *ms += clock_mono_ms() - t0;
    return rc;
}

/* The coupon.used events MySQL found inconsistent become dead letters: logged, kept out
 * of MySQL, and never blocking the partition. Returns -1 when one could not be kept
 * (out of memory): the batch must then not commit its offsets. */
static int consumer_dead_uses(struct consumer *c)
{
    struct batch *b = &c->batch;
    for (size_t i = 0; i < b->use_count; i++) {
        const struct persist_use_result *r = &c->use_results[i];
        if (r->verdict != PERSIST_USE_INCONSISTENT)
            continue;
        const struct redeemevent *ev = &b->uses[i];
        LOG_ERROR("coupon.used of user coupon %" PRId64 " user %" PRId64 " order '%s' "
                  "(partition %" PRId32 " offset %" PRId64 ") is inconsistent with MySQL: %s",
                  ev->user_coupon_id, ev->user_id, ev->order_ref, b->use_msgs[i].partition,
                  b->use_msgs[i].offset, r->reason);
        char error[sizeof(r->reason) + 16];
        snprintf(error, sizeof(error), "inconsistent: %s", r->reason);
        if (batch_dead_use(b, i, error) != 0) {
            LOG_ERROR("out of memory dead-lettering partition %" PRId32 " offset %" PRId64
                      "; stopping", b->use_msgs[i].partition, b->use_msgs[i].offset);
            stop_requested = 1;
            return -1;
        }
    }
    return 0;
}

/* DLQ → claim → MySQL COMMIT (orders, then coupon uses) → user coupons and SUCCESS in
 * Redis → DLQ of inconsistent uses → Kafka offsets, strictly in this order.
 * Returns -1 when stopping left the batch unfinished. */
static int consumer_process(struct consumer *c)
{
    struct batch *b = &c->batch;
    struct batch_times *t = &c->times;
    int64_t started = clock_mono_ms();
    int64_t started_us = clock_mono_us();
    batch_seal(b);
    memset(&c->persisted, 0, sizeof(c->persisted));
    if (timed_retry(c, "dead-letter", step_dead_letters, CONSUMERMETRICS_RETRY_DEAD_LETTER,
                    &t->dead) != 0 ||
        timed_retry(c, "claim", step_claim, CONSUMERMETRICS_RETRY_CLAIM, &t->claim) != 0)
        return -1;
    log_rejections(b);
    batch_collect_accepted(b);
    size_t dead_before = b->dead_count;
    if (timed_retry(c, "persist", step_persist, CONSUMERMETRICS_RETRY_PERSIST,
                    &t->persist) != 0 ||
        consumer_dead_uses(c) != 0 ||
        timed_retry(c, "publish coupons", step_publish, CONSUMERMETRICS_RETRY_PUBLISH,
                    &t->publish) != 0 ||
        timed_retry(c, "finalize", step_finalize, CONSUMERMETRICS_RETRY_FINALIZE,
                    &t->finalize) != 0)
        return -1;
    if (b->dead_count > dead_before &&
        timed_retry(c, "dead-letter", step_dead_letters, CONSUMERMETRICS_RETRY_DEAD_LETTER,
                    &t->dead) != 0)
        return -1;
    consumer_set_paused(c, 0);
    int64_t t0 = clock_mono_ms();
    consumer_commit(c);
    t->commit = clock_mono_ms() - t0;

    size_t rejected = b->count - b->accepted_count;
    size_t persisted = b->accepted_count - c->persisted.conflicts;
    size_t uses = c->persisted.uses_applied + c->persisted.uses_repeated;
    c->total.batches++;
    c->total.persisted += persisted;
    c->total.added += c->persisted.orders_added;
    c->total.rejected += rejected;
    c->total.dead += b->dead_count;
    c->total.conflicts += c->persisted.conflicts;
    c->total.uses += uses;
    consumermetrics_add(CONSUMERMETRICS_BATCHES, 1);
    consumermetrics_add(CONSUMERMETRICS_ORDERS_PERSISTED, c->persisted.orders_added);
    consumermetrics_add(CONSUMERMETRICS_ORDERS_REJECTED, rejected);
    consumermetrics_add(CONSUMERMETRICS_DEAD_LETTERS, b->dead_count);
    consumermetrics_add(CONSUMERMETRICS_COUPON_USES, c->persisted.uses_applied);
    consumermetrics_observe(CONSUMERMETRICS_BATCH_SIZE, (int64_t)b->count);
    consumermetrics_observe(CONSUMERMETRICS_BATCH_DURATION, clock_mono_us() - started_us);
    LOG_DEBUG("batch: %zu messages, %zu orders persisted (%" PRIu64 " new), %zu rejected, "
              "%zu coupon uses (%zu new), %zu dead-lettered, %zu repeated, %" PRId64 " ms: "
              "fill %" PRId64 " ms, dead %" PRId64 " ms, claim %" PRId64 " ms, persist %" PRId64
              " ms, publish %" PRId64 " ms, finalize %" PRId64 " ms, commit %" PRId64 " ms",
              b->messages, persisted, c->persisted.orders_added, rejected, uses,
              c->persisted.uses_applied, b->dead_count, b->duplicates, clock_mono_ms() - started,
              t->fill, t->dead, t->claim, t->persist, t->publish, t->finalize, t->commit);
    return 0;
}

static void consumer_summary(struct consumer *c)
{
    int64_t now = clock_mono_ms();
    if (now - c->reported_ms < SUMMARY_INTERVAL_MS)
        return;
    const struct consumer_stats *t = &c->total, *r = &c->reported;
    if (t->batches != r->batches)
        LOG_INFO("%" PRIu64 " batches, %" PRIu64 " orders persisted (%" PRIu64 " new), %" PRIu64
                 " rejected, %" PRIu64 " coupon uses, %" PRIu64 " dead-lettered, %" PRIu64
                 " refused by MySQL; since start %" PRIu64 " persisted",
                 t->batches - r->batches, t->persisted - r->persisted, t->added - r->added,
                 t->rejected - r->rejected, t->uses - r->uses, t->dead - r->dead,
                 t->conflicts - r->conflicts, t->persisted);
    c->reported = c->total;
    c->reported_ms = now;
}

/* ---- life cycle ------------------------------------------------------------------- */

/* Leaves the group; what is left unprocessed is fetched again by the next owner. */
static void consumer_close(struct consumer *c)
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

static void consumer_free(struct consumer *c)
{
    consumer_close(c);
    free(c->stash);
    free(c->coupons);
    free(c->use_results);
    free(c->records);
    /* Before the batch: its dead letters are the opaques of messages still queued here. */
    if (c->dlq) {
        rd_kafka_flush(c->dlq, 2000);
        rd_kafka_destroy(c->dlq);
    }
    batch_free(&c->batch);
    redis_drop(c);
    db_drop(c);
    luascript_free_all(&c->scripts);
    config_free(&c->cfg);
}

static int consumer_start(struct consumer *c, char *err, size_t errlen)
{
    if (luascript_load_all(&c->scripts, c->cfg.lua_dir, err, errlen) != 0)
        return -1;
    if (batch_init(&c->batch, (size_t)c->cfg.consumer_batch_size) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->dlq = consumer_dlq_new(c, err, errlen);
    if (!c->dlq)
        return -1;
    c->rk = consumer_kafka_new(c, err, errlen);
    if (!c->rk)
        return -1;
    /* Redis and MySQL may be down now: each step connects (and reconnects) by itself. */
    char berr[512];
    if (redis_ensure(c, berr, sizeof(berr)) != 0)
        LOG_WARN("%s (retrying when needed)", berr);
    if (db_ensure(c, berr, sizeof(berr)) != 0)
        LOG_WARN("%s (retrying when needed)", berr);

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

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* A write to a Redis connection the server closed must fail, not kill us. */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: order-consumer [-c FILE] [--set key=value]...\n");
}

int main(int argc, char **argv)
{
    log_set_name("order-consumer");
    static struct consumer c;
    config_init(&c.cfg);
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            config_free(&c.cfg);
            return 0;
        }
    }
    int left = config_from_args(&c.cfg, argc, argv, environ, err, sizeof(err));
    if (left < 0 || left > 1) {
        if (left < 0)
            LOG_ERROR("%s", err);
        else
            LOG_ERROR("unexpected argument '%s'", argv[1]);
        usage(stderr);
        config_free(&c.cfg);
        return 2;
    }
    enum log_level level;
    if (log_parse_level(c.cfg.log_level, &level) == 0)
        log_set_level(level);
    install_signals();

    if (consumermetrics_start(c.cfg.consumer_metrics_host, (int)c.cfg.consumer_metrics_port,
                              err, sizeof(err)) != 0) {
        LOG_ERROR("%s", err);
        consumer_free(&c);
        return 1;
    }
    if (consumer_start(&c, err, sizeof(err)) != 0) {
        LOG_ERROR("%s", err);
        consumermetrics_stop();
        consumer_free(&c);
        return 1;
    }
    consumermetrics_set(CONSUMERMETRICS_READY, 1);
    LOG_INFO("ready (group %s, topic %s, batches of %" PRId64 " or %" PRId64 " ms)",
             c.cfg.consumer_group_id, c.cfg.kafka_topic, c.cfg.consumer_batch_size,
             c.cfg.consumer_batch_timeout_ms);
    c.reported_ms = clock_mono_ms();

    int unfinished = 0;
    while (!stop_requested) {
        batch_reset(&c.batch);
        consumer_fill(&c);
        if (!batch_is_empty(&c.batch) && consumer_process(&c) != 0) {
            unfinished = 1;
            break;
        }
        /* Serves the dead-letter producer's own events (errors) between batches. */
        if (c.dlq)
            rd_kafka_poll(c.dlq, 0);
        consumer_update_lag(&c);
        consumer_summary(&c);
    }
    consumermetrics_set(CONSUMERMETRICS_READY, 0);
    /* A batch being filled when SIGTERM came was finished above before the loop ended. */
    consumer_close(&c);
    const struct consumer_stats *t = &c.total;
    if (unfinished)
        LOG_WARN("stopped with an unfinished batch: it replays at the next start");
    LOG_INFO("stopped after %" PRIu64 " batches: %" PRIu64 " orders persisted (%" PRIu64
             " new), %" PRIu64 " rejected, %" PRIu64 " coupon uses, %" PRIu64 " dead-lettered",
             t->batches, t->persisted, t->added, t->rejected, t->uses, t->dead);
    consumermetrics_stop();
    consumer_free(&c);
    mysql_library_end();
    return 0;
}
