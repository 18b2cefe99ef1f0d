/* Fake Redis Cluster nodes for unit tests of the Redis routers (test_redisconn,
 * test_redisroute) and of their callers (test_executebatch): two nodes 'A' and 'B'
 * speaking enough RESP over TCP on 127.0.0.1 for CLUSTER SLOTS, ASKING, SCRIPT LOAD,
 * EVALSHA and GET, on a libevent loop. Included by one test file each; everything is
 * static.
 *
 * A GET answers "<name>:<key>", or get_error, or (needs_asking, without ASKING just
 * before) a MOVED to the other node. An EVALSHA answers NOSCRIPT until a SCRIPT LOAD
 * reached that node, then "<name>:<KEYS[1]>" (or eval_error). A test that needs a script's
 * real shape of answer (arrays, nested arrays, nil), or commands the fake does not know,
 * sets fake->answer: it writes the answer with the fakeredis_reply_* helpers, or nothing
 * (the command then hangs, as on a Redis that stopped answering). A WAIT answers wait_acks and
 * notes how many EVALSHAs had been answered on that node before it; with wait_delay_ms it
 * answers that much later and, as Redis does, reads nothing more of that connection
 * meanwhile. CLUSTER SLOTS answers owner[0] for slots
 * 0-8191 and owner[1] for 8192-16383, at each one's current address (a node in a
 * minority answers the owners it knew when it was cut off). The counters say what
 * reached each node. The state may live in shared memory, for a client in another process.
 *
 * A node can move to a new address (fakeredis_move), as a master replaced on another
 * machine does: the old address is then either gone (its connection closed; a client that
 * connects there again is accepted and closed at once, and counted) or kept serving, for a
 * client that still has commands on it. A client in another process asks for moves through
 * moves_asked; the serving process applies them on a timer. */
#ifndef SK_TEST_FAKEREDIS_H
#define SK_TEST_FAKEREDIS_H

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/redisslot.h"
#include "common/slotmap.h"

#define FAKEREDIS_MOVES 48
/* An execute.lua call of seckill.execute-batch-max (512) requests has 14 + 8 * 512. */
#define FAKEREDIS_MAX_ARGS 4200

/* An address a node left. */
struct fakeredis_old {
    int port;
    bool serving;               /* still answers as its node; else accepts and closes */
    struct evconnlistener *listener;
    struct bufferevent *conn;   /* serving: the client connection it had, until closed */
    bool closed_by_client;      /* serving: that connection was closed by the client */
    int accepts;                /* gone: connections made to it since */
};

struct fakeredis_node {
    int fd;                     /* the listening socket */
    int port;
    char name;
    struct evconnlistener *listener;
    struct bufferevent *conn;   /* the latest client connection */
    int gets;                   /* GETs that reached it, redirected or answered */
    int evals;                  /* EVALSHAs, NOSCRIPT answers included */
    int loads;                  /* SCRIPT LOADs */
    int slots_asked;            /* CLUSTER SLOTS */
    bool asking;                /* the last command was ASKING */
    bool loaded;
    char get_error[64];         /* non-empty: GET answers this error */
    char eval_error[64];        /* non-empty: a loaded EVALSHA answers this error */
    int waits;                  /* WAITs */
    int wait_acks;              /* what a WAIT answers */
    int evals_run_before_wait;  /* EVALSHAs answered with a result before the last WAIT */
    int evals_run;
    int wait_delay_ms;          /* a WAIT blocks its connection this long */
    struct bufferevent *blocked; /* the connection a WAIT is blocking */
    bool needs_asking;
    bool minority;              /* cut off from the other masters: its CLUSTER SLOTS keeps
                                   minority_owner, what it knew, while fake->owner moves on */
    int minority_owner[2];
    int moves;                  /* addresses left, in old[] */
    int moves_asked;            /* by a client in another process; applied on a timer */
    bool moves_serving;         /* how those leave their old address */
    struct fakeredis_old old[FAKEREDIS_MOVES];
};

