#include "common/httpconns.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/intmap.h"
#include "common/log.h"

/* Counting. Every accepted socket gets its bufferevent from on_new_connection (evhttp's
 * bevcb), which counts it at once. evhttp then wraps it in its connection and, in the
 * same call, sets that connection as the bufferevent's callback argument; on_adopt, run
 * before the loop next polls, reads it back (bufferevent_getcb) and sets the close
 * callback, which uncounts the connection when evhttp really closes it, whatever the
 * reason. A reference taken at accept keeps the bufferevent's memory valid until then
 * even if evhttp dropped the connection at once. At the cap the listener pauses: new
 * clients wait in the kernel's backlog, unanswered, until a connection closes.
 *
 * Header timeout. A connection must deliver a complete request (head and body) within
 * header_timeout_ms of its accept, or, kept alive, of the first byte of its next request
 * (an idle kept-alive connection is left to evhttp's idle timeout). evhttp's own timeout
 * restarts with every read, so one byte now and then would hold a socket forever. Every
 * deadline is the same span from its start, so the connections waiting for one form a
 * FIFO in deadline order and one timer serves them all.
 *
 * Failed accepts. libevent's listener stays readable while accept() fails for want of a
 * descriptor, and calls accept() again at once: one core spins until a descriptor frees
 * up. The error callback pauses the listener instead, until a connection closes or
 * HTTPCONNS_RETRY_MS has passed (the descriptor may have been another module's).
 *
 * evhttp keeps one close callback per connection: this file's. Nothing else may set one. */
#define HTTPCONNS_RETRY_MS 250
/* Descriptors the process needs besides its clients (backends, logs, listeners). */
#define HTTPCONNS_SPARE_FDS 64

enum conn_state {
    CONN_ADOPTING,  /* accepted; evhttp's connection not known yet */
    CONN_HEAD,      /* a request has begun, or none came since accept: on the deadline list */
    CONN_BUSY,      /* the request is with a handler, or its answer is being written */
    CONN_IDLE,      /* kept alive between requests */
};

/* One open client connection. Owned by struct httpconns: made in on_new_connection, freed
 * in on_connection_close (or in on_adopt when evhttp never kept the socket). */
struct conn {
    struct httpconns *hc;
    struct bufferevent *bev;
    struct evhttp_connection *evcon;   /* set by on_adopt */
    enum conn_state state;
    int64_t deadline_us;               /* CONN_HEAD: the deadline; CONN_ADOPTING: the accept time */
    struct conn *prev, *next;          /* the deadline list, or the adopting list (next) */
};

struct httpconns {
    struct httpconns_limits limits;
    httpconns_note note;
    void *note_arg;
    struct event_base *base;
    struct evhttp *evhttp;
    struct evconnlistener *listener;   /* owned by evhttp through `bound` */
    struct evhttp_bound_socket *bound;
    struct event *adopt_event;
    struct event *header_timer;
    struct event *retry_timer;         /* ends a pause after a failed accept */
    struct conn *adopting;             /* accepted since the last on_adopt */
    struct conn *first, *last;         /* CONN_HEAD connections, earliest deadline first */
    struct intmap conns;               /* evhttp connection -> struct conn * */
    size_t open;                       /* every connection not yet closed */
    bool paused;                       /* the listener is disabled */
    bool starved;                      /* accept() failed; until a close or the retry timer */
    unsigned long pauses, failures;    /* for rate-limited warnings */
    struct httpconns *next_live;       /* `live` */
};

/* Every httpconns of the process (two at most), for on_accept_error: libevent hands the
 * error callback the listener's callback argument, which evhttp_bind_listener made the
 * evhttp, with no way back from it to ours. The loop's thread alone touches it. */
static struct httpconns *live;

static struct httpconns *of_evhttp(const void *evhttp)
{
    struct httpconns *hc = live;
    while (hc && hc->evhttp != evhttp)
        hc = hc->next_live;
    return hc;
}

static void tell(struct httpconns *hc, enum httpconns_event event)
{
    if (hc->note)
        hc->note(event, hc->note_arg);
}

