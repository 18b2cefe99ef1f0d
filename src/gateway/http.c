#include "gateway/http.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/httpconns.h"
#include "gateway/activitylist.h"
#include "gateway/adminfwd.h"
#include "gateway/bans.h"
#include "gateway/couponapi.h"
#include "gateway/execute.h"
#include "gateway/longpoll.h"
#include "common/log.h"
#include "gateway/metrics.h"
#include "gateway/openapi.h"
#include "gateway/readapi.h"
#include "gateway/reply.h"
#include "gateway/salestats.h"
#include "gateway/tokenapi.h"

/* The connection cap, the header timeout and the paused accepts are httpconns.c's, one
 * for the API's listener and one for http.metrics-port's. */
struct http {
    struct gateway *gw;
    struct httpconns *conns;
    struct httpconns *metrics_conns;   /* http.metrics-port's own listener, or NULL */
    bool metrics_on_main;
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
    { "/seckill/activities", EVHTTP_REQ_GET, .exact = activitylist_serve },
    { "/seckill/activities/", EVHTTP_REQ_GET, .below = readapi_activity },
    { "/coupons", EVHTTP_REQ_GET, .exact = couponapi_list },
    { "/coupons/", EVHTTP_REQ_POST, .below = couponapi_post },
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

/* The HTTP layer's counters, kept with the gateway's metrics. */
static void on_conns_event(enum httpconns_event event, void *arg)
{
    (void)arg;
    switch (event) {
    case HTTPCONNS_CAP_PAUSE: metrics_inc(METRIC_ACCEPT_PAUSES); break;
    case HTTPCONNS_HEADER_TIMEOUT: metrics_inc(METRIC_HEADER_TIMEOUTS); break;
    case HTTPCONNS_ACCEPT_FAILED: metrics_inc(METRIC_ACCEPT_FAILURES); break;
    }
}

size_t http_open_connections(const struct http *http) { return httpconns_open(http->conns); }


static void metrics_page(struct http *http, struct evhttp_request *req)
{
    const struct gateway *gw = http->gw;
    metrics_set(METRIC_IN_FLIGHT, gw->in_flight);
    metrics_set(METRIC_OPEN_CONNECTIONS, http_open_connections(http));
    metrics_set(METRIC_QUEUED_MARKS_PENDING, queuedmarks_pending(gw->marks));
    metrics_set(METRIC_REDIS_PENDING, redisconn_pending(gw->redis));
    metrics_set(METRIC_REDIS_RECONNECTS, redisconn_reconnects(gw->redis));
    metrics_set(METRIC_KAFKA_QUEUE, (uint64_t)kafkaprod_in_flight(gw->kafka));
    metrics_set(METRIC_REDIS_UP, redisconn_ready(gw->redis));
    metrics_set(METRIC_KAFKA_UP, kafkaprod_healthy(gw->kafka));
    metrics_set(METRIC_LONGPOLL_WAITING, longpoll_waiting(gw->longpoll));
    metrics_set(METRIC_CACHED_WINNERS, activity_cache_winners(gw->activities));
    metrics_set(METRIC_BANS_IN_FORCE, bans_in_force(gw->bans, clock_wall_ms()));
    metrics_set(METRIC_ARCHIVE_FORWARDS, gw->admin ? adminfwd_in_flight(gw->admin) : 0);
    struct textbuf page;
    textbuf_init(&page);
    metrics_render(&page);
    if (gw->sales)
        salestats_render(gw->sales, &page, clock_wall_ms());
    char *text = textbuf_take(&page);
    if (!text) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    reply_document(req, "text/plain; version=0.0.4", text, strlen(text), false);
    free(text);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct http *http = arg;
    httpconns_begin(http->conns, req);
    /* Draining: answer what comes on an open connection, then let it go. */
    if (http->gw->draining)
        httpconns_close_after(req);
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
    httpconns_begin(http->metrics_conns, req);
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

static int metrics_listener(struct http *http, int64_t port, char *err, size_t errlen)
{
    const struct config *cfg = http->gw->cfg;
    struct httpconns_limits limits = { cfg->http_max_connections, cfg->http_header_timeout_ms };
    http->metrics_conns = httpconns_new(http->gw->base, &limits, on_conns_event, http);
    if (!http->metrics_conns) {
        snprintf(err, errlen, "evhttp_new failed");
        return -1;
    }
    struct evhttp *evhttp = httpconns_evhttp(http->metrics_conns);
    apply_limits(evhttp, cfg);
    evhttp_set_gencb(evhttp, on_metrics_request, http);
    char addr[300];
    if (httpconns_listen(http->metrics_conns, "http.metrics-host", cfg->http_metrics_host, port, 128, false,
                         addr, sizeof(addr), err, errlen) != 0)
        return -1;
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
    struct httpconns_limits limits = { cfg->http_max_connections, cfg->http_header_timeout_ms };
    http->conns = httpconns_new(gw->base, &limits, on_conns_event, http);
    if (!http->conns) {
        snprintf(err, errlen, "evhttp_new failed");
        http_free(http);
        return NULL;
    }
    struct evhttp *evhttp = httpconns_evhttp(http->conns);
    apply_limits(evhttp, cfg);
    evhttp_set_gencb(evhttp, on_request, http);
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
    /* A deep backlog: a flash-sale burst of connects overflows evhttp_bind_socket's 128. */
    char addr[300];
    if (httpconns_listen(http->conns, "http.host", cfg->http_host, cfg->http_port, (int)cfg->http_backlog,
                         cfg->http_reuse_port, addr, sizeof(addr), err, errlen) != 0) {
        http_free(http);
        return NULL;
    }
    LOG_INFO("listening on http://%s", addr);
    return http;
}

void http_stop_accepting(struct http *http) { httpconns_stop_accepting(http->conns); }

void http_free(struct http *http)
{
    if (!http)
        return;
    httpconns_free(http->metrics_conns);
    httpconns_free(http->conns);
    free(http);
}
