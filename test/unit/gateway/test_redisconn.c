/* redisconn, the gateway's router, on a real loop against fake Redis nodes (RESP over
 * TCP on 127.0.0.1): commands reach the master of their key's slot, a MOVED is resent to
 * the new owner and remembered, an ASK is resent once behind ASKING and forgotten, a
 * master that is gone fails only its own slots, and single mode never asks for a map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redisslot.h"
#include "common/slotmap.h"
#include "gateway/redisconn.h"

/* "foo" is slot 12182, "bar" 5061 (CLUSTER KEYSLOT) */
#define SLOT_FOO 12182

/* ---- a fake node -------------------------------------------------------------------- */

struct fake {
    struct evconnlistener *listener;
    struct bufferevent *conn;   /* the one client connection (redisconn opens one) */
    int port;
    char name;                  /* 'A' or 'B': its GET answers "<name>:<key>" */
    int gets;                   /* GETs that reached it, redirected or answered */
    int slots_asked;            /* CLUSTER SLOTS */
    bool asking;                /* the last command was ASKING */
    const char *get_error;      /* non-NULL: GET answers this error instead */
    bool needs_asking;          /* GET without ASKING first answers MOVED to the other node */
};

static struct event_base *base;
static struct fake nodes[2];
/* The map CLUSTER SLOTS answers: the owner of slots 0-8191 and of 8192-16383. */
static int owner_low, owner_high;

static void reply_slots(struct evbuffer *out)
{
    evbuffer_add_printf(out, "*2\r\n");
    const int owners[2] = { owner_low, owner_high };
    const int ranges[2][2] = { { 0, 8191 }, { 8192, 16383 } };
    for (int i = 0; i < 2; i++)
        evbuffer_add_printf(out, "*3\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nid\r\n",
                            ranges[i][0], ranges[i][1], nodes[owners[i]].port);
}

static void answer(struct fake *f, int argc, char **argv, struct evbuffer *out)
{
    bool asking = f->asking;
    f->asking = false;
    if (argc >= 2 && strcmp(argv[0], "CLUSTER") == 0 && strcmp(argv[1], "SLOTS") == 0) {
        f->slots_asked++;
        reply_slots(out);
    } else if (strcmp(argv[0], "SCRIPT") == 0) {
        evbuffer_add_printf(out, "$40\r\n%040d\r\n", 0);
    } else if (strcmp(argv[0], "ASKING") == 0) {
        f->asking = true;
        evbuffer_add_printf(out, "+OK\r\n");
    } else if (strcmp(argv[0], "GET") == 0 && argc == 2) {
        f->gets++;
        if (f->get_error)
            evbuffer_add_printf(out, "-%s\r\n", f->get_error);
        else if (f->needs_asking && !asking)
            evbuffer_add_printf(out, "-MOVED %d 127.0.0.1:%d\r\n", redisslot_of(argv[1], strlen(argv[1])),
                                nodes[f == &nodes[0] ? 1 : 0].port);
        else
            evbuffer_add_printf(out, "$%zu\r\n%c:%s\r\n", strlen(argv[1]) + 2, f->name, argv[1]);
    } else {
        evbuffer_add_printf(out, "-ERR fake: unknown command\r\n");
    }
}

/* Parses whole RESP arrays of bulk strings off the input; leaves a partial one there. */
static void on_read(struct bufferevent *bev, void *arg)
{
    struct fake *f = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        size_t len = evbuffer_get_length(in);
        if (len == 0)
            return;
        char *p = (char *)evbuffer_pullup(in, -1), *end = p + len, *q = p;
        char *argv[64];
        int argc = 0, want;
        if (*q != '*' || sscanf(q + 1, "%d", &want) != 1 || want > 64)
            return;
        q = memchr(q, '\n', (size_t)(end - q));
        bool whole = q != NULL;
        for (q = q ? q + 1 : q; whole && argc < want; argc++) {
            int n;
            char *nl = q < end ? memchr(q, '\n', (size_t)(end - q)) : NULL;
            if (!nl || *q != '$' || sscanf(q + 1, "%d", &n) != 1 || nl + 1 + n + 2 > end) {
                whole = false;
                break;
            }
            argv[argc] = nl + 1;
            q = nl + 1 + n + 2;
        }
        if (!whole)
            return;
        for (int i = 0; i < argc; i++)
            *strchr(argv[i], '\r') = '\0';  /* no '\r' inside the test's arguments */
        answer(f, argc, argv, bufferevent_get_output(bev));
        evbuffer_drain(in, (size_t)(q - p));
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct fake *f = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        bufferevent_free(bev);
        if (f->conn == bev)
            f->conn = NULL;
    }
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    struct fake *f = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, on_read, NULL, on_event, f);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    f->conn = bev;
}

