#ifndef SK_CONSUMER_H
#define SK_CONSUMER_H

#include <hiredis/hiredis.h>
#include <librdkafka/rdkafka.h>
#include <mysql.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/luascript.h"
#include "store/redisroute.h"
#include "consumer/batch.h"
#include "consumer/parking.h"
#include "consumer/persist.h"
#include "store/couponarchive.h"

struct publish_cache;
struct relay;
struct writer;
struct autoarchive_skip;

/* The order-consumer process (orderconsumer.c: main and the loop). The modules each do one
 * job on it: backend (Redis and MySQL connections), kafkacons (the group member: set-up,
 * rebalances, pause, lag, commit), intake (reading one batch), deadletter (the DLQ
 * producer), retry (a step until it succeeds), claim (confirm/finalize/abandon in
 * Redis), publish (user coupon records in Redis), parking (orders set aside while their
 * slot cannot be written), pipeline (the steps of the batches in order, two at a time),
 * writer (the MySQL write of a batch on a thread of its own), relay (the outcome events,
 * on a thread of its own). persist writes a batch to
 * MySQL, splitting it (split) when MySQL refuses part of it for good (sqlerror). */

#define CONSUMER_SLICE_MS 100   /* longest wait without looking at the stop flag */

struct consumer_stats {
    uint64_t batches;
    uint64_t persisted;   /* orders whose row is in MySQL and shown as SUCCESS */
    uint64_t added;       /* rows that were new (the rest were replays) */
    uint64_t rejected;
    uint64_t dead;
    uint64_t refused;     /* orders and uses MySQL refused for good (dead-lettered too) */
    uint64_t conflicts;
    uint64_t uses;        /* coupon.used events applied or found applied already */
};

/* Milliseconds spent in each part of a batch, for the DEBUG line, and when its claim began
 * (monotonic µs), for its duration. */
struct consumer_times {
    int64_t fill, dead, claim, persist, publish, finalize, abandon, commit;
    int64_t started_us;
};

/* The process: one, static in main. Ownership: every handle, the stash, the batch and the
 * publish cache belong to it and are released by main when it ends; rk, dlq, redis and
 * db are NULL while not open (redis and db reconnect in each step, via backend). Only the
 * consumer thread touches it; the signal handler only sets stop. */
struct consumer {
    struct config cfg;
    struct luascript_set scripts;
    volatile sig_atomic_t stop;  /* SIGTERM/SIGINT, or out of memory: finish and leave */
    rd_kafka_t *rk;              /* high-level consumer (kafkacons) */
    rd_kafka_t *dlq;             /* idempotent producer of the dead-letter topic (deadletter) */
    char dlq_error[256];         /* last failed dead-letter delivery */
    struct redisroute *redis;    /* one Redis, or the masters of a Redis Cluster */
    MYSQL *db;                   /* every statement but the batches' writes (writer) */
    struct writer *writer;       /* the batches' writes, on a thread of their own */
    struct relay *relay;         /* the outcome events' publisher (relay.h); NULL: none */
    /* The batch being filled, claimed or finished; the one the writer holds (or held last)
     * and its times. pipeline.h says how they change places. */
    struct batch batch;
    struct batch writing;
    struct consumer_times writing_times;
    /* Messages that arrived while a step was being retried (a rebalance can hand over
     * partitions that are not paused yet): they open the next batch. Owned until
     * intake_fill or kafkacons_close destroys them. */
    rd_kafka_message_t **stash;
    size_t stash_count;
    size_t stash_cap;
    int paused;                  /* the assignment is paused while a step is retried */
    struct publish_cache *publish;   /* publish.c's, made at its first batch */
    struct parking parking;          /* orders set aside while their slot cannot be written */
    int reservation_failure;               /* enum reservation_failure of the last failed script call */
    uint64_t serials;                /* batches numbered so far (batch.serial) */
    struct consumer_times times;     /* of c->batch */
    struct sqltx_stats persisted;  /* of c->batch */
    struct consumer_stats total;
    struct consumer_stats reported;  /* total at the last summary line */
    int64_t reported_ms;
    int64_t lifecycle_ms;            /* monotonic time of the last lifecycle pass, 0: none yet */
    struct autoarchive_skip *archive_skip;  /* sales the archive refused, and when to try again */
    struct couponarchive_walk coupon_walk;  /* the coupon whose records leave Redis now, if coupon_id */
};

#endif
