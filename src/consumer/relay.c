#include "consumer/relay.h"

#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/kafkaconf.h"
#include "common/log.h"
#include "consumer/consumermetrics.h"
#include "consumer/kafkacons.h"
#include "store/sqltext.h"
#include "store/db.h"

/* Outbox rows per pass (each the events of one transaction, up to 5,000): one SELECT,
 * one DELETE, and a flush that acknowledges their events together. */
#define RELAY_ROWS 8
#define RELAY_SLICE_MS 100     /* longest wait without looking at the stop flag */
#define RELAY_STOP_GRACE_MS 1000
#define RELAY_LINGER_MS "20"

struct relay_row {
    uint64_t id;
    size_t first, count;   /* its events in relay.states */
};

struct relay {
    const struct config *cfg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_bool stop;
    MYSQL *db;
    rd_kafka_t *rk;
    bool holder;              /* db's session holds the relay lock */
    char lock_name[192];
    char failure[256];        /* the last delivery error */
    struct relay_row rows[RELAY_ROWS];
    int *states;              /* per event of the pass: 0 in flight, 1 acknowledged, -1 failed */
    size_t states_cap;
    struct sqltext sql;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct relay *r = opaque;
    int *state = msg->_private;
    if (!state)
        return;
    *state = msg->err == RD_KAFKA_RESP_ERR_NO_ERROR ? 1 : -1;
    if (msg->err)
        snprintf(r->failure, sizeof(r->failure), "%s", rd_kafka_err2str(msg->err));
}

static rd_kafka_t *producer_new(struct relay *r, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = kafkaconf_idempotent(r->cfg, "order-consumer-outcomes", err, errlen);
    /* Events are not answers anyone waits on: fuller batches cost less per event than
     * the gateway's kafka.producer.linger.ms would. */
    if (conf && kafkaconf_set(conf, "order-consumer", "linger.ms", RELAY_LINGER_MS, err, errlen) != 0) {
        rd_kafka_conf_destroy(conf);
        conf = NULL;
    }
    if (!conf)
        return NULL;
    rd_kafka_conf_set_opaque(conf, r);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, kafkacons_on_error);
    char kerr[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, kerr, sizeof(kerr));
    if (!rk) {
        snprintf(err, errlen, "kafka outcome producer: %s", kerr);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

/* Waits ms, or less when stopped. */
static void relay_wait(struct relay *r, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&r->lock);
    while (!atomic_load(&r->stop) && pthread_cond_timedwait(&r->wake, &r->lock, &until) == 0)
        ;
    pthread_mutex_unlock(&r->lock);
}

static void drop_db(struct relay *r)
{
    if (r->db)
        mysql_close(r->db);
    r->db = NULL;
    if (r->holder)
        consumermetrics_set(CONSUMERMETRICS_OUTCOME_RELAY, 0);
    r->holder = false;
}