static void fake_start(struct fake *f, char name)
{
    memset(f, 0, sizeof(*f));
    f->name = name;
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->listener = evconnlistener_new_bind(base, on_accept, f, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                          (struct sockaddr *)&sin, sizeof(sin));
    assert_non_null(f->listener);
    socklen_t slen = sizeof(sin);
    getsockname(evconnlistener_get_fd(f->listener), (struct sockaddr *)&sin, &slen);
    f->port = ntohs(sin.sin_port);
}

/* The node goes away: no more connections, the open one closed. */
static void fake_stop(struct fake *f)
{
    if (f->listener)
        evconnlistener_free(f->listener);
    f->listener = NULL;
    if (f->conn)
        bufferevent_free(f->conn);
    f->conn = NULL;
}

/* ---- the loop ------------------------------------------------------------------------ */

static void on_give_up(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(bool *)arg = true;
    event_base_loopbreak(base);
}

/* Runs the loop until done() or 3 s. */
static bool run_until(bool (*done)(void *), void *arg)
{
    bool timed_out = false;
    struct event *t = evtimer_new(base, on_give_up, &timed_out);
    struct timeval tv = { 3, 0 };
    evtimer_add(t, &tv);
    while (!done(arg) && !timed_out)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
    return done(arg);
}

static bool is_ready(void *rc) { return redisconn_ready(rc); }

struct answer {
    bool done;
    bool null;
    char text[64];
};

static void on_answer(redisReply *reply, void *privdata)
{
    struct answer *a = privdata;
    a->done = true;
    a->null = reply == NULL;
    if (reply)
        snprintf(a->text, sizeof(a->text), "%s", reply->str ? reply->str : "");
}

static bool answered(void *a) { return ((struct answer *)a)->done; }

static struct answer get(struct redisconn *rc, const char *key)
{
    struct answer a = { 0 };
    const char *argv[] = { "GET", key };
    assert_int_equal(redisconn_command_argv(rc, 2, argv, NULL, on_answer, &a), 0);
    assert_true(run_until(answered, &a));
    return a;
}

/* ---- set-up -------------------------------------------------------------------------- */

static struct config cfg;
static struct luascript_set scripts;
static char nodes_list[64];

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    fake_start(&nodes[0], 'A');
    fake_start(&nodes[1], 'B');
    owner_low = 0;
    owner_high = 1;
    memset(&cfg, 0, sizeof(cfg));
    snprintf(nodes_list, sizeof(nodes_list), "127.0.0.1:%d,127.0.0.1:%d", nodes[0].port, nodes[1].port);
    cfg.redis_nodes = nodes_list;
    cfg.redis_host = "127.0.0.1";
    cfg.redis_port = nodes[0].port;
    cfg.redis_timeout_ms = 1000;
    cfg.redis_reconnect_min_ms = 50;
    cfg.redis_reconnect_max_ms = 100;
    cfg.redis_cluster_refresh_ms = 60000;  /* only the triggered reloads, in these tests */
    for (int i = 0; i < LUASCRIPT_COUNT; i++) {
        scripts.scripts[i].name = "fake";
        scripts.scripts[i].body = "return 1";
        scripts.scripts[i].body_len = 8;
        memset(scripts.scripts[i].sha, '0', 40);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_stop(&nodes[0]);
    fake_stop(&nodes[1]);
    event_base_free(base);
    return 0;
}

static struct redisconn *connected(void)
{
    struct redisconn *rc = redisconn_new(base, &cfg, &scripts);
    assert_non_null(rc);
    assert_true(run_until(is_ready, rc));
    return rc;
}

/* ---- the tests ----------------------------------------------------------------------- */

