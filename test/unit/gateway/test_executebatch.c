/* executebatch, the coalescing of execute requests, on a real loop against fake Redis nodes
 * (test/unit/fakeredis.h): the requests of one sale's bucket that arrive in one pass go out
 * as one execute.lua call (split at seckill.execute-batch-max), with the keys and arguments
 * the script reads; each request gets its own element of the script's array, in order; a
 * reply of any other shape, a lost connection or a call that cannot be sent fails every
 * request of the call, and `sent` tells the request which of those it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bucket.h"
#include "common/config.h"
#include "common/redisslot.h"
#include "common/textbuf.h"
#include "gateway/activity.h"
#include "gateway/executebatch.h"
#include "gateway/metrics.h"
#include "gateway/redisconn.h"
#include "../fakeredis.h"
#include "../unitloop.h"

#define SALE 7
#define OTHER_SALE 8
#define THIRD_SALE 9
#define MAX_REQUESTS 600
#define MAX_CALLS 64

static struct event_base *base;
static struct fakeredis nodes_state;
static struct config cfg;
static struct luascript_set scripts;
static struct redisconn *rc;
static struct activity_cache *cache;
static struct executebatch *batch;

/* ---- the requests -------------------------------------------------------------------- */

/* One request's view of its verdict, copied (a reply lives only during the callback). */
struct request {
    struct executebatch_item item;  /* first: the verdict callback casts back */
    char user[24];
    char order_no[32];
    int verdicts;
    int order;          /* when its verdict came, among every verdict of the test */
    bool null;
    bool sent;          /* item.sent when the verdict came */
    bool unreplicated;
    int type;
    size_t elements;
    char status[16];
    char echoed_user[24];
    char echoed_order[32];
};

static struct request requests[MAX_REQUESTS];
static int verdicts_given;

static void on_verdict(struct executebatch_item *item, const redisReply *verdict)
{
    struct request *r = (struct request *)item;
    r->verdicts++;
    r->order = verdicts_given++;
    r->sent = item->sent;
    r->unreplicated = item->unreplicated;
    r->null = verdict == NULL;
    if (!verdict)
        return;
    r->type = verdict->type;
    r->elements = verdict->elements;
    if (verdict->type != REDIS_REPLY_ARRAY || verdict->elements != 3)
        return;
    snprintf(r->status, sizeof(r->status), "%s", verdict->element[0]->str);
    snprintf(r->echoed_user, sizeof(r->echoed_user), "%s", verdict->element[1]->str);
    snprintf(r->echoed_order, sizeof(r->echoed_order), "%s", verdict->element[2]->str);
}

/* requests[i] as a request of user 1000 + i. */
static struct request *request(int i, int64_t activity_id, int bucket)
{
    struct request *r = &requests[i];
    memset(r, 0, sizeof(*r));
    snprintf(r->user, sizeof(r->user), "%d", 1000 + i);
    snprintf(r->order_no, sizeof(r->order_no), "order-%d", i);
    r->item.activity_id = activity_id;
    r->item.bucket = bucket;
    r->item.user = r->user;
    r->item.order_no = r->order_no;
    r->item.accepted_ms = 1700000000000 + i;
    snprintf(r->item.ip, sizeof(r->item.ip), "10.0.%d.%d", i / 250, i % 250);
    snprintf(r->item.nonce, sizeof(r->item.nonce), "nonce%d", i);
    r->item.verdict = on_verdict;
    return r;
}

static struct request *add(int i, int64_t activity_id, int bucket)
{
    struct request *r = request(i, activity_id, bucket);
    executebatch_add(batch, &r->item);
    return r;
}

/* The request got its own element of the script's answer, once. */
static void assert_own_verdict(const struct request *r)
{
    assert_int_equal(r->verdicts, 1);
    assert_false(r->null);
    assert_true(r->sent);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->status, "OK");
    assert_string_equal(r->echoed_user, r->user);
    assert_string_equal(r->echoed_order, r->order_no);
}

static void assert_failed(const struct request *r, bool sent)
{
    assert_int_equal(r->verdicts, 1);
    assert_true(r->null);
    assert_true(r->sent == sent);
}