/* Becomes the relay when no other session holds the lock. Returns -1 when MySQL failed. */
static int take_lock(struct relay *r)
{
    sqltext_reset(&r->sql);
    sqltext_printf(&r->sql, "SELECT GET_LOCK(");
    sqltext_quoted(&r->sql, r->db, r->lock_name);
    sqltext_printf(&r->sql, ", 0)");
    char err[256];
    MYSQL_RES *res = r->sql.failed ? NULL : db_select(r->db, r->sql.data, err, sizeof(err));
    if (!res) {
        LOG_WARN("outcome relay: %s", r->sql.failed ? "out of memory" : err);
        return -1;
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    r->holder = row && row[0] && strcmp(row[0], "1") == 0;
    mysql_free_result(res);
    if (r->holder) {
        consumermetrics_set(CONSUMERMETRICS_OUTCOME_RELAY, 1);
        LOG_INFO("outcome relay: publishing outcome events to %s", r->cfg->kafka_outcome_topic);
    }
    return 0;
}

/* Produces the events of one row, "<userId>\t<payload>\n" lines, each with its state at
 * r->states[*sent]. Returns -1 when librdkafka refused one (the rest are not sent). */
static int produce(struct relay *r, const char *text, size_t len, size_t *sent, size_t limit)
{
    const char *end = text + len;
    while (text < end) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        const char *line_end = nl ? nl : end;
        const char *tab = memchr(text, '\t', (size_t)(line_end - text));
        if (!tab || *sent == limit) {
            snprintf(r->failure, sizeof(r->failure), "an outbox row not as written");
            return -1;
        }
        int *state = &r->states[*sent];
        *state = 0;
        rd_kafka_resp_err_t err;
        /* A full queue empties as Kafka acknowledges: wait for room rather than fail. */
        while ((err = rd_kafka_producev(
                    r->rk, RD_KAFKA_V_TOPIC(r->cfg->kafka_outcome_topic),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_KEY(text, (size_t)(tab - text)),
                    RD_KAFKA_V_VALUE((void *)(uintptr_t)(tab + 1), (size_t)(line_end - tab - 1)),
                    RD_KAFKA_V_OPAQUE(state), RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL &&
               !atomic_load(&r->stop))
            rd_kafka_poll(r->rk, RELAY_SLICE_MS);
        if (err) {
            snprintf(r->failure, sizeof(r->failure), "%s", rd_kafka_err2str(err));
            return -1;
        }
        (*sent)++;
        text = line_end + 1;
    }
    return 0;
}

/* Until every message is acknowledged or failed (message.timeout.ms bounds it), or for
 * a moment once stopping. */
static void await_acks(struct relay *r)
{
    int64_t grace_end = 0;
    while (rd_kafka_outq_len(r->rk) > 0) {
        rd_kafka_flush(r->rk, RELAY_SLICE_MS);
        if (!atomic_load(&r->stop))
            continue;
        if (grace_end == 0)
            grace_end = clock_mono_ms() + RELAY_STOP_GRACE_MS;
        else if (clock_mono_ms() > grace_end)
            break;
    }
}

/* Deletes rows [0, n): every event of theirs acknowledged, so published. */
static int forget(struct relay *r, size_t n)
{
    sqltext_reset(&r->sql);
    sqltext_printf(&r->sql, "DELETE FROM outcome_outbox WHERE id IN (");
    for (size_t i = 0; i < n; i++)
        sqltext_printf(&r->sql, "%s%" PRIu64, i ? "," : "", r->rows[i].id);
    sqltext_printf(&r->sql, ")");
    char err[256];
    if (r->sql.failed || db_exec(r->db, r->sql.data, err, sizeof(err)) != 0) {
        LOG_WARN("outcome relay: %s: the events of %zu outbox rows, published, are published "
                 "again", r->sql.failed ? "out of memory" : err, n);
        return -1;
    }
    return 0;
}

/* Room for the states of n events. */
static int reserve_states(struct relay *r, size_t n)
{
    if (n <= r->states_cap)
        return 0;
    int *grown = realloc(r->states, n * sizeof(*grown));
    if (!grown)
        return -1;
    r->states = grown;
    r->states_cap = n;
    return 0;
}

/* Produces the events of the rows of res; returns the rows read, and the rows all of whose
 * events were handed to librdkafka in *taken. The states are sized first: the messages
 * in flight point into them. */
static size_t produce_rows(struct relay *r, MYSQL_RES *res, size_t *sent, size_t *taken)
{
    size_t n = 0, total = 0;
    *sent = *taken = 0;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res)) != NULL)
        total += row[1] ? strtoull(row[1], NULL, 10) : 0;
    if (reserve_states(r, total + 1) != 0) {
        snprintf(r->failure, sizeof(r->failure), "out of memory");
        return mysql_num_rows(res);
    }
    mysql_data_seek(res, 0);
    while (n < RELAY_ROWS && (row = mysql_fetch_row(res)) != NULL) {
        unsigned long *len = mysql_fetch_lengths(res);
        struct relay_row *out = &r->rows[n++];
        out->id = strtoull(row[0], NULL, 10);
        out->first = *sent;
        out->count = strtoull(row[1], NULL, 10);
        if (n == 1) {
            long long age = row[3] ? strtoll(row[3], NULL, 10) : 0;
            consumermetrics_set(CONSUMERMETRICS_OUTCOME_AGE, age > 0 ? (uint64_t)age : 0);
        }
        size_t before = *sent;
        if (produce(r, row[2], len[2], sent, before + out->count) != 0)
            break;
        if (*sent - before != out->count) {
            snprintf(r->failure, sizeof(r->failure), "outbox row %" PRIu64 " holds %zu events, "
                     "not %zu", out->id, *sent - before, out->count);
            break;
        }
        (*taken)++;
    }
    return n;
}

/* One pass over the oldest outbox rows. Returns the events published, or -1 when MySQL
 * or Kafka failed (the rows all of whose events were acknowledged before the first
 * failure are deleted, so the rest go out again in order). */
