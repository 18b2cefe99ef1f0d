/* delivery, how a request that writes to Kafka ends, with the gateway's real producer
 * (kafkaprod): against librdkafka's own mock cluster (test.mock.num.brokers) for acks, and
 * against a broker address nobody listens on for failed deliveries. Checked: which of the
 * callbacks run, in which order, how often and whether the client's request is still
 * there when they do, with seckill.order.reply-after-ack on and off, and with the reply
 * held. No broker is needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/config.h"
#include "gateway/delivery.h"
#include "gateway/kafkaprod.h"
#include "../unitloop.h"

#define REQUESTS 20
#define LOG_LEN 128

static struct event_base *base;
static struct config cfg;
static struct kafkaprod *kp;

/* ---- the requests -------------------------------------------------------------------- */

/* One request's context, delivery first as the callers embed it; what happened to it. */
struct request {
    struct delivery d;
    struct evhttp_request *client;  /* d.http until the reply, kept here to be freed */
    char log[LOG_LEN];              /* the callbacks in order, space-separated */
    int callbacks;
    bool http_at_accepted;
    bool http_at_failed;
    bool http_at_finish;
    rd_kafka_resp_err_t err;
    bool at_produce;
};

static struct request requests[REQUESTS];

static void note(struct request *r, const char *what)
{
    size_t len = strlen(r->log);
    snprintf(r->log + len, sizeof(r->log) - len, "%s%s", len ? " " : "", what);
    r->callbacks++;
}

static void on_accepted(struct delivery *d)
{
    struct request *r = (struct request *)d;
    r->http_at_accepted = d->http != NULL;
    note(r, "accepted");
}

static void on_acked(struct delivery *d) { note((struct request *)d, "acked"); }

static void on_failed(struct delivery *d, rd_kafka_resp_err_t err, bool at_produce)
{
    struct request *r = (struct request *)d;
    r->http_at_failed = d->http != NULL;
    r->err = err;
    r->at_produce = at_produce;
    note(r, "failed");
}

static void on_finish(struct delivery *d)
{
    struct request *r = (struct request *)d;
    r->http_at_finish = d->http != NULL;
    note(r, "finish");
}

static const struct delivery_ops ops = {
    .accepted = on_accepted,
    .acked = on_acked,
    .failed = on_failed,
    .finish = on_finish,
};

static const struct delivery_ops ops_without_acked = {
    .accepted = on_accepted,
    .failed = on_failed,
    .finish = on_finish,
};

static struct request *request(int i, const struct delivery_ops *with)
{
    struct request *r = &requests[i];
    memset(r, 0, sizeof(*r));
    r->client = evhttp_request_new(NULL, NULL);
    assert_non_null(r->client);
    delivery_init(&r->d, with, r->client);
    return r;
}

static void deliver(struct request *r, bool reply_after_ack)
{
    static const char payload[] = "{\"orderNo\":\"1\"}";
    delivery_send(&r->d, kp, reply_after_ack, NULL, payload, (int)sizeof(payload) - 1);
}

/* ---- the loop ------------------------------------------------------------------------ */

/* Runs the loop until done() or 10 s (a failed delivery takes message.timeout.ms plus
 * librdkafka's once-a-second timeout scan). */
static bool run_until(bool (*done)(void *), void *arg)
{
    return unitloop_run_until(base, done, arg, 10);
}

/* Runs the loop for ms: time for a late or second callback to show. */
static void run_for(int ms)
{
    unitloop_run_for(base, ms);
}

/* The request is over for the delivery: finished, or handed to `failed`. */
static bool ended(void *arg)
{
    const struct request *r = arg;
    return strstr(r->log, "finish") || strstr(r->log, "failed");
}

static void await_end(struct request *r)
{
    assert_true(run_until(ended, r));
    run_for(50);  /* nothing may follow the end */
}

/* ---- set-up -------------------------------------------------------------------------- */

static void set(const char *key, const char *value)
{
    char err[CONFIG_ERR_LEN];
    if (config_set(&cfg, key, value, err, sizeof(err)) != 0)
        fail_msg("%s", err);
}

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    assert_non_null(base);
    config_init(&cfg);
    set("kafka.topic", "orders");
    set("kafka.producer.statistics.interval.ms", "0");
    return 0;
}

static void start(void)
{
    char err[512];
    kp = kafkaprod_new(base, &cfg, err, sizeof(err));
    if (!kp)
        fail_msg("%s", err);
}