/* ---- the fake's execute.lua ---------------------------------------------------------- */

/* What the fake's execute.lua answers a call. */
enum answer_shape {
    ANSWER_VERDICTS,     /* an array of one {"OK", user, order} per request */
    ANSWER_SHORT,        /* the same without its last element */
    ANSWER_LONG,         /* the same with one element too many */
    ANSWER_ERROR,        /* an error reply */
    ANSWER_NIL,
    ANSWER_INTEGER,      /* a reply of another type */
    ANSWER_NOTHING,      /* no answer: the call hangs */
};

/* One execute.lua call as it reached a node. */
struct call {
    char node;
    int argc;
    char **argv;
};

static struct call calls[MAX_CALLS];
static int call_count;
static enum answer_shape shape;
/* Listed in seckill:activities, and its bucket tags (activity.lua's field 'tags'). */
static int64_t listed_sale;
static char listed_tags[BUCKET_LIST_LEN];

static bool is_script(const char *sha, enum luascript_id id)
{
    return strcmp(sha, scripts.scripts[id].sha) == 0;
}

static int call_nkeys(const struct call *c) { return atoi(c->argv[2]); }
static int call_requests(const struct call *c) { return (call_nkeys(c) - 5) / 5; }
static const char *call_key(const struct call *c, int i) { return c->argv[3 + i]; }
static const char *call_arg(const struct call *c, int i) { return c->argv[3 + call_nkeys(c) + i]; }

static void answer_verdicts(const struct call *c, size_t elements, struct evbuffer *out)
{
    fakeredis_reply_array(out, elements);
    for (size_t i = 0; i < elements; i++) {
        int k = (int)i < call_requests(c) ? (int)i : 0;
        fakeredis_reply_array(out, 3);
        fakeredis_reply_bulk(out, "OK");
        fakeredis_reply_bulk(out, call_arg(c, 7 + 3 * k));
        fakeredis_reply_bulk(out, call_arg(c, 8 + 3 * k));
    }
}

static void answer_execute(const struct call *c, struct evbuffer *out)
{
    size_t n = (size_t)call_requests(c);
    switch (shape) {
    case ANSWER_VERDICTS: answer_verdicts(c, n, out); break;
    case ANSWER_SHORT: answer_verdicts(c, n - 1, out); break;
    case ANSWER_LONG: answer_verdicts(c, n + 1, out); break;
    case ANSWER_ERROR: fakeredis_reply_error(out, "ERR user_script:1: boom"); break;
    case ANSWER_NIL: fakeredis_reply_nil(out); break;
    case ANSWER_INTEGER: fakeredis_reply_int(out, 1); break;
    case ANSWER_NOTHING: break;
    }
}

/* activity.lua's answer for the listed sale's bucket whose activity key is `key`. */
static void answer_activity(const char *key, struct evbuffer *out)
{
    char own[KEYS_LEN];
    snprintf(own, sizeof(own), "seckill:activity:{%" PRId64 "}", listed_sale);
    static const char *const fields[8] = { "sale", "1", "100", "0", "99999999999999", "ACTIVE", "50", "0" };
    fakeredis_reply_array(out, 9);
    for (int i = 0; i < 8; i++)
        fakeredis_reply_bulk(out, fields[i]);
    fakeredis_reply_bulk(out, strcmp(key, own) == 0 ? listed_tags : "");
}

static bool answer(struct fakeredis_node *f, int argc, char **argv, struct evbuffer *out)
{
    if (strcmp(argv[0], "SMEMBERS") == 0) {
        char id[24];
        snprintf(id, sizeof(id), "%" PRId64, listed_sale);
        fakeredis_reply_array(out, listed_sale ? 1 : 0);
        if (listed_sale)
            fakeredis_reply_bulk(out, id);
        return true;
    }
    if (strcmp(argv[0], "EVALSHA") != 0)
        return false;
    if (is_script(argv[1], LUASCRIPT_ACTIVITY)) {
        answer_activity(argv[3], out);
        return true;
    }
    if (!is_script(argv[1], LUASCRIPT_EXECUTE))
        return false;
    assert_true(call_count < MAX_CALLS);
    struct call *c = &calls[call_count++];
    c->node = f->name;
    c->argc = argc;
    c->argv = calloc((size_t)argc, sizeof(*c->argv));
    assert_non_null(c->argv);
    for (int i = 0; i < argc; i++) {
        c->argv[i] = strdup(argv[i]);
        assert_non_null(c->argv[i]);
    }
    answer_execute(c, out);
    return true;
}