static int pass(struct relay *r)
{
    char err[512];
    if (!r->db && !(r->db = db_connect(r->cfg, err, sizeof(err)))) {
        LOG_WARN("outcome relay: %s", err);
        return -1;
    }
    if (!r->holder && take_lock(r) != 0) {
        drop_db(r);
        return -1;
    }
    if (!r->holder)
        return 0;
    char fatal[256];
    if (r->rk && rd_kafka_fatal_error(r->rk, fatal, sizeof(fatal)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        LOG_WARN("outcome relay: producer failed (%s): starting a new one", fatal);
        rd_kafka_destroy(r->rk);
        r->rk = NULL;
    }
    if (!r->rk && !(r->rk = producer_new(r, err, sizeof(err)))) {
        LOG_WARN("outcome relay: %s", err);
        return -1;
    }
    char select[192];
    snprintf(select, sizeof(select), "SELECT id, event_count, events, TIMESTAMPDIFF(SECOND, "
             "created_at, NOW(3)) FROM outcome_outbox ORDER BY id LIMIT %d", RELAY_ROWS);
    MYSQL_RES *res = db_select(r->db, select, err, sizeof(err));
    if (!res) {
        LOG_WARN("outcome relay: %s", err);
        drop_db(r);
        return -1;
    }
    r->failure[0] = '\0';
    size_t sent, taken;
    size_t rows = produce_rows(r, res, &sent, &taken);
    mysql_free_result(res);
    if (rows == 0) {
        consumermetrics_set(CONSUMERMETRICS_OUTCOME_AGE, 0);
        return 0;
    }
    await_acks(r);
    size_t done = 0, events = 0;
    for (; done < taken; done++) {
        const struct relay_row *row = &r->rows[done];
        size_t acked = 0;
        while (acked < row->count && r->states[row->first + acked] == 1)
            acked++;
        if (acked < row->count)
            break;
        events += row->count;
    }
    if (done > 0) {
        if (forget(r, done) != 0) {
            drop_db(r);
            return -1;
        }
        consumermetrics_add(CONSUMERMETRICS_OUTCOMES_PUBLISHED, events);
    }
    if (done < rows) {
        LOG_WARN("outcome relay: %zu of %zu outbox rows not published to %s (%s): sent again",
                 rows - done, rows, r->cfg->kafka_outcome_topic,
                 r->failure[0] ? r->failure : "stopping");
        return -1;
    }
    return (int)rows;
}

static void *run(void *arg)
{
    struct relay *r = arg;
    mysql_thread_init();
    int64_t backoff = r->cfg->consumer_retry_min_ms;
    while (!atomic_load(&r->stop)) {
        int n = pass(r);
        if (n < 0) {
            relay_wait(r, backoff);
            backoff = backoff * 2 < r->cfg->consumer_retry_max_ms ? backoff * 2
                                                                   : r->cfg->consumer_retry_max_ms;
            continue;
        }
        backoff = r->cfg->consumer_retry_min_ms;
        if (n < RELAY_ROWS)
            relay_wait(r, r->cfg->consumer_outcome_interval_ms);
    }
    drop_db(r);
    mysql_thread_end();
    return NULL;
}

struct relay *relay_start(const struct config *cfg, char *err, size_t errlen)
{
    err[0] = '\0';
    if (cfg->kafka_outcome_topic[0] == '\0')
        return NULL;
    struct relay *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "outcome relay: out of memory");
        return NULL;
    }
    r->cfg = cfg;
    atomic_init(&r->stop, false);
    /* Per database: consumers of other databases on one server relay their own. */
    snprintf(r->lock_name, sizeof(r->lock_name), "seckill.outcome-relay.%s", cfg->mysql_database);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&r->lock, NULL) == 0;
    if (ok && pthread_cond_init(&r->wake, &attr) != 0) {
        pthread_mutex_destroy(&r->lock);
        ok = 0;
    }
    pthread_condattr_destroy(&attr);
    if (ok && !(r->rk = producer_new(r, err, errlen))) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    if (ok && pthread_create(&r->thread, NULL, run, r) != 0) {
        rd_kafka_destroy(r->rk);
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        ok = 0;
    }
    if (!ok) {
        snprintf(err, errlen, "outcome relay: cannot start its thread");
        free(r);
        return NULL;
    }
    return r;
}

void relay_stop(struct relay *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    atomic_store(&r->stop, true);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    if (r->rk) {
        rd_kafka_flush(r->rk, RELAY_STOP_GRACE_MS);
        rd_kafka_destroy(r->rk);
    }
    sqltext_free(&r->sql);
    free(r->states);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}
