#include "gateway/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "gateway/adminfwd.h"
#include "gateway/couponapi.h"
#include "gateway/execute.h"
#include "gateway/intmap.h"
#include "gateway/longpoll.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "gateway/openapi.h"
#include "gateway/readapi.h"
#include "gateway/reply.h"
#include "gateway/tokenapi.h"

/* evhttp 2.1 has no connection cap and no header timeout, so the gateway keeps both.
 *
 * Counting. Every accepted socket gets its bufferevent from on_new_connection (evhttp's
 * bevcb), which counts it at once. evhttp then wraps it in its connection and, in the
 * same call, sets that connection as the bufferevent's callback argument; on_adopt, run
 * before the loop next polls, reads it back (bufferevent_getcb) and sets the close
 * callback, which uncounts the connection when evhttp really closes it, whatever the
 * reason. A reference taken at accept keeps the bufferevent's memory valid until then
 * even if evhttp dropped the connection at once. At the cap the listener pauses: new
 * clients wait in the kernel's backlog, unanswered, until a connection closes.
 *
 * Header timeout. A connection must deliver a complete request (head and body) within
 * http.header-timeout-ms of its accept, or, kept alive, of the first byte of its next
 * request (an idle kept-alive connection is left to evhttp's idle timeout). evhttp's own
 * timeout restarts with every read, so one byte now and then would hold a socket
 * forever. Every deadline is the same span from its start, so the connections waiting
 * for one form a FIFO in deadline order and one timer serves them all.
 *
 * evhttp keeps one close callback per connection: this file's. Nothing else may set one. */
enum conn_state {
    CONN_ADOPTING,  /* accepted; evhttp's connection not known yet */
    CONN_HEAD,      /* a request has begun, or none came since accept: on the deadline list */
    CONN_BUSY,      /* the request is with a handler, or its answer is being written */
    CONN_IDLE,      /* kept alive between requests */
};

/* One open client connection. Owned by struct http: made in on_new_connection, freed in
 * on_connection_close (or in on_adopt when evhttp never kept the socket). */
struct conn {
    struct http *http;
    struct bufferevent *bev;
    struct evhttp_connection *evcon;   /* set by on_adopt */
    enum conn_state state;
    int64_t deadline_us;               /* CONN_HEAD: the deadline; CONN_ADOPTING: the accept time */
    struct conn *prev, *next;          /* the deadline list, or the adopting list (next) */
};

struct http {
    struct gateway *gw;
    struct evhttp *evhttp;
    struct evconnlistener *listener;   /* owned by evhttp through `bound` */
    struct evhttp_bound_socket *bound;
    struct evhttp *metrics_evhttp;     /* http.metrics-port's own listener, or NULL */
    bool metrics_on_main;
    struct event *adopt_event;
    struct event *header_timer;
    struct conn *adopting;             /* accepted since the last on_adopt */
    struct conn *first, *last;         /* CONN_HEAD connections, earliest deadline first */
    struct intmap conns;               /* evhttp connection -> struct conn * */
    size_t open;                       /* every connection not yet closed */
    bool paused;
    unsigned long pauses;
};

/* A route serves one method on one path (`exact`), or on every path below a prefix
 * (`below`, which gets the rest: "/seckill/stock/42" -> "42"). The metrics page is the
 * HTTP layer's `own`: it reports the connection count kept here. */
struct route {
    const char *path;
    enum evhttp_cmd_type method;
    void (*exact)(struct gateway *gw, struct evhttp_request *req);
    void (*below)(struct gateway *gw, struct evhttp_request *req, const char *rest);
    void (*own)(struct http *http, struct evhttp_request *req);
};

static void metrics_page(struct http *http, struct evhttp_request *req);