/* ---- the loop ------------------------------------------------------------------------ */

/* Runs the loop until done() or 3 s. */
static bool run_until(bool (*done)(void *), void *arg)
{
    return unitloop_run_until(base, done, arg, 3);
}

/* One pass of the loop: the flush of what was added before it runs in it. */
static void run_pass(void) { event_base_loop(base, EVLOOP_NONBLOCK); }

/* Runs the loop for ms: time for anything late (a second verdict, a stray call) to show. */
static void run_for(int ms)
{
    unitloop_run_for(base, ms);
}

static bool is_ready(void *arg) { return redisconn_ready(arg); }
static bool is_down(void *arg) { return !redisconn_ready(arg); }

static bool all_answered(void *arg)
{
    int n = *(int *)arg;
    for (int i = 0; i < n; i++)
        if (requests[i].verdicts == 0)
            return false;
    return true;
}

/* Runs the loop until requests[0..n) all have their verdict. */
static void await_verdicts(int n) { assert_true(run_until(all_answered, &n)); }

static bool calls_reached(void *arg) { return call_count >= *(int *)arg; }

/* ---- set-up -------------------------------------------------------------------------- */

static void set(const char *key, const char *value)
{
    char err[CONFIG_ERR_LEN];
    if (config_set(&cfg, key, value, err, sizeof(err)) != 0)
        fail_msg("%s", err);
}

static char nodes_list[64];

static void use_cluster(void)
{
    snprintf(nodes_list, sizeof(nodes_list), "127.0.0.1:%d,127.0.0.1:%d", fake->node[0].port,
             fake->node[1].port);
    set("redis.nodes", nodes_list);
}

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    assert_non_null(base);
    assert_int_equal(fakeredis_bind(&nodes_state), 0);
    assert_int_equal(fakeredis_serve(base), 0);
    fake->answer = answer;
    shape = ANSWER_VERDICTS;
    call_count = 0;
    verdicts_given = 0;
    listed_sale = 0;
    listed_tags[0] = '\0';
    memset(requests, 0, sizeof(requests));
    config_init(&cfg);
    char port[16];
    snprintf(port, sizeof(port), "%d", fake->node[0].port);
    set("redis.host", "127.0.0.1");
    set("redis.port", port);
    set("redis.reconnect-min-ms", "50");
    set("redis.reconnect-max-ms", "100");
    set("seckill.activity-refresh-ms", "600000");  /* the tests refresh when they need one */
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        scripts.scripts[i].name = "fake";
        scripts.scripts[i].body = "return 1";
        scripts.scripts[i].body_len = 8;
        snprintf(scripts.scripts[i].sha, sizeof(scripts.scripts[i].sha), "%040d", i + 1);
    }
    return 0;
}

/* Connects and makes the batch, with the configuration as the test left it. */
static void start(void)
{
    rc = redisconn_new(base, &cfg, &scripts);
    assert_non_null(rc);
    assert_true(run_until(is_ready, rc));
    cache = activity_cache_new(base, &cfg, rc);
    assert_non_null(cache);
    batch = executebatch_new(base, &cfg, rc, cache);
    assert_non_null(batch);
}

static int teardown(void **state)
{
    (void)state;
    executebatch_free(batch);
    activity_cache_free(cache);
    redisconn_free(rc);
    batch = NULL;
    cache = NULL;
    rc = NULL;
    fakeredis_stop(0);
    fakeredis_stop(1);
    event_base_free(base);
    config_free(&cfg);
    for (int i = 0; i < call_count; i++) {
        for (int k = 0; k < calls[i].argc; k++)
            free(calls[i].argv[k]);
        free(calls[i].argv);
    }
    return 0;
}

