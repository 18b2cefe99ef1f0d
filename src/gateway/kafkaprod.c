#include "gateway/kafkaprod.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kafkaconf.h"
#include "common/log.h"

struct kafkaprod {
    struct event_base *base;
    const struct config *cfg;
    rd_kafka_t *rk;
    rd_kafka_topic_t *topic;
    rd_kafka_queue_t *main_queue;
    int wakeup_pipe[2];
    struct event *wakeup_event;
    struct event *poll_timer;      /* safety net should a wake-up byte ever be missed */
    struct event *recreate_timer;  /* a fatal idempotence error needs a new producer */
    bool healthy;
};

/* Defaults for a user waiting on the answer: librdkafka's default 300 s message timeout would hold
 * a request for minutes. Every one of them can be overridden by kafka.producer.*. */
static const char *const producer_defaults[][2] = {
    { "enable.idempotence", "true" },
    { "acks", "all" },
    { "linger.ms", "1" },
    { "compression.codec", "lz4" },
    { "message.timeout.ms", CONFIG_PRODUCER_MESSAGE_TIMEOUT_MS },
    { "reconnect.backoff.max.ms", "1000" },  /* else a broker outage delays message timeouts ~10 s */
    { "queue.buffering.max.messages", "200000" },
    { "statistics.interval.ms", "1000" },
    { "socket.keepalive.enable", "true" },
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct kafkaprod *kp = opaque;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR)
        kp->healthy = true;
    struct kafkaprod_ticket *ticket = msg->_private;
    ticket->done(ticket, msg->err);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    struct kafkaprod *kp = opaque;
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        kp->healthy = false;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[512];
        rd_kafka_fatal_error(rk, fatal, sizeof(fatal));
        LOG_ERROR("kafka producer fatal error: %s; recreating the producer", fatal);
        struct timeval now = { 0, 0 };
        evtimer_add(kp->recreate_timer, &now);
        return;
    }
    LOG_WARN("kafka: %s: %s", rd_kafka_err2str((rd_kafka_resp_err_t)err), reason);
}

/* librdkafka's statistics say per broker whether its connection is up: the cheapest
 * non-blocking way to answer /healthz. */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    (void)rk;
    struct kafkaprod *kp = opaque;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root)
        return 0;
    bool up = false;
    const cJSON *brokers = cJSON_GetObjectItemCaseSensitive(root, "brokers");
    const cJSON *broker;
    cJSON_ArrayForEach(broker, brokers) {
        const cJSON *state = cJSON_GetObjectItemCaseSensitive(broker, "state");
        const cJSON *nodeid = cJSON_GetObjectItemCaseSensitive(broker, "nodeid");
        if (cJSON_IsString(state) && strcmp(state->valuestring, "UP") == 0 &&
            cJSON_IsNumber(nodeid) && nodeid->valueint >= 0)
            up = true;
    }
    kp->healthy = up;
    cJSON_Delete(root);
    return 0;  /* librdkafka frees the JSON */
}

static void serve_queue(struct kafkaprod *kp)
{
    if (kp->rk)
        rd_kafka_poll(kp->rk, 0);
}

static void on_wakeup(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[256];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    serve_queue(arg);
}

static void on_poll_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    serve_queue(arg);
}

static int producer_create(struct kafkaprod *kp, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (kafkaconf_set(conf, "kafka.brokers", "bootstrap.servers", kp->cfg->kafka_brokers, err, errlen) != 0)
        goto fail;
    for (size_t i = 0; i < sizeof(producer_defaults) / sizeof(producer_defaults[0]); i++)
        if (kafkaconf_set(conf, producer_defaults[i][0], producer_defaults[i][0], producer_defaults[i][1],
                          err, errlen) != 0)
            goto fail;
    if (kafkaconf_set_pairs(conf, "kafka.producer.", kp->cfg->kafka_producer, kp->cfg->kafka_producer_count,
                            err, errlen) != 0)
        goto fail;
    rd_kafka_conf_set_opaque(conf, kp);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    rd_kafka_conf_set_log_cb(conf, kafkaconf_log);
    char why[512];
    kp->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
    if (!kp->rk) {
        snprintf(err, errlen, "kafka producer: %s", why);
        goto fail;
    }
    kp->topic = rd_kafka_topic_new(kp->rk, kp->cfg->kafka_topic, NULL);
    kp->main_queue = rd_kafka_queue_get_main(kp->rk);
    rd_kafka_queue_io_event_enable(kp->main_queue, kp->wakeup_pipe[1], "1", 1);
    return 0;
fail:
    if (!kp->rk)
        rd_kafka_conf_destroy(conf);
    return -1;
}