static const struct route routes[] = {
    { "/seckill/execute", EVHTTP_REQ_POST, .exact = execute_request },
    { "/seckill/stock/", EVHTTP_REQ_GET, .below = readapi_stock },
    { "/seckill/result", EVHTTP_REQ_GET, .exact = readapi_result },
    { "/seckill/token", EVHTTP_REQ_GET, .exact = tokenapi_issue },
    { "/seckill/orders/", EVHTTP_REQ_GET, .below = readapi_order },
    { "/seckill/activities/", EVHTTP_REQ_GET, .below = readapi_activity },
    { "/coupons", EVHTTP_REQ_GET, .exact = couponapi_list },
    { "/coupons/", EVHTTP_REQ_POST, .below = couponapi_use },
    { "/healthz", EVHTTP_REQ_GET, .exact = readapi_health },
    { "/metrics", EVHTTP_REQ_GET, .own = metrics_page },
    { "/openapi.yaml", EVHTTP_REQ_GET, .exact = openapi_serve },
};

/* HEAD is served wherever GET is (RFC 9110 asks it of every server); reply.c and the
 * pages here send it the headers alone. */
static bool route_serves(const struct route *r, enum evhttp_cmd_type method)
{
    return method == r->method || (method == EVHTTP_REQ_HEAD && r->method == EVHTTP_REQ_GET);
}

static void admit(struct http *http)
{
    bool full = http->open >= (size_t)http->gw->cfg->http_max_connections;
    if (!http->listener || full == http->paused)
        return;
    http->paused = full;
    if (full) {
        evconnlistener_disable(http->listener);
        metrics_inc(METRIC_ACCEPT_PAUSES);
        if (http->pauses++ % 100 == 0)
            LOG_WARN("http.max-connections (%lld) reached: accepting paused",
                     (long long)http->gw->cfg->http_max_connections);
    } else {
        evconnlistener_enable(http->listener);
    }
}

static void deadline_unlink(struct conn *c)
{
    struct http *http = c->http;
    if (c->prev)
        c->prev->next = c->next;
    else
        http->first = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        http->last = c->prev;
    c->prev = c->next = NULL;
}

static void arm_header_timer(struct http *http, int64_t now_us)
{
    if (!http->first || evtimer_pending(http->header_timer, NULL))
        return;
    int64_t wait_us = http->first->deadline_us - now_us;
    if (wait_us < 0)
        wait_us = 0;
    struct timeval tv = { (time_t)(wait_us / 1000000), (suseconds_t)(wait_us % 1000000) };
    evtimer_add(http->header_timer, &tv);
}

/* A request begins now (or at accept, `start_us`): its deadline goes to the end of the
 * list, which keeps it sorted. */
static void await_request(struct conn *c, int64_t start_us)
{
    struct http *http = c->http;
    c->state = CONN_HEAD;
    c->deadline_us = start_us + http->gw->cfg->http_header_timeout_ms * 1000;
    c->prev = http->last;
    c->next = NULL;
    if (http->last)
        http->last->next = c;
    else
        http->first = c;
    http->last = c;
    arm_header_timer(http, clock_mono_us());
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
    struct http *http = c->http;
    leave_head(c, CONN_BUSY);
    intmap_remove(&http->conns, (int64_t)(uintptr_t)evcon);
    evbuffer_remove_cb(bufferevent_get_input(c->bev), on_input, c);
    free(c);
    http->open--;
    admit(http);
}

static void on_header_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http *http = arg;
    int64_t now = clock_mono_us();
    while (http->first && http->first->deadline_us <= now) {
        struct conn *c = http->first;
        leave_head(c, CONN_BUSY);
        metrics_inc(METRIC_HEADER_TIMEOUTS);
        /* No handler has the request yet, so nothing else holds it: evhttp frees it with
         * the connection, as on its own timeouts, and on_connection_close uncounts it. */
        evhttp_connection_free(c->evcon);
    }
    arm_header_timer(http, now);
}

static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct http *http = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct conn *c = bev ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return bev;  /* out of memory: served, but neither counted nor timed */
    c->http = http;
    c->bev = bev;
    c->state = CONN_ADOPTING;
    c->deadline_us = clock_mono_us();  /* the accept time, until adopted */
    bufferevent_incref(bev);
    c->next = http->adopting;
    http->adopting = c;
    event_active(http->adopt_event, EV_READ, 0);
    http->open++;
    admit(http);
    return bev;
}