/* The value of a counter on the metrics page. */
static long long metric(const char *name)
{
    struct textbuf t;
    textbuf_init(&t);
    metrics_render(&t);
    char *page = textbuf_take(&t);
    assert_non_null(page);
    char line[128];
    snprintf(line, sizeof(line), "\n%s ", name);
    const char *at = strstr(page, line);
    long long v = at ? atoll(at + strlen(line)) : -1;
    free(page);
    assert_true(v >= 0);
    return v;
}

/* ---- batching ------------------------------------------------------------------------ */

static void test_one_pass_of_one_sale_is_one_call(void **state)
{
    (void)state;
    start();
    for (int i = 0; i < 3; i++)
        add(i, SALE, 0);
    /* nothing goes out, nor is answered, before the loop's pass ends */
    assert_int_equal(verdicts_given, 0);
    assert_false(requests[0].item.sent);
    await_verdicts(3);
    assert_int_equal(call_count, 1);
    assert_int_equal(call_requests(&calls[0]), 3);
    for (int i = 0; i < 3; i++) {
        assert_own_verdict(&requests[i]);
        assert_int_equal(requests[i].order, i);
        assert_false(requests[i].unreplicated);
        assert_string_equal(call_arg(&calls[0], 7 + 3 * i), requests[i].user);
    }
    run_for(50);
    assert_int_equal(verdicts_given, 3);
    assert_int_equal(call_count, 1);
}

/* KEYS: the sale's five keys, then five subject keys per request; ARGV: seven settings,
 * then user, order number and acceptance ms per request (schema/lua/execute.lua). */
static void test_the_call_carries_the_keys_and_arguments_of_execute_lua(void **state)
{
    (void)state;
    start();
    add(0, SALE, 0);
    add(1, SALE, 0);
    await_verdicts(2);
    assert_int_equal(call_count, 1);
    const struct call *c = &calls[0];
    static const char *const expected[] = {
        "EVALSHA", NULL, "15",
        "seckill:activity:{7}", "seckill:stock:{7}", "seckill:user:{7}", "seckill:order:{7}",
        "seckill:resv:{7}",
        "seckill:rl:user:{7}:1000", "seckill:rl:ip:{7}:10.0.0.0", "seckill:brush:{7}:1000",
        "seckill:ban:{7}:1000", "seckill:token:{7}:nonce0",
        "seckill:rl:user:{7}:1001", "seckill:rl:ip:{7}:10.0.0.1", "seckill:brush:{7}:1001",
        "seckill:ban:{7}:1001", "seckill:token:{7}:nonce1",
        "1", "10", "100", "1", "5", "60", "0",
        "1000", "order-0", "1700000000000",
        "1001", "order-1", "1700000000001",
    };
    assert_int_equal(c->argc, (int)(sizeof(expected) / sizeof(expected[0])));
    assert_string_equal(c->argv[1], scripts.scripts[LUASCRIPT_EXECUTE].sha);
    for (int i = 0; i < c->argc; i++)
        if (expected[i] && strcmp(c->argv[i], expected[i]) != 0)
            fail_msg("argv[%d] is '%s', expected '%s'", i, c->argv[i], expected[i]);
}

static void test_the_settings_come_from_the_configuration(void **state)
{
    (void)state;
    set("seckill.enable-rate-limit", "false");
    set("seckill.max-requests-per-user", "3");
    set("seckill.max-requests-per-ip", "4");
    set("seckill.enable-anti-brush", "false");
    set("seckill.anti-brush-threshold", "2");
    set("seckill.anti-brush.ban-seconds", "9");
    set("seckill.require-token", "true");
    set("seckill.token-ttl-seconds", "30");
    start();
    struct request *r = request(0, SALE, 0);
    r->item.accepted_ms = -5;  /* a clock gone wrong is sent as 0, never as "-5" */
    executebatch_add(batch, &r->item);
    await_verdicts(1);
    const struct call *c = &calls[0];
    static const char *const settings[] = { "0", "3", "4", "0", "2", "9", "31" };
    for (int i = 0; i < 7; i++)
        assert_string_equal(call_arg(c, i), settings[i]);
    assert_string_equal(call_arg(c, 9), "0");
    assert_own_verdict(r);
}