/* The listener accepts unless the cap is reached or accept() just failed. */
static void admit(struct httpconns *hc)
{
    bool full = hc->open >= (size_t)hc->limits.max_connections;
    bool pause = full || hc->starved;
    if (!hc->listener || pause == hc->paused)
        return;
    hc->paused = pause;
    if (!pause) {
        evconnlistener_enable(hc->listener);
        return;
    }
    evconnlistener_disable(hc->listener);
    if (full) {
        tell(hc, HTTPCONNS_CAP_PAUSE);
        if (hc->pauses++ % 100 == 0)
            LOG_WARN("http.max-connections (%lld) reached: accepting paused",
                     (long long)hc->limits.max_connections);
    }
}

static void on_accept_error(struct evconnlistener *listener, void *arg)
{
    int err = EVUTIL_SOCKET_ERROR();
    struct httpconns *hc = of_evhttp(arg);
    if (!hc) {
        evconnlistener_disable(listener);  /* never seen: at least no spin */
        return;
    }
    tell(hc, HTTPCONNS_ACCEPT_FAILED);
    if (hc->failures++ % 100 == 0)
        LOG_WARN("accept: %s with %zu connections open: accepting paused until one closes or for %d ms",
                 strerror(err), hc->open, HTTPCONNS_RETRY_MS);
    hc->starved = true;
    admit(hc);
    struct timeval tv = { 0, HTTPCONNS_RETRY_MS * 1000 };
    evtimer_add(hc->retry_timer, &tv);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct httpconns *hc = arg;
    hc->starved = false;
    admit(hc);
}

static void deadline_unlink(struct conn *c)
{
    struct httpconns *hc = c->hc;
    if (c->prev)
        c->prev->next = c->next;
    else
        hc->first = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        hc->last = c->prev;
    c->prev = c->next = NULL;
}

static void arm_header_timer(struct httpconns *hc, int64_t now_us)
{
    if (!hc->first || evtimer_pending(hc->header_timer, NULL))
        return;
    int64_t wait_us = hc->first->deadline_us - now_us;
    if (wait_us < 0)
        wait_us = 0;
    struct timeval tv = { (time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000) };
    evtimer_add(hc->header_timer, &tv);
}

/* A request begins now (or at accept, `start_us`): its deadline goes to the end of the
 * list, which keeps it sorted. */
static void await_request(struct conn *c, int64_t start_us)
{
    struct httpconns *hc = c->hc;
    c->state = CONN_HEAD;
    c->deadline_us = start_us + hc->limits.header_timeout_ms * 1000;
    c->prev = hc->last;
    c->next = NULL;
    if (hc->last)
        hc->last->next = c;
    else
        hc->first = c;
    hc->last = c;
    arm_header_timer(hc, clock_mono_us());
}

static void leave_head(struct conn *c, enum conn_state next)
{
    if (c->state == CONN_HEAD)
        deadline_unlink(c);
    c->state = next;
}

/* Bytes arrived: on a kept-alive connection that is the start of its next request. */
static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    (void)buf;
    struct conn *c = arg;
    if (info->n_added > 0 && c->state == CONN_IDLE)
        await_request(c, clock_mono_us());
}

static void on_connection_close(struct evhttp_connection *evcon, void *arg)
{
    struct conn *c = arg;
    struct httpconns *hc = c->hc;
    leave_head(c, CONN_BUSY);
    intmap_remove(&hc->conns, (int64_t)(uintptr_t)evcon);
    evbuffer_remove_cb(bufferevent_get_input(c->bev), on_input, c);
    free(c);
    hc->open--;
    hc->starved = false;  /* a descriptor is free again */
    admit(hc);
}

static void on_header_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct httpconns *hc = arg;
    int64_t now = clock_mono_us();
    while (hc->first && hc->first->deadline_us <= now) {
        struct conn *c = hc->first;
        leave_head(c, CONN_BUSY);
        tell(hc, HTTPCONNS_HEADER_TIMEOUT);
        /* No handler has the request yet, so nothing else holds it: evhttp frees it with
         * the connection, as on its own timeouts, and on_connection_close uncounts it. */
        evhttp_connection_free(c->evcon);
    }
    arm_header_timer(hc, now);
}

