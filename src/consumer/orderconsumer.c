/* order-consumer: reads order.created events from Kafka in batches, claims them in Redis,
 * writes them to MySQL in one transaction, shows them as SUCCESS in Redis, and only then
 * commits the Kafka offsets. A crash anywhere replays the batch, which is idempotent.
 * coupon.used events share the topic: they are written in the same transaction, after
 * the orders, and need nothing in Redis (the gateway marked the coupon used already).
 * Its Prometheus metrics (consumermetrics) are served by a thread of their own.
 * This file is the process: start-up, the loop, the summary lines, shutdown; the modules
 * named in consumer/consumer.h do the work. */
#include "consumer/consumer.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/exposure.h"
#include "common/log.h"
#include "consumer/autoarchive.h"
#include "consumer/backend.h"
#include "consumer/consumermetrics.h"
#include "consumer/deadletter.h"
#include "consumer/intake.h"
#include "consumer/kafkacons.h"
#include "consumer/lifecycle.h"
#include "consumer/pipeline.h"
#include "consumer/publish.h"
#include "consumer/relay.h"
#include "consumer/writer.h"

extern char **environ;

#define SUMMARY_INTERVAL_MS 5000

/* The process, for the signal handler, which only sets its stop flag. */
static struct consumer *signalled;

static void on_signal(int sig)
{
    (void)sig;
    signalled->stop = 1;
}

static void summary(struct consumer *c)
{
    int64_t now = clock_mono_ms();
    if (now - c->reported_ms < SUMMARY_INTERVAL_MS)
        return;
    const struct consumer_stats *t = &c->total, *r = &c->reported;
    if (t->batches != r->batches)
        LOG_INFO("%" PRIu64 " batches, %" PRIu64 " orders persisted (%" PRIu64 " new), %" PRIu64
                 " rejected, %" PRIu64 " coupon uses, %" PRIu64 " dead-lettered (%" PRIu64
                 " refused by MySQL for good), %" PRIu64 " held by another order of their user"
                 "; since start %" PRIu64 " persisted",
                 t->batches - r->batches, t->persisted - r->persisted, t->added - r->added,
                 t->rejected - r->rejected, t->uses - r->uses, t->dead - r->dead,
                 t->refused - r->refused, t->conflicts - r->conflicts, t->persisted);
    c->reported = c->total;
    c->reported_ms = now;
}

static void release(struct consumer *c)
{
    relay_stop(c->relay);
    c->relay = NULL;
    kafkacons_close(c);
    free(c->stash);
    publish_free(c->publish);
    c->publish = NULL;
    parking_free(&c->parking);
    /* Before the batch: its dead letters are the opaques of messages still queued there. */
    deadletter_close(c);
    writer_free(c->writer);
    c->writer = NULL;
    batch_free(&c->writing);
    batch_free(&c->batch);
    backend_redis_drop(c);
    backend_db_drop(c);
    autoarchive_free(c);
    luascript_free_all(&c->scripts);
    config_free(&c->cfg);
}

static int start(struct consumer *c, char *err, size_t errlen)
{
    if (luascript_load_all(&c->scripts, c->cfg.lua_dir, err, errlen) != 0)
        return -1;
    if (batch_init(&c->batch, (size_t)c->cfg.consumer_batch_size) != 0 ||
        batch_init(&c->writing, (size_t)c->cfg.consumer_batch_size) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    parking_init(&c->parking, (size_t)c->cfg.consumer_parked_max, c->cfg.consumer_retry_min_ms,
                 c->cfg.consumer_retry_max_ms);
    c->writer = writer_new(&c->cfg);
    if (!c->writer) {
        snprintf(err, errlen, "the writer thread: out of resources");
        return -1;
    }
    if (deadletter_start(c, err, errlen) != 0)
        return -1;
    c->relay = relay_start(&c->cfg, err, errlen);
    if (!c->relay && err[0])
        return -1;
    /* Redis and MySQL may be down now: each step connects (and reconnects) by itself. */
    char berr[512];
    if (backend_redis(c, berr, sizeof(berr)) != 0)
        LOG_WARN("%s (retrying when needed)", berr);
    if (backend_db(c, berr, sizeof(berr)) != 0)
        LOG_WARN("%s (retrying when needed)", berr);
    return kafkacons_start(c, err, errlen);
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
    signalled = &c;
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
    enum logline_format format;
    if (logline_parse_format(c.cfg.log_format, &format) == 0)
        log_set_format(format);
    exposure_warn_mysql(&c.cfg);
    install_signals();

    if (consumermetrics_start(c.cfg.consumer_metrics_host, (int)c.cfg.consumer_metrics_port,
                              err, sizeof(err)) != 0) {
        LOG_ERROR("%s", err);
        release(&c);
        return 1;
    }
    if (start(&c, err, sizeof(err)) != 0) {
        LOG_ERROR("%s", err);
        consumermetrics_stop();
        release(&c);
        return 1;
    }
    consumermetrics_set(CONSUMERMETRICS_READY, 1);
    LOG_INFO("ready (group %s, topic %s, batches of %" PRId64 " or %" PRId64 " ms)",
             c.cfg.consumer_group_id, c.cfg.kafka_topic, c.cfg.consumer_batch_size,
             c.cfg.consumer_batch_timeout_ms);
    c.reported_ms = clock_mono_ms();

    int unfinished = 0;
    /* Once stopping, the batch the writer holds is still finished. */
    while (!c.stop || writer_holds(c.writer)) {
        batch_reset(&c.batch);
        c.batch.serial = ++c.serials;
        if (!c.stop && parking_feed(&c.parking, &c.batch, c.batch.serial,
                                     (size_t)c.cfg.consumer_batch_size, clock_mono_ms()) < 0) {
            LOG_ERROR("out of memory feeding parked orders again; stopping (they replay)");
            c.stop = 1;
        }
        intake_fill(&c);
        bool idle = c.batch.count == 0 && !writer_holds(c.writer) && !c.stop;
        if (pipeline_turn(&c) != 0) {
            unfinished = 1;
            break;
        }
        deadletter_poll(&c);
        kafkacons_update_lag(&c);
        lifecycle_tick(&c);
        /* Nothing came in: a coupon's walk goes on at once instead of at the next pass. */
        if (idle)
            autoarchive_coupons(&c, false);
        summary(&c);
    }
    consumermetrics_set(CONSUMERMETRICS_READY, 0);
    /* Before the close, whose revocation forgets them. */
    if (c.parking.count > 0)
        LOG_WARN("stopped with %zu orders set aside: their offsets were not committed, they replay",
                 c.parking.count);
    /* A batch being filled when SIGTERM came was finished above before the loop ended. */
    kafkacons_close(&c);
    const struct consumer_stats *t = &c.total;
    if (unfinished)
        LOG_WARN("stopped with an unfinished batch: it replays at the next start");

    LOG_INFO("stopped after %" PRIu64 " batches: %" PRIu64 " orders persisted (%" PRIu64
             " new), %" PRIu64 " rejected, %" PRIu64 " coupon uses, %" PRIu64 " dead-lettered",
             t->batches, t->persisted, t->added, t->rejected, t->uses, t->dead);
    consumermetrics_stop();
    release(&c);
    mysql_library_end();
    return 0;
}