static void test_a_later_pass_makes_a_new_call(void **state)
{
    (void)state;
    start();
    add(0, SALE, 0);
    add(1, SALE, 0);
    run_pass();
    assert_int_equal(requests[0].item.sent, true);
    add(2, SALE, 0);
    await_verdicts(3);
    assert_int_equal(call_count, 2);
    assert_int_equal(call_requests(&calls[0]), 2);
    assert_int_equal(call_requests(&calls[1]), 1);
    assert_string_equal(call_arg(&calls[1], 7), requests[2].user);
    for (int i = 0; i < 3; i++)
        assert_own_verdict(&requests[i]);
}

static void test_each_sale_gets_a_call_of_its_own(void **state)
{
    (void)state;
    start();
    const int64_t sale_of[] = { SALE, OTHER_SALE, SALE, THIRD_SALE, OTHER_SALE, SALE };
    for (int i = 0; i < 6; i++)
        add(i, sale_of[i], 0);
    await_verdicts(6);
    /* in the order each sale first came, each with its requests in their order */
    assert_int_equal(call_count, 3);
    const char *const activity_key[] = { "seckill:activity:{7}", "seckill:activity:{8}",
                                         "seckill:activity:{9}" };
    const int members[3][3] = { { 0, 2, 5 }, { 1, 4, -1 }, { 3, -1, -1 } };
    const int sizes[3] = { 3, 2, 1 };
    for (int k = 0; k < 3; k++) {
        assert_string_equal(call_key(&calls[k], 0), activity_key[k]);
        assert_int_equal(call_requests(&calls[k]), sizes[k]);
        for (int j = 0; j < sizes[k]; j++)
            assert_string_equal(call_arg(&calls[k], 7 + 3 * j), requests[members[k][j]].user);
    }
    for (int i = 0; i < 6; i++)
        assert_own_verdict(&requests[i]);
}

static void test_a_pass_beyond_the_batch_max_is_split_in_arrival_order(void **state)
{
    (void)state;
    set("seckill.execute-batch-max", "3");
    start();
    for (int i = 0; i < 7; i++)
        add(i, SALE, 0);
    await_verdicts(7);
    assert_int_equal(call_count, 3);
    const int sizes[3] = { 3, 3, 1 };
    for (int k = 0, i = 0; k < 3; k++)
        for (int j = 0; j < sizes[k]; j++, i++) {
            assert_int_equal(call_requests(&calls[k]), sizes[k]);
            assert_string_equal(call_arg(&calls[k], 7 + 3 * j), requests[i].user);
        }
    for (int i = 0; i < 7; i++) {
        assert_own_verdict(&requests[i]);
        assert_int_equal(requests[i].order, i);
    }
}

/* The largest seckill.execute-batch-max fills the flush's chunk to its last slot. */
static void test_the_largest_batch_max_fits_one_call(void **state)
{
    (void)state;
    set("seckill.execute-batch-max", "512");
    start();
    for (int i = 0; i < 513; i++)
        add(i, SALE, 0);
    await_verdicts(513);
    assert_int_equal(call_count, 2);
    assert_int_equal(call_requests(&calls[0]), 512);
    assert_int_equal(calls[0].argc, 3 + 5 + 5 * 512 + 7 + 3 * 512);
    assert_int_equal(call_requests(&calls[1]), 1);
    for (int i = 0; i < 513; i++)
        assert_own_verdict(&requests[i]);
}

static int master_of_tag(const char *tag, void *ctx)
{
    (void)ctx;
    return redisslot_of(tag, strlen(tag)) < 8192 ? 0 : 1;  /* fakeredis: A 0-8191, B the rest */
}