static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct httpconns *hc = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct conn *c = bev ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return bev;  /* out of memory: served, but neither counted nor timed */
    c->hc = hc;
    c->bev = bev;
    c->state = CONN_ADOPTING;
    c->deadline_us = clock_mono_us();  /* the accept time, until adopted */
    bufferevent_incref(bev);
    c->next = hc->adopting;
    hc->adopting = c;
    event_active(hc->adopt_event, EV_READ, 0);
    hc->open++;
    admit(hc);
    return bev;
}

static void on_adopt(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct httpconns *hc = arg;
    while (hc->adopting) {
        struct conn *c = hc->adopting;
        hc->adopting = c->next;
        c->next = NULL;
        void *cbarg = NULL;
        bufferevent_getcb(c->bev, NULL, NULL, NULL, &cbarg);
        struct evhttp_connection *evcon = cbarg;
        /* bufferevent_free clears the callbacks: NULL means evhttp already let it go. */
        if (evcon && evhttp_connection_get_bufferevent(evcon) == c->bev &&
            intmap_put(&hc->conns, (int64_t)(uintptr_t)evcon, (uint64_t)(uintptr_t)c) == 0) {
            c->evcon = evcon;
            evhttp_connection_set_closecb(evcon, on_connection_close, c);
            evbuffer_add_cb(bufferevent_get_input(c->bev), on_input, c);
            await_request(c, c->deadline_us);
            bufferevent_decref(c->bev);
        } else {
            bufferevent_decref(c->bev);
            free(c);
            hc->open--;
        }
    }
    admit(hc);
}

/* The answer is written. Bytes already waiting are a pipelined request that has begun. */
static void on_complete(struct evhttp_request *req, void *arg)
{
    (void)req;
    struct conn *c = arg;
    if (c->state != CONN_BUSY)
        return;
    c->state = CONN_IDLE;
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
        await_request(c, clock_mono_us());
}

void httpconns_close_after(struct evhttp_request *req)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (!evhttp_find_header(out, "Connection"))
        evhttp_add_header(out, "Connection", "close");
}

/* evhttp 2.1 reads no body for HEAD, TRACE and methods it does not know, so the body's
 * bytes would be read as the next request. */
static bool body_left_unread(struct evhttp_request *req)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *length = evhttp_find_header(in, "Content-Length");
    bool announced = evhttp_find_header(in, "Transfer-Encoding") || (length && strcmp(length, "0") != 0);
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    return announced && (!body || evbuffer_get_length(body) == 0);
}

void httpconns_begin(struct httpconns *hc, struct evhttp_request *req)
{
    if (body_left_unread(req))
        httpconns_close_after(req);
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    uint64_t value;
    if (!evcon || !intmap_get(&hc->conns, (int64_t)(uintptr_t)evcon, &value))
        return;
    struct conn *c = (struct conn *)(uintptr_t)value;
    leave_head(c, CONN_BUSY);
    evhttp_request_set_on_complete_cb(req, on_complete, c);
}

size_t httpconns_open(const struct httpconns *hc) { return hc->open; }

struct evhttp *httpconns_evhttp(struct httpconns *hc) { return hc->evhttp; }

/* Every open connection holds a descriptor: use every one the system allows. */
static void raise_nofile(int64_t max_connections)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
            getrlimit(RLIMIT_NOFILE, &limit);
    }
    if (limit.rlim_cur != RLIM_INFINITY && (int64_t)limit.rlim_cur < max_connections + HTTPCONNS_SPARE_FDS)
        LOG_WARN("http.max-connections (%lld) is above what %llu descriptors allow (ulimit -n): accepting "
                 "pauses when they run out", (long long)max_connections, (unsigned long long)limit.rlim_cur);
}

