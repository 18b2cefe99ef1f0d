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
#include "gateway/couponapi.h"
#include "gateway/execute.h"
#include "gateway/intmap.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "gateway/readapi.h"
#include "gateway/reply.h"
#include "gateway/tokenapi.h"

/* evhttp 2.1 has no connection cap, so the gateway counts connections itself. It makes
 * each connection's bufferevent (evhttp_set_bevcb runs once per accepted socket) and keys
 * the count by that pointer. A connection is "watched" once it sent a request: evhttp then
 * tells us when it closes. One that never sent a request is closed by evhttp's idle
 * timeout without telling us, so the sweep forgets it after that timeout (pointers are
 * only compared, never followed). At the cap the listener pauses: new clients wait in the
 * kernel's backlog instead of being accepted. */
#define HTTP_WATCHED (1ULL << 63)

struct http {
    struct gateway *gw;
    struct evhttp *evhttp;
    struct evconnlistener *listener;   /* owned by evhttp through `bound` */
    struct evhttp_bound_socket *bound;
    struct event *sweep_timer;
    struct intmap conns;       /* bufferevent -> accept time in us, | HTTP_WATCHED */
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
};

static void admit(struct http *http)
{
    bool full = http->conns.count >= (size_t)http->gw->cfg->http_max_connections;
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

static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
{
    struct http *http = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    /* A recycled address means the connection it belonged to is gone. */
    if (bev && intmap_put(&http->conns, (int64_t)(uintptr_t)bev, (uint64_t)clock_mono_us()) == 0)
        admit(http);
    return bev;
}

static void on_connection_close(struct evhttp_connection *evcon, void *arg)
{
    struct http *http = arg;
    intmap_remove(&http->conns, (int64_t)(uintptr_t)evhttp_connection_get_bufferevent(evcon));
    admit(http);
}

static void watch(struct http *http, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    int64_t key = evcon ? (int64_t)(uintptr_t)evhttp_connection_get_bufferevent(evcon) : 0;
    uint64_t accepted;
    if (!key || !intmap_get(&http->conns, key, &accepted) || (accepted & HTTP_WATCHED))
        return;
    intmap_put(&http->conns, key, accepted | HTTP_WATCHED);
    evhttp_connection_set_closecb(evcon, on_connection_close, http);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http *http = arg;
    uint64_t cutoff = (uint64_t)(clock_mono_us() - (http->gw->cfg->http_idle_timeout + 2) * 1000000);
    for (size_t i = 0; i < http->conns.capacity; i++) {
        struct intmap_slot *slot = &http->conns.slots[i];
        /* Removal shifts later slots back; stay on this index until it holds a keeper. */
        while (slot->key && !(slot->value & HTTP_WATCHED) && slot->value < cutoff)
            intmap_remove(&http->conns, slot->key);
    }
    admit(http);
}

size_t http_open_connections(const struct http *http) { return http->conns.count; }

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
    };
    char *text = metrics_render(&g);
    if (!text) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4");
    struct evbuffer *buf = evbuffer_new();
    if (buf)
        evbuffer_add(buf, text, strlen(text));
    evhttp_send_reply(req, 200, "OK", buf);
    if (buf)
        evbuffer_free(buf);
    free(text);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct http *http = arg;
    watch(http, req);
    /* Draining: answer what comes on an open connection, then let it go. */
    if (http->gw->draining)
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
        if (!hit)
            continue;
        metrics_request(i);
        if (method != r->method) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                              r->method == EVHTTP_REQ_POST ? "POST" : "GET");
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
    if (!http->evhttp) {
        snprintf(err, errlen, "evhttp_new failed");
        free(http);
        return NULL;
    }
    evhttp_set_max_headers_size(http->evhttp, (ev_ssize_t)cfg->http_max_header_size);
    /* evhttp answers bodies over its own limit with an HTML page; a looser limit there
     * lets on_request answer anything between with the API's JSON 413. */
    int64_t hard_body_limit = cfg->http_max_body_size * 4 > 65536 ? cfg->http_max_body_size * 4 : 65536;
    evhttp_set_max_body_size(http->evhttp, (ev_ssize_t)hard_body_limit);
    evhttp_set_timeout(http->evhttp, (int)cfg->http_idle_timeout);
    evhttp_set_allowed_methods(http->evhttp, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                                 EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD |
                                                 EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(http->evhttp, on_request, http);
    const char *route_names[sizeof(routes) / sizeof(routes[0])];
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        route_names[i] = routes[i].path;
    metrics_set_routes(route_names, sizeof(routes) / sizeof(routes[0]));

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    int sslen = (int)sizeof(ss);
    char addr[300];
    snprintf(addr, sizeof(addr), strchr(cfg->http_host, ':') ? "[%s]:%lld" : "%s:%lld", cfg->http_host,
             (long long)cfg->http_port);
    if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &sslen) != 0) {
        snprintf(err, errlen, "http.host: '%s' is not an IP address", cfg->http_host);
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
    /* With SO_REUSEPORT the kernel spreads new connections over every gateway bound to
     * the port, so several single-threaded gateways use several cores. */
    unsigned listen_flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
    if (cfg->http_reuse_port)
        listen_flags |= LEV_OPT_REUSEABLE_PORT;
    http->listener = evconnlistener_new_bind(gw->base, NULL, NULL, listen_flags,
                                             (int)cfg->http_backlog, (struct sockaddr *)&ss, sslen);
    if (!http->listener) {
        snprintf(err, errlen, "http %s: %s", addr, strerror(errno));
        http_free(http);
        return NULL;
    }
    http->bound = evhttp_bind_listener(http->evhttp, http->listener);
    http->sweep_timer = event_new(gw->base, -1, EV_PERSIST, on_sweep, http);
    struct timeval second = { 1, 0 };
    event_add(http->sweep_timer, &second);
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
    if (http->sweep_timer)
        event_free(http->sweep_timer);
    if (http->evhttp)
        evhttp_free(http->evhttp);  /* closes the listener and every connection */
    intmap_free(&http->conns);
    free(http);
}