static void on_adopt(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http *http = arg;
    while (http->adopting) {
        struct conn *c = http->adopting;
        http->adopting = c->next;
        c->next = NULL;
        void *cbarg = NULL;
        bufferevent_getcb(c->bev, NULL, NULL, NULL, &cbarg);
        struct evhttp_connection *evcon = cbarg;
        /* bufferevent_free clears the callbacks: NULL means evhttp already let it go. */
        if (evcon && evhttp_connection_get_bufferevent(evcon) == c->bev &&
            intmap_put(&http->conns, (int64_t)(uintptr_t)evcon, (uint64_t)(uintptr_t)c) == 0) {
            c->evcon = evcon;
            evhttp_connection_set_closecb(evcon, on_connection_close, c);
            evbuffer_add_cb(bufferevent_get_input(c->bev), on_input, c);
            await_request(c, c->deadline_us);
            bufferevent_decref(c->bev);
        } else {
            bufferevent_decref(c->bev);
            free(c);
            http->open--;
        }
    }
    admit(http);
}

/* The request is complete and goes to a handler: no deadline until it is answered. */
static void on_complete(struct evhttp_request *req, void *arg);

static void begin_handling(struct http *http, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    uint64_t value;
    if (!evcon || !intmap_get(&http->conns, (int64_t)(uintptr_t)evcon, &value))
        return;
    struct conn *c = (struct conn *)(uintptr_t)value;
    leave_head(c, CONN_BUSY);
    evhttp_request_set_on_complete_cb(req, on_complete, c);
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

size_t http_open_connections(const struct http *http) { return http->open; }

static void metrics_page(struct http *http, struct evhttp_request *req)
{
    const struct gateway *gw = http->gw;
    struct metrics_gauges g = {
        .in_flight = gw->in_flight,
        .open_connections = http_open_connections(http),
        .queuedmarks_pending = queuedmarks_pending(gw->marks),
        .redis_pending = redisconn_pending(gw->redis),
        .redis_reconnects = redisconn_reconnects(gw->redis),
        .kafka_queue = (uint64_t)kafkaprod_in_flight(gw->kafka),
        .redis_up = redisconn_ready(gw->redis),
        .kafka_up = kafkaprod_healthy(gw->kafka),
        .longpoll_waiting = longpoll_waiting(gw->longpoll),
        .cached_winners = activity_cache_winners(gw->activities),
        .admin_forwards = gw->admin ? adminfwd_in_flight(gw->admin) : 0,
        .sales = gw->sales,
    };
    char *text = metrics_render(&g);
    if (!text) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    struct evbuffer *buf = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? NULL : evbuffer_new();
    if (buf)
        evbuffer_add(buf, text, strlen(text));
    evhttp_send_reply(req, 200, "OK", buf);
    if (buf)
        evbuffer_free(buf);
    free(text);
}

/* Whether the connection must close after this answer: evhttp 2.1 reads no body for HEAD,
 * TRACE and methods it does not know, so the body's bytes would be read as the next
 * request. */
static bool must_close(struct evhttp_request *req)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *length = evhttp_find_header(in, "Content-Length");
    bool announced = evhttp_find_header(in, "Transfer-Encoding") || (length && strcmp(length, "0") != 0);
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    return announced && (!body || evbuffer_get_length(body) == 0);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct http *http = arg;
    begin_handling(http, req);
    /* Draining: answer what comes on an open connection, then let it go. */
    if (http->gw->draining || must_close(req))
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path) {
        reply_error(req, REPLY_INVALID, "malformed request target", 0, NULL, NULL);
        return;
    }
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    if (body && evbuffer_get_length(body) > (size_t)http->gw->cfg->http_max_body_size) {
        reply_error(req, REPLY_TOO_LARGE, "request body too large", 0, NULL, NULL);
        return;
    }
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route *r = &routes[i];
        size_t n = strlen(r->path);
        bool hit = r->below ? strncmp(path, r->path, n) == 0 && path[n] != '\0' : strcmp(path, r->path) == 0;
        if (!hit || (r->own == metrics_page && !http->metrics_on_main))
            continue;
        metrics_request(i);
        if (!route_serves(r, method)) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                              r->method == EVHTTP_REQ_POST ? "POST" : "GET, HEAD");
            reply_error(req, REPLY_METHOD_NOT_ALLOWED, "method not allowed", 0, NULL, NULL);
            return;
        }
        if (r->exact)
            r->exact(http->gw, req);
        else if (r->below)
            r->below(http->gw, req, path + n);
        else
            r->own(http, req);
        return;
    }
    reply_error(req, REPLY_NOT_FOUND, "no such endpoint", 0, NULL, NULL);
}