static bool knows_buckets(void *arg)
{
    (void)arg;
    const struct activity *a = activity_cache_find(cache, SALE);
    return a && a->nbuckets == 2;
}

static void test_the_buckets_of_a_sale_go_to_their_own_masters(void **state)
{
    (void)state;
    use_cluster();
    start();
    /* a sale of two buckets on two masters, as seckillctl creates one */
    struct bucket_list list;
    assert_int_equal(bucket_choose(SALE, 2, 2, master_of_tag, NULL, &list), 0);
    assert_int_equal(bucket_list_format(&list, listed_tags, sizeof(listed_tags)), 0);
    listed_sale = SALE;
    activity_cache_refresh(cache);
    assert_true(run_until(knows_buckets, NULL));
    const int bucket_of[] = { 0, 1, 1, 0 };
    for (int i = 0; i < 4; i++)
        add(i, SALE, bucket_of[i]);
    await_verdicts(4);
    assert_int_equal(call_count, 2);
    for (int b = 0; b < 2; b++) {
        /* two connections: the calls reach their nodes in either order */
        char key[KEYS_LEN], subject[KEYS_LEN];
        snprintf(key, sizeof(key), "seckill:activity:{%s}", list.tag[b]);
        const struct call *c = strcmp(call_key(&calls[0], 0), key) == 0 ? &calls[0] : &calls[1];
        assert_string_equal(call_key(c, 0), key);
        assert_int_equal(c->node, 'A' + master_of_tag(list.tag[b], NULL));
        assert_int_equal(call_requests(c), 2);
        const int first = b == 0 ? 0 : 1, second = b == 0 ? 3 : 2;
        assert_string_equal(call_arg(c, 7), requests[first].user);
        assert_string_equal(call_arg(c, 10), requests[second].user);
        snprintf(subject, sizeof(subject), "seckill:rl:user:{%s}:%s", list.tag[b], requests[first].user);
        assert_string_equal(call_key(c, 5), subject);
    }
    assert_true(calls[0].node != calls[1].node);
    for (int i = 0; i < 4; i++)
        assert_own_verdict(&requests[i]);
}

/* A bucket the cache has no keys for is never sent to bucket 0's keys. */
static void test_a_bucket_the_cache_does_not_know_fails_unsent(void **state)
{
    (void)state;
    start();
    add(0, SALE, 1);
    add(1, SALE, 0);
    await_verdicts(2);
    assert_failed(&requests[0], false);
    assert_own_verdict(&requests[1]);
    assert_int_equal(call_count, 1);
    assert_int_equal(call_requests(&calls[0]), 1);
}

/* ---- failures ------------------------------------------------------------------------ */

/* Every request of a call answered in `how` fails, as sent; the sale's next call is whole. */
static void assert_answer_fails_the_call(enum answer_shape how)
{
    start();
    shape = how;
    for (int i = 0; i < 3; i++)
        add(i, SALE, 0);
    await_verdicts(3);
    for (int i = 0; i < 3; i++)
        assert_failed(&requests[i], true);
    shape = ANSWER_VERDICTS;
    add(3, SALE, 0);
    await_verdicts(4);
    assert_own_verdict(&requests[3]);
    assert_int_equal(call_count, 2);
}

static void test_an_error_reply_fails_every_request_of_the_call(void **state)
{
    (void)state;
    assert_answer_fails_the_call(ANSWER_ERROR);
}

static void test_a_nil_reply_fails_every_request_of_the_call(void **state)
{
    (void)state;
    assert_answer_fails_the_call(ANSWER_NIL);
}

/* Handing out the elements there are would give a request another's verdict. */
static void test_a_short_array_fails_every_request_of_the_call(void **state)
{
    (void)state;
    assert_answer_fails_the_call(ANSWER_SHORT);
}

static void test_a_long_array_fails_every_request_of_the_call(void **state)
{
    (void)state;
    assert_answer_fails_the_call(ANSWER_LONG);
}

static void test_a_reply_that_is_no_array_fails_every_request_of_the_call(void **state)
{
    (void)state;
    assert_answer_fails_the_call(ANSWER_INTEGER);
}