struct httpconns *httpconns_new(struct event_base *base, const struct httpconns_limits *limits,
                                httpconns_note note, void *note_arg)
{
    struct httpconns *hc = calloc(1, sizeof(*hc));
    if (!hc)
        return NULL;
    hc->limits = *limits;
    hc->note = note;
    hc->note_arg = note_arg;
    hc->base = base;
    hc->evhttp = evhttp_new(base);
    hc->adopt_event = event_new(base, -1, 0, on_adopt, hc);
    hc->header_timer = evtimer_new(base, on_header_timeout, hc);
    hc->retry_timer = evtimer_new(base, on_retry, hc);
    if (!hc->evhttp || !hc->adopt_event || !hc->header_timer || !hc->retry_timer) {
        httpconns_free(hc);
        return NULL;
    }
    evhttp_set_bevcb(hc->evhttp, on_new_connection, hc);
    hc->next_live = live;
    live = hc;
    raise_nofile(limits->max_connections);
    return hc;
}

int httpconns_listen(struct httpconns *hc, const char *key, const char *host, int64_t port, int backlog,
                     bool reuse_port, char *addr, size_t addrlen, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    int sslen = (int)sizeof(ss);
    snprintf(addr, addrlen, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host, (long long)port);
    if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &sslen) != 0) {
        snprintf(err, errlen, "%s: '%s' is not an IP address", key, host);
        return -1;
    }
    /* With SO_REUSEPORT the kernel spreads new connections over every gateway bound to
     * the port, so several single-threaded gateways use several cores. */
    unsigned flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
    if (reuse_port)
        flags |= LEV_OPT_REUSEABLE_PORT;
    struct evconnlistener *l = evconnlistener_new_bind(hc->base, NULL, NULL, flags, backlog,
                                                       (struct sockaddr *)&ss, sslen);
    if (!l) {
        snprintf(err, errlen, "%s %s: %s", key, addr, strerror(errno));
        return -1;
    }
    hc->bound = evhttp_bind_listener(hc->evhttp, l);
    if (!hc->bound) {
        evconnlistener_free(l);
        snprintf(err, errlen, "%s %s: evhttp_bind_listener failed", key, addr);
        return -1;
    }
    /* evhttp_bind_listener sets the accept callback only: the error one is free. */
    evconnlistener_set_error_cb(l, on_accept_error);
    hc->listener = l;
    hc->paused = false;
    admit(hc);
    return 0;
}

void httpconns_stop_accepting(struct httpconns *hc)
{
    if (hc->bound) {
        evhttp_del_accept_socket(hc->evhttp, hc->bound);  /* frees the listener, closing it */
        hc->bound = NULL;
        hc->listener = NULL;
    }
}

void httpconns_free(struct httpconns *hc)
{
    if (!hc)
        return;
    for (struct httpconns **p = &live; *p; p = &(*p)->next_live)
        if (*p == hc) {
            *p = hc->next_live;
            break;
        }
    /* evhttp_free frees the listener before the connections, whose close callbacks
     * would otherwise re-enable it. */
    hc->listener = NULL;
    hc->bound = NULL;
    if (hc->evhttp)
        evhttp_free(hc->evhttp);  /* closes the listener and every connection */
    /* Accepted in the last loop pass and never adopted: the reference taken at accept
     * is the last one once evhttp let go. */
    while (hc->adopting) {
        struct conn *c = hc->adopting;
        hc->adopting = c->next;
        bufferevent_decref(c->bev);
        free(c);
    }
    /* Connections evhttp closed without calling back (none known, but never leak). */
    for (size_t i = 0; i < hc->conns.capacity; i++)
        if (hc->conns.slots[i].key)
            free((struct conn *)(uintptr_t)hc->conns.slots[i].value);
    if (hc->adopt_event)
        event_free(hc->adopt_event);
    if (hc->header_timer)
        event_free(hc->header_timer);
    if (hc->retry_timer)
        event_free(hc->retry_timer);
    intmap_free(&hc->conns);
    free(hc);
}