/* Answers an EVALSHA of a loaded script (when no eval_error is set) or a command the fake
 * does not know, on node f, into out; false leaves it to the defaults. */
typedef bool (*fakeredis_answer_fn)(struct fakeredis_node *f, int argc, char **argv, struct evbuffer *out);

struct fakeredis {
    struct fakeredis_node node[2];
    int owner[2];
    struct event_base *base;
    struct event *mover;
    fakeredis_answer_fn answer;  /* NULL: the defaults only; a function of the serving process */
};

static struct fakeredis *fake;

static inline void fakeredis_slots(struct evbuffer *out, const int owner[2])
{
    evbuffer_add_printf(out, "*2\r\n");
    const int ranges[2][2] = { { 0, 8191 }, { 8192, 16383 } };
    for (int i = 0; i < 2; i++)
        evbuffer_add_printf(out, "*3\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nid\r\n",
                            ranges[i][0], ranges[i][1], fake->node[owner[i]].port);
}

/* RESP pieces for fake->answer: an array header is followed by its elements' pieces. */
static inline void fakeredis_reply_array(struct evbuffer *out, size_t elements)
{
    evbuffer_add_printf(out, "*%zu\r\n", elements);
}

static inline void fakeredis_reply_bulk(struct evbuffer *out, const char *s)
{
    evbuffer_add_printf(out, "$%zu\r\n%s\r\n", strlen(s), s);
}

static inline void fakeredis_reply_int(struct evbuffer *out, long long v)
{
    evbuffer_add_printf(out, ":%lld\r\n", v);
}

static inline void fakeredis_reply_nil(struct evbuffer *out) { evbuffer_add_printf(out, "$-1\r\n"); }

static inline void fakeredis_reply_error(struct evbuffer *out, const char *message)
{
    evbuffer_add_printf(out, "-%s\r\n", message);
}

static inline void fakeredis_answer(struct fakeredis_node *f, int argc, char **argv, struct evbuffer *out)
{
    bool asking = f->asking;
    f->asking = false;
    struct fakeredis_node *other = &fake->node[f == &fake->node[0] ? 1 : 0];
    if (argc >= 2 && strcmp(argv[0], "CLUSTER") == 0 && strcmp(argv[1], "SLOTS") == 0) {
        f->slots_asked++;
        fakeredis_slots(out, f->minority ? f->minority_owner : fake->owner);
    } else if (strcmp(argv[0], "SCRIPT") == 0) {
        f->loads++;
        f->loaded = true;
        evbuffer_add_printf(out, "$40\r\n%040d\r\n", 0);
    } else if (strcmp(argv[0], "ASKING") == 0) {
        f->asking = true;
        evbuffer_add_printf(out, "+OK\r\n");
    } else if (strcmp(argv[0], "EVALSHA") == 0 && argc >= 4) {
        f->evals++;
        if (!f->loaded)
            evbuffer_add_printf(out, "-NOSCRIPT No matching script. Please use EVAL.\r\n");
        else if (f->eval_error[0])
            evbuffer_add_printf(out, "-%s\r\n", f->eval_error);
        else {
            f->evals_run++;
            if (!fake->answer || !fake->answer(f, argc, argv, out))
                evbuffer_add_printf(out, "$%zu\r\n%c:%s\r\n", strlen(argv[3]) + 2, f->name, argv[3]);
        }
    } else if (strcmp(argv[0], "WAIT") == 0 && argc == 3) {
        f->waits++;
        f->evals_run_before_wait = f->evals_run;
        evbuffer_add_printf(out, ":%d\r\n", f->wait_acks);
    } else if (strcmp(argv[0], "GET") == 0 && argc == 2) {
        f->gets++;
        if (f->get_error[0])
            evbuffer_add_printf(out, "-%s\r\n", f->get_error);
        else if (f->needs_asking && !asking)
            evbuffer_add_printf(out, "-MOVED %d 127.0.0.1:%d\r\n", redisslot_of(argv[1], strlen(argv[1])),
                                other->port);
        else
            evbuffer_add_printf(out, "$%zu\r\n%c:%s\r\n", strlen(argv[1]) + 2, f->name, argv[1]);
    } else if (!fake->answer || !fake->answer(f, argc, argv, out)) {
        evbuffer_add_printf(out, "-ERR fake: unknown command\r\n");
    }
}