/* A call lost with its connection may still run in Redis: its requests know it was sent. */
static void test_a_connection_lost_under_a_call_fails_it_as_sent(void **state)
{
    (void)state;
    start();
    shape = ANSWER_NOTHING;
    add(0, SALE, 0);
    add(1, SALE, 0);
    int one = 1;
    assert_true(run_until(calls_reached, &one));
    assert_int_equal(verdicts_given, 0);
    fakeredis_stop(0);
    await_verdicts(2);
    assert_failed(&requests[0], true);
    assert_failed(&requests[1], true);
}

/* No connection: the call never ran, its requests are told so in the flush, not before. */
static void test_a_call_that_cannot_be_sent_fails_it_as_unsent(void **state)
{
    (void)state;
    start();
    fakeredis_stop(0);
    assert_true(run_until(is_down, rc));
    add(0, SALE, 0);
    add(1, SALE, 0);
    assert_int_equal(verdicts_given, 0);
    run_pass();
    assert_failed(&requests[0], false);
    assert_failed(&requests[1], false);
    assert_int_equal(call_count, 0);
}

static void test_free_fails_the_queued_requests_unsent(void **state)
{
    (void)state;
    start();
    add(0, SALE, 0);
    add(1, OTHER_SALE, 0);
    executebatch_free(batch);
    batch = NULL;
    assert_failed(&requests[0], false);
    assert_failed(&requests[1], false);
    run_for(50);
    assert_int_equal(call_count, 0);
    assert_int_equal(verdicts_given, 2);
}

/* ---- redis.wait-replicas ------------------------------------------------------------- */

static void test_a_call_short_of_replicas_flags_its_requests_unreplicated(void **state)
{
    (void)state;
    set("redis.wait-replicas", "1");
    start();
    long long short_before = metric("seckill_redis_wait_short_total");
    fake->node[0].wait_acks = 0;
    add(0, SALE, 0);
    add(1, SALE, 0);
    await_verdicts(2);
    for (int i = 0; i < 2; i++) {
        assert_own_verdict(&requests[i]);  /* the verdicts still come: they are rolled back */
        assert_true(requests[i].unreplicated);
    }
    assert_int_equal(fake->node[0].waits, 1);
    assert_int_equal(metric("seckill_redis_wait_short_total"), short_before + 1);
    fake->node[0].wait_acks = 1;
    add(2, SALE, 0);
    await_verdicts(3);
    assert_own_verdict(&requests[2]);
    assert_false(requests[2].unreplicated);
    assert_int_equal(metric("seckill_redis_wait_short_total"), short_before + 1);
}

/* Only verdicts can be short of replicas: a failed call fails as without WAIT. */
static void test_a_failed_waited_call_is_not_flagged_unreplicated(void **state)
{
    (void)state;
    set("redis.wait-replicas", "1");
    start();
    fake->node[0].wait_acks = 0;
    shape = ANSWER_ERROR;
    add(0, SALE, 0);
    await_verdicts(1);
    assert_failed(&requests[0], true);
    assert_false(requests[0].unreplicated);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);  /* as the binaries do: a node gone under a write is an error, not death */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_pass_of_one_sale_is_one_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_call_carries_the_keys_and_arguments_of_execute_lua, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_settings_come_from_the_configuration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_later_pass_makes_a_new_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_sale_gets_a_call_of_its_own, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_pass_beyond_the_batch_max_is_split_in_arrival_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_largest_batch_max_fits_one_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_buckets_of_a_sale_go_to_their_own_masters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_bucket_the_cache_does_not_know_fails_unsent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_error_reply_fails_every_request_of_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_nil_reply_fails_every_request_of_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_short_array_fails_every_request_of_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_long_array_fails_every_request_of_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_reply_that_is_no_array_fails_every_request_of_the_call, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_connection_lost_under_a_call_fails_it_as_sent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_call_that_cannot_be_sent_fails_it_as_unsent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_fails_the_queued_requests_unsent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_call_short_of_replicas_flags_its_requests_unreplicated, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_waited_call_is_not_flagged_unreplicated, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