static void test_commands_go_to_the_master_of_their_slot(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    assert_true(nodes[0].slots_asked + nodes[1].slots_asked >= 1);
    assert_string_equal(get(rc, "foo").text, "B:foo");
    assert_string_equal(get(rc, "bar").text, "A:bar");
    assert_string_equal(get(rc, "seckill:stock:{foo}").text, "B:seckill:stock:{foo}");
    assert_int_equal(nodes[0].gets, 1);
    assert_int_equal(nodes[1].gets, 2);
    redisconn_free(rc);
}

static void test_moved_is_resent_to_the_new_owner_and_remembered(void **state)
{
    (void)state;
    owner_high = 0;  /* the map says A serves every slot */
    struct redisconn *rc = connected();
    /* the slot of foo has moved to B, and the cluster's map says so from now on */
    static char moved[64];
    snprintf(moved, sizeof(moved), "MOVED %d 127.0.0.1:%d", SLOT_FOO, nodes[1].port);
    nodes[0].get_error = moved;
    owner_high = 1;
    struct answer a = get(rc, "foo");
    assert_false(a.null);
    assert_string_equal(a.text, "B:foo");
    assert_int_equal(nodes[0].gets, 1);
    /* the next one goes straight to B */
    assert_string_equal(get(rc, "foo").text, "B:foo");
    assert_int_equal(nodes[0].gets, 1);
    assert_int_equal(nodes[1].gets, 2);
    redisconn_free(rc);
}

static void test_ask_is_resent_once_behind_asking_and_forgotten(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    /* foo's slot (B's) is migrating to A: B answers ASK, A serves it only after ASKING */
    static char ask[64];
    snprintf(ask, sizeof(ask), "ASK %d 127.0.0.1:%d", SLOT_FOO, nodes[0].port);
    nodes[1].get_error = ask;
    nodes[0].needs_asking = true;
    assert_string_equal(get(rc, "foo").text, "A:foo");
    assert_int_equal(nodes[1].gets, 1);
    assert_int_equal(nodes[0].gets, 1);
    /* the map still names B */
    get(rc, "foo");
    assert_int_equal(nodes[1].gets, 2);
    redisconn_free(rc);
}

static void test_redirects_stop_after_a_few_hops(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    /* A and B send each other foo for ever: the caller gets the last redirect, not a hang */
    static char to_a[64], to_b[64];
    snprintf(to_a, sizeof(to_a), "ASK %d 127.0.0.1:%d", SLOT_FOO, nodes[0].port);
    snprintf(to_b, sizeof(to_b), "ASK %d 127.0.0.1:%d", SLOT_FOO, nodes[1].port);
    nodes[1].get_error = to_a;
    nodes[0].get_error = to_b;
    struct answer a = get(rc, "foo");
    assert_false(a.null);
    assert_non_null(strstr(a.text, "ASK"));
    assert_int_equal(nodes[0].gets + nodes[1].gets, 1 + SLOTMAP_MAX_REDIRECTS);
    redisconn_free(rc);
}

static void test_a_master_gone_fails_only_its_slots(void **state)
{
    (void)state;
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "foo").text, "B:foo");
    fake_stop(&nodes[1]);
    /* B's connection is noticed lost on the loop: until then a command may still go out
     * and fail (NULL); from then on a send to B is refused at once */
    const char *foo[] = { "GET", "foo" };
    struct answer a = { 0 };
    int sent = 0;
    for (int i = 0; i < 100 && (sent = redisconn_command_argv(rc, 2, foo, NULL, on_answer, &a)) == 0; i++) {
        assert_true(run_until(answered, &a));
        assert_true(a.null);
        a.done = false;
    }
    assert_int_equal(sent, -1);
    assert_string_equal(get(rc, "bar").text, "A:bar");
    assert_true(redisconn_ready(rc));
    redisconn_free(rc);
}

static void test_single_mode_asks_for_no_map(void **state)
{
    (void)state;
    cfg.redis_nodes = "";
    struct redisconn *rc = connected();
    assert_string_equal(get(rc, "foo").text, "A:foo");
    assert_string_equal(get(rc, "bar").text, "A:bar");
    assert_int_equal(nodes[0].slots_asked, 0);
    assert_null(nodes[1].conn);
    redisconn_free(rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commands_go_to_the_master_of_their_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moved_is_resent_to_the_new_owner_and_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ask_is_resent_once_behind_asking_and_forgotten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirects_stop_after_a_few_hops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_master_gone_fails_only_its_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_single_mode_asks_for_no_map, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