static inline void fakeredis_on_read(struct bufferevent *bev, void *arg);

/* The decimal number at p, before end (the input buffer has no terminating NUL). */
static inline int fakeredis_int(const char *p, const char *end, int *out)
{
    int n = 0;
    const char *start = p;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        n = n * 10 + (*p - '0');
    *out = n;
    return p > start && p < end && *p == '\r' ? 1 : 0;
}

static inline void fakeredis_on_wait_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fakeredis_node *f = arg;
    struct bufferevent *bev = f->blocked;
    f->blocked = NULL;
    bool alive = bev && bev == f->conn;
    for (int i = 0; bev && i < f->moves; i++)
        alive = alive || f->old[i].conn == bev;
    if (!alive)
        return;  /* the client went away meanwhile */
    evbuffer_add_printf(bufferevent_get_output(bev), ":%d\r\n", f->wait_acks);
    bufferevent_enable(bev, EV_READ);
    fakeredis_on_read(bev, f);
}

/* Parses whole RESP arrays of bulk strings off the input; leaves a partial one there. */
static inline void fakeredis_on_read(struct bufferevent *bev, void *arg)
{
    struct fakeredis_node *f = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        if (f->blocked)
            return;
        size_t len = evbuffer_get_length(in);
        if (len == 0)
            return;
        char *p = (char *)evbuffer_pullup(in, -1), *end = p + len, *q = p;
        char *argv[FAKEREDIS_MAX_ARGS] = { 0 };
        int argc = 0, want;
        if (*q != '*' || fakeredis_int(q + 1, end, &want) != 1 || want < 1 || want > FAKEREDIS_MAX_ARGS)
            return;
        q = memchr(q, '\n', (size_t)(end - q));
        bool whole = q != NULL;
        for (q = q ? q + 1 : q; whole && argc < want; argc++) {
            int n;
            char *nl = q < end ? memchr(q, '\n', (size_t)(end - q)) : NULL;
            if (!nl || *q != '$' || fakeredis_int(q + 1, end, &n) != 1 || nl + 1 + n + 2 > end) {
                whole = false;
                break;
            }
            argv[argc] = nl + 1;
            q = nl + 1 + n + 2;
        }
        if (!whole)
            return;
        for (int i = 0; i < argc; i++)
            *strchr(argv[i], '\r') = '\0';  /* no '\r' inside the tests' arguments */
        if (f->wait_delay_ms > 0 && strcmp(argv[0], "WAIT") == 0) {
            f->waits++;
            f->evals_run_before_wait = f->evals_run;
            evbuffer_drain(in, (size_t)(q - p));
            f->blocked = bev;
            bufferevent_disable(bev, EV_READ);
            struct timeval tv = { f->wait_delay_ms / 1000, (f->wait_delay_ms % 1000) * 1000 };
            event_base_once(bufferevent_get_base(bev), -1, EV_TIMEOUT, fakeredis_on_wait_done, f, &tv);
            continue;
        }
        fakeredis_answer(f, argc, argv, bufferevent_get_output(bev));
        evbuffer_drain(in, (size_t)(q - p));
    }
}

static inline void fakeredis_on_event(struct bufferevent *bev, short what, void *arg)
{
    struct fakeredis_node *f = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (f->conn == bev)
            f->conn = NULL;
        for (int i = 0; i < f->moves; i++)
            if (f->old[i].conn == bev) {
                f->old[i].conn = NULL;
                f->old[i].closed_by_client = true;
            }
        bufferevent_free(bev);
    }
}

static inline void fakeredis_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                                       int len,
                                void *arg)
{
    (void)sa;
    (void)len;
    struct fakeredis_node *f = arg;
    struct bufferevent *bev = bufferevent_socket_new(evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, fakeredis_on_read, NULL, fakeredis_on_event, f);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    f->conn = bev;
}