/* http.metrics-port's listener serves GET /metrics and nothing else. */
static void on_metrics_request(struct evhttp_request *req, void *arg)
{
    struct http *http = arg;
    if (must_close(req))
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || strcmp(path, "/metrics") != 0) {
        reply_error(req, REPLY_NOT_FOUND, "no such endpoint", 0, NULL, NULL);
    } else if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
               evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        reply_error(req, REPLY_METHOD_NOT_ALLOWED, "method not allowed", 0, NULL, NULL);
    } else {
        metrics_page(http, req);
    }
}

static void apply_limits(struct evhttp *evhttp, const struct config *cfg)
{
    evhttp_set_max_headers_size(evhttp, (ev_ssize_t)cfg->http_max_header_size);
    /* evhttp answers bodies over its own limit with an HTML page; a looser limit there
     * lets on_request answer anything between with the API's JSON 413. */
    int64_t hard_body_limit = cfg->http_max_body_size * 4 > 65536 ? cfg->http_max_body_size * 4 : 65536;
    evhttp_set_max_body_size(evhttp, (ev_ssize_t)hard_body_limit);
    evhttp_set_timeout(evhttp, (int)cfg->http_idle_timeout);
    /* Every method reaches the routes, which answer the API's JSON 405 with Allow for one a
     * path does not serve. evhttp would answer a method left out here, TRACE and CONNECT
     * and every method it does not know (QUERY, BREW: one bit of its own above the known
     * ones) with its 501 HTML page. */
    evhttp_set_allowed_methods(evhttp, 0xffff);
}

/* Our own listener for a deep backlog: evhttp_bind_socket is fixed at 128, which a
 * flash-sale burst of connects overflows. addr gets "host:port" for messages. */
static struct evconnlistener *listen_on(struct event_base *base, const char *key, const char *host, int64_t port,
                                        int backlog, bool reuse_port, char *addr, size_t addrlen, char *err,
                                        size_t errlen)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    int sslen = (int)sizeof(ss);
    snprintf(addr, addrlen, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host, (long long)port);
    if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &sslen) != 0) {
        snprintf(err, errlen, "%s: '%s' is not an IP address", key, host);
        return NULL;
    }
    /* With SO_REUSEPORT the kernel spreads new connections over every gateway bound to
     * the port, so several single-threaded gateways use several cores. */
    unsigned flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
    if (reuse_port)
        flags |= LEV_OPT_REUSEABLE_PORT;
    struct evconnlistener *l = evconnlistener_new_bind(base, NULL, NULL, flags, backlog, (struct sockaddr *)&ss, sslen);
    if (!l)
        snprintf(err, errlen, "http %s: %s", addr, strerror(errno));
    return l;
}