/* A producer of librdkafka's in-process mock cluster: every message is acked. */
static void start_acking(void)
{
    set("kafka.producer.test.mock.num.brokers", "1");
    start();
}

/* A producer whose broker does not exist: every message fails after message.timeout.ms. */
static void start_failing(const char *timeout_ms)
{
    set("kafka.brokers", "127.0.0.1:1");
    set("kafka.producer.message.timeout.ms", timeout_ms);
    set("kafka.producer.reconnect.backoff.ms", "1000");  /* fewer "connection refused" lines */
    start();
}

static int teardown(void **state)
{
    (void)state;
    kafkaprod_free(kp);
    kp = NULL;
    for (int i = 0; i < REQUESTS; i++)
        if (requests[i].client)
            evhttp_request_free(requests[i].client);
    memset(requests, 0, sizeof(requests));
    event_base_free(base);
    config_free(&cfg);
    return 0;
}

/* ---- acked --------------------------------------------------------------------------- */

static void test_an_ack_answers_after_the_ack(void **state)
{
    (void)state;
    start_acking();
    struct request *r = request(0, &ops);
    int64_t before = clock_mono_us();
    deliver(r, true);
    int64_t after = clock_mono_us();
    assert_string_equal(r->log, "");
    assert_true(r->d.produced_us >= before && r->d.produced_us <= after);
    await_end(r);
    assert_string_equal(r->log, "acked accepted finish");
    assert_true(r->http_at_accepted);
    assert_false(r->http_at_finish);
    assert_null(r->d.http);
}

static void test_reply_after_ack_off_answers_at_the_send(void **state)
{
    (void)state;
    start_acking();
    struct request *r = request(0, &ops);
    deliver(r, false);
    assert_string_equal(r->log, "accepted");
    assert_true(r->http_at_accepted);
    assert_null(r->d.http);
    await_end(r);
    assert_string_equal(r->log, "accepted acked finish");
}

static void test_acked_is_optional(void **state)
{
    (void)state;
    start_acking();
    struct request *r = request(0, &ops_without_acked);
    deliver(r, true);
    await_end(r);
    assert_string_equal(r->log, "accepted finish");
}

/* A held reply waits on another verdict: the ack finishes the delivery's share without
 * answering, and the holder answers through delivery_accept once it lets go. */
static void test_a_held_reply_is_not_sent_by_the_ack(void **state)
{
    (void)state;
    start_acking();
    struct request *r = request(0, &ops);
    deliver(r, true);
    r->d.held = true;
    await_end(r);
    assert_string_equal(r->log, "acked finish");
    assert_true(r->http_at_finish);
    delivery_accept(&r->d);
    assert_string_equal(r->log, "acked finish");
    r->d.held = false;
    delivery_accept(&r->d);
    assert_string_equal(r->log, "acked finish accepted");
    assert_null(r->d.http);
}

static void test_a_held_reply_is_not_sent_at_the_send(void **state)
{
    (void)state;
    start_acking();
    struct request *r = request(0, &ops);
    r->d.held = true;
    deliver(r, false);
    assert_string_equal(r->log, "");
    await_end(r);
    assert_string_equal(r->log, "acked finish");
    assert_true(r->http_at_finish);
}

/* Each report reaches its own request, once, however many are out at a time. */
static void test_many_deliveries_each_end_once(void **state)
{
    (void)state;
    start_acking();
    for (int i = 0; i < REQUESTS; i++)
        deliver(request(i, &ops), i % 2 == 0);
    for (int i = 0; i < REQUESTS; i++)
        assert_true(run_until(ended, &requests[i]));
    run_for(50);
    for (int i = 0; i < REQUESTS; i++)
        assert_string_equal(requests[i].log, i % 2 == 0 ? "acked accepted finish" : "accepted acked finish");
}

/* ---- failed at produce --------------------------------------------------------------- */

/* Refused: the caller still holds the client, whichever the setting, and nothing follows. */
static void test_a_refused_produce_fails_at_produce(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        struct request *r = request(i, &ops);
        deliver(r, i == 0);  /* kp is NULL: the producer is gone, as at shutdown */
        assert_string_equal(r->log, "failed");
        assert_true(r->at_produce);
        assert_int_equal(r->err, RD_KAFKA_RESP_ERR__STATE);
        assert_true(r->http_at_failed);
        assert_ptr_equal(r->d.http, r->client);
    }
    run_for(50);
    assert_int_equal(requests[0].callbacks + requests[1].callbacks, 2);
}