/* A listening socket on a free port of 127.0.0.1. */
static inline int fakeredis_listen(struct fakeredis_node *f)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = 0 };
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t slen = sizeof(sin);
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(f->fd, 16) != 0 ||
        getsockname(f->fd, (struct sockaddr *)&sin, &slen) != 0)
        return -1;
    evutil_make_socket_nonblocking(f->fd);
    f->port = ntohs(sin.sin_port);
    return 0;
}

/* Both nodes listen on free ports (known at once, before any loop runs). */
static inline int fakeredis_bind(struct fakeredis *state)
{
    fake = state;
    memset(fake, 0, sizeof(*fake));
    fake->owner[1] = 1;
    for (int i = 0; i < 2; i++) {
        fake->node[i].name = (char)('A' + i);
        if (fakeredis_listen(&fake->node[i]) != 0)
            return -1;
    }
    return 0;
}

/* A gone address: whoever connects is counted and closed at once. */
static inline void fakeredis_on_gone_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                                            int len, void *arg)
{
    (void)l;
    (void)sa;
    (void)len;
    struct fakeredis_old *o = arg;
    o->accepts++;
    evutil_closesocket(fd);
}

/* Node i moves to a new free port; its old address is kept serving or is gone. */
static inline int fakeredis_move(int i, bool serving)
{
    struct fakeredis_node *f = &fake->node[i];
    if (f->moves == FAKEREDIS_MOVES || !f->listener)
        return -1;
    struct fakeredis_old *o = &f->old[f->moves];
    *o = (struct fakeredis_old){ .port = f->port, .serving = serving, .listener = f->listener };
    if (serving) {
        o->conn = f->conn;
    } else {
        if (f->conn)
            bufferevent_free(f->conn);
        evconnlistener_set_cb(o->listener, fakeredis_on_gone_accept, o);
    }
    f->conn = NULL;
    f->listener = NULL;
    if (fakeredis_listen(f) != 0)
        return -1;
    f->listener = evconnlistener_new(fake->base, fakeredis_on_accept, f, LEV_OPT_CLOSE_ON_FREE, -1, f->fd);
    f->moves++;  /* last: a client in another process reads the new port once it counts */
    return f->listener ? 0 : -1;
}

/* Applies the moves a client in another process asked for. */
static inline void fakeredis_on_mover(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    for (int i = 0; i < 2; i++)
        while (fake->node[i].moves < fake->node[i].moves_asked)
            if (fakeredis_move(i, fake->node[i].moves_serving) != 0)
                return;
}

/* The nodes answer on base's loop. */
static inline int fakeredis_serve(struct event_base *base)
{
    fake->base = base;
    fake->mover = event_new(base, -1, EV_PERSIST, fakeredis_on_mover, NULL);
    struct timeval tick = { 0, 2000 };
    if (!fake->mover || event_add(fake->mover, &tick) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        struct fakeredis_node *f = &fake->node[i];
        f->listener = evconnlistener_new(base, fakeredis_on_accept, f, LEV_OPT_CLOSE_ON_FREE, -1, f->fd);
        if (!f->listener)
            return -1;
    }
    return 0;
}

/* Node i goes away: no more connections, the open one closed (old addresses too). */
static inline void fakeredis_stop(int i)
{
    struct fakeredis_node *f = &fake->node[i];
    for (int k = 0; k < f->moves; k++) {
        struct fakeredis_old *o = &f->old[k];
        if (o->listener)
            evconnlistener_free(o->listener);
        if (o->conn)
            bufferevent_free(o->conn);
        o->listener = NULL;
        o->conn = NULL;
    }
    if (fake->mover) {
        event_free(fake->mover);
        fake->mover = NULL;
    }
    if (f->listener)
        evconnlistener_free(f->listener);
    else if (f->fd >= 0)
        close(f->fd);
    f->listener = NULL;
    f->fd = -1;
    if (f->conn)
        bufferevent_free(f->conn);
    f->conn = NULL;
}

#endif