static int metrics_listener(struct http *http, int64_t port, char *err, size_t errlen)
{
    const struct config *cfg = http->gw->cfg;
    http->metrics_evhttp = evhttp_new(http->gw->base);
    if (!http->metrics_evhttp) {
        snprintf(err, errlen, "evhttp_new failed");
        return -1;
    }
    apply_limits(http->metrics_evhttp, cfg);
    evhttp_set_gencb(http->metrics_evhttp, on_metrics_request, http);
    char addr[300];
    struct evconnlistener *l = listen_on(http->gw->base, "http.metrics-host", cfg->http_metrics_host, port, 128,
                                         false, addr, sizeof(addr), err, errlen);
    if (!l || !evhttp_bind_listener(http->metrics_evhttp, l)) {
        if (l) {
            evconnlistener_free(l);
            snprintf(err, errlen, "http %s: evhttp_bind_listener failed", addr);
        }
        return -1;
    }
    LOG_INFO("metrics on http://%s/metrics", addr);
    return 0;
}

struct http *http_new(struct gateway *gw, char *err, size_t errlen)
{
    const struct config *cfg = gw->cfg;
    struct http *http = calloc(1, sizeof(*http));
    if (!http) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    http->gw = gw;
    http->evhttp = evhttp_new(gw->base);
    http->adopt_event = event_new(gw->base, -1, 0, on_adopt, http);
    http->header_timer = evtimer_new(gw->base, on_header_timeout, http);
    if (!http->evhttp || !http->adopt_event || !http->header_timer) {
        snprintf(err, errlen, "evhttp_new failed");
        http_free(http);
        return NULL;
    }
    apply_limits(http->evhttp, cfg);
    evhttp_set_gencb(http->evhttp, on_request, http);
    const char *route_names[sizeof(routes) / sizeof(routes[0])];
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        route_names[i] = routes[i].path;
    metrics_set_routes(route_names, sizeof(routes) / sizeof(routes[0]));

    int64_t metrics_port = config_metrics_port(cfg);
    http->metrics_on_main = metrics_port == CONFIG_METRICS_MAIN;
    if (metrics_port > 0 && metrics_listener(http, metrics_port, err, errlen) != 0) {
        http_free(http);
        return NULL;
    }
    /* A flash sale holds many connections open: use every descriptor the system allows. */
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    evhttp_set_bevcb(http->evhttp, on_new_connection, http);
    /* Our own listener for a deep backlog: evhttp_bind_socket is fixed at 128, which a
     * flash-sale burst of connects overflows. */
    char addr[300];
    http->listener = listen_on(gw->base, "http.host", cfg->http_host, cfg->http_port, (int)cfg->http_backlog,
                               cfg->http_reuse_port, addr, sizeof(addr), err, errlen);
    if (!http->listener) {
        http_free(http);
        return NULL;
    }
    http->bound = evhttp_bind_listener(http->evhttp, http->listener);
    LOG_INFO("listening on http://%s", addr);
    return http;
}

void http_stop_accepting(struct http *http)
{
    if (http->bound) {
        evhttp_del_accept_socket(http->evhttp, http->bound);  /* frees the listener, closing it */
        http->bound = NULL;
        http->listener = NULL;
    }
}

void http_free(struct http *http)
{
    if (!http)
        return;
    /* evhttp_free frees the listener before the connections, whose close callbacks
     * would otherwise re-enable it. */
    http->listener = NULL;
    http->bound = NULL;
    if (http->metrics_evhttp)
        evhttp_free(http->metrics_evhttp);
    if (http->evhttp)
        evhttp_free(http->evhttp);  /* closes the listener and every connection */
    /* Accepted in the last loop pass and never adopted: the reference taken at accept
     * is the last one once evhttp let go. */
    while (http->adopting) {
        struct conn *c = http->adopting;
        http->adopting = c->next;
        bufferevent_decref(c->bev);
        free(c);
    }
    /* Connections evhttp closed without calling back (none known, but never leak). */
    for (size_t i = 0; i < http->conns.capacity; i++)
        if (http->conns.slots[i].key)
            free((struct conn *)(uintptr_t)http->conns.slots[i].value);
    if (http->adopt_event)
        event_free(http->adopt_event);
    if (http->header_timer)
        event_free(http->header_timer);
    intmap_free(&http->conns);
    free(http);
}