/* len < 0: the encoder failed; nothing is produced. */
static void test_an_encoder_failure_fails_at_produce_as_too_large(void **state)
{
    (void)state;
    start_acking();
    struct request *r = request(0, &ops);
    delivery_send(&r->d, kp, false, NULL, "", -1);
    assert_string_equal(r->log, "failed");
    assert_true(r->at_produce);
    assert_int_equal(r->err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    assert_true(r->http_at_failed);
    assert_int_equal(kafkaprod_in_flight(kp), 0);
    run_for(100);
    assert_int_equal(r->callbacks, 1);
}

static void test_a_full_queue_fails_at_produce(void **state)
{
    (void)state;
    set("kafka.producer.queue.buffering.max.messages", "1");
    start_failing("100");
    struct request *queued = request(0, &ops), *refused = request(1, &ops);
    deliver(queued, false);
    deliver(refused, false);
    assert_string_equal(refused->log, "failed");
    assert_true(refused->at_produce);
    assert_int_equal(refused->err, RD_KAFKA_RESP_ERR__QUEUE_FULL);
    assert_true(refused->http_at_failed);
    assert_string_equal(queued->log, "accepted");
}

/* ---- failed at delivery -------------------------------------------------------------- */

static void test_a_failed_delivery_leaves_the_client_to_failed(void **state)
{
    (void)state;
    start_failing("100");
    struct request *r = request(0, &ops);
    deliver(r, true);
    assert_string_equal(r->log, "");
    await_end(r);
    assert_string_equal(r->log, "failed");
    assert_false(r->at_produce);
    assert_int_equal(r->err, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
    assert_true(r->http_at_failed);
}

/* reply-after-ack off: the client was answered at the send; `failed` must not answer again. */
static void test_a_failed_delivery_after_an_early_reply(void **state)
{
    (void)state;
    start_failing("100");
    struct request *r = request(0, &ops);
    deliver(r, false);
    await_end(r);
    assert_string_equal(r->log, "accepted failed");
    assert_false(r->at_produce);
    assert_int_equal(r->err, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
    assert_false(r->http_at_failed);
}

/* A producer freed (shutdown, or recreated after a fatal error) reports what it still had:
 * failed, at once, so every waiting request is answered and undone. */
static void test_a_freed_producer_fails_its_messages(void **state)
{
    (void)state;
    start_failing("60000");
    struct request *a = request(0, &ops), *b = request(1, &ops);
    deliver(a, true);
    deliver(b, false);
    kafkaprod_free(kp);
    kp = NULL;
    assert_string_equal(a->log, "failed");
    assert_string_equal(b->log, "accepted failed");
    assert_false(a->at_produce);
    assert_int_equal(a->err, RD_KAFKA_RESP_ERR__PURGE_QUEUE);
    assert_int_equal(b->err, RD_KAFKA_RESP_ERR__PURGE_QUEUE);
    assert_true(a->http_at_failed);
}

/* ---- delivery_accept ----------------------------------------------------------------- */

static void test_accept_answers_once_and_never_while_held(void **state)
{
    (void)state;
    struct request *r = request(0, &ops);
    r->d.held = true;
    delivery_accept(&r->d);
    assert_string_equal(r->log, "");
    r->d.held = false;
    delivery_accept(&r->d);
    delivery_accept(&r->d);
    assert_string_equal(r->log, "accepted");
    assert_null(r->d.http);
}

/* A context from a pool or the stack: init leaves nothing of its last use. */
static void test_init_forgets_the_last_use(void **state)
{
    (void)state;
    struct request *r = &requests[0];
    memset(r, 0xa5, sizeof(*r));
    r->client = NULL;
    delivery_init(&r->d, &ops, NULL);
    assert_false(r->d.held);
    assert_null(r->d.ticket.done);
    assert_int_equal(r->d.produced_us, 0);
    assert_ptr_equal(r->d.ops, &ops);
    memset(r, 0, sizeof(*r));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_an_ack_answers_after_the_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reply_after_ack_off_answers_at_the_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acked_is_optional, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_held_reply_is_not_sent_by_the_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_held_reply_is_not_sent_at_the_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_deliveries_each_end_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_refused_produce_fails_at_produce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_encoder_failure_fails_at_produce_as_too_large, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_full_queue_fails_at_produce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_delivery_leaves_the_client_to_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_delivery_after_an_early_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_freed_producer_fails_its_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_answers_once_and_never_while_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_forgets_the_last_use, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