/* Every message of the old producer gets its delivery report (purged = failure), so
 * each waiting request is answered and its reservation rolled back before the new
 * producer takes over. At exit those reports still need Redis, the marks and the
 * activity cache: seckillserver.c frees the producer before them. */
static void producer_destroy(struct kafkaprod *kp)
{
    if (!kp->rk)
        return;
    rd_kafka_purge(kp->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(kp->rk, 0);
    rd_kafka_queue_io_event_enable(kp->main_queue, -1, NULL, 0);
    rd_kafka_queue_destroy(kp->main_queue);
    rd_kafka_topic_destroy(kp->topic);
    rd_kafka_t *rk = kp->rk;
    kp->rk = NULL;
    rd_kafka_destroy(rk);
}

static void on_recreate(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct kafkaprod *kp = arg;
    producer_destroy(kp);
    char err[512];
    if (producer_create(kp, err, sizeof(err)) != 0) {
        LOG_ERROR("recreating the kafka producer failed: %s; retrying in 1 s", err);
        struct timeval later = { 1, 0 };
        evtimer_add(kp->recreate_timer, &later);
    }
}

struct kafkaprod *kafkaprod_new(struct event_base *base, const struct config *cfg, char *err,
                                size_t errlen)
{
    struct kafkaprod *kp = calloc(1, sizeof(*kp));
    if (!kp) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    kp->base = base;
    kp->cfg = cfg;
    if (pipe(kp->wakeup_pipe) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        free(kp);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(kp->wakeup_pipe[i], F_SETFL, fcntl(kp->wakeup_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(kp->wakeup_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    kp->wakeup_event = event_new(base, kp->wakeup_pipe[0], EV_READ | EV_PERSIST, on_wakeup, kp);
    kp->poll_timer = event_new(base, -1, EV_PERSIST, on_poll_timer, kp);
    kp->recreate_timer = evtimer_new(base, on_recreate, kp);
    if (producer_create(kp, err, errlen) != 0) {
        kafkaprod_free(kp);
        return NULL;
    }
    event_add(kp->wakeup_event, NULL);
    struct timeval tick = { 0, 100 * 1000 };
    event_add(kp->poll_timer, &tick);
    return kp;
}

void kafkaprod_free(struct kafkaprod *kp)
{
    if (!kp)
        return;
    producer_destroy(kp);
    event_free(kp->wakeup_event);
    event_free(kp->poll_timer);
    event_free(kp->recreate_timer);
    close(kp->wakeup_pipe[0]);
    close(kp->wakeup_pipe[1]);
    free(kp);
}

rd_kafka_resp_err_t kafkaprod_produce(struct kafkaprod *kp, const void *key, size_t keylen,
                                      const void *payload, size_t len, struct kafkaprod_ticket *ticket)
{
    if (!kp || !kp->rk)
        return RD_KAFKA_RESP_ERR__STATE;
    if (rd_kafka_produce(kp->topic, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void *)payload,
                         len, key, keylen, ticket) != 0)
        return rd_kafka_last_error();
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

int kafkaprod_flush(struct kafkaprod *kp, int timeout_ms)
{
    if (!kp || !kp->rk)
        return 0;
    return rd_kafka_flush(kp->rk, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
}

bool kafkaprod_healthy(const struct kafkaprod *kp) { return kp && kp->rk && kp->healthy; }

int kafkaprod_in_flight(const struct kafkaprod *kp) { return kp && kp->rk ? rd_kafka_outq_len(kp->rk) : 0; }
