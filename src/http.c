#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "coupons.h"
#include "log.h"
#include "queries.h"
#include "reply.h"

struct http {
    struct gateway *gw;
    struct evhttp *evhttp;
    struct evconnlistener *listener;
    struct evhttp_bound_socket *bound;
};

enum route_match { ROUTE_EXACT, ROUTE_PREFIX };

/* A handler gets the rest of the path after a prefix route ("/seckill/stock/42" -> "42"). */
typedef void (*route_handler)(struct gateway *gw, struct evhttp_request *req, const char *rest);

struct route {
    const char *path;
    enum route_match match;
    enum evhttp_cmd_type method;
    route_handler handler;
};

static void route_execute(struct gateway *gw, struct evhttp_request *req, const char *rest)
{
    (void)rest;
    gateway_execute(gw, req);
}

static void route_result(struct gateway *gw, struct evhttp_request *req, const char *rest)
{
    (void)rest;
    queries_result(gw, req);
}

static void route_health(struct gateway *gw, struct evhttp_request *req, const char *rest)
{
    (void)rest;
    queries_health(gw, req);
}

static void route_coupons(struct gateway *gw, struct evhttp_request *req, const char *rest)
{
    (void)rest;
    coupons_list(gw, req);
}

static const struct route routes[] = {
    { "/seckill/execute", ROUTE_EXACT, EVHTTP_REQ_POST, route_execute },
    { "/seckill/stock/", ROUTE_PREFIX, EVHTTP_REQ_GET, queries_stock },
    { "/seckill/result", ROUTE_EXACT, EVHTTP_REQ_GET, route_result },
    { "/seckill/orders/", ROUTE_PREFIX, EVHTTP_REQ_GET, queries_order },
    { "/seckill/activities/", ROUTE_PREFIX, EVHTTP_REQ_GET, queries_activity },
    { "/coupons", ROUTE_EXACT, EVHTTP_REQ_GET, route_coupons },
    { "/coupons/", ROUTE_PREFIX, EVHTTP_REQ_POST, coupons_use },
    { "/healthz", ROUTE_EXACT, EVHTTP_REQ_GET, route_health },
};

static void on_request(struct evhttp_request *req, void *arg)
{
    struct http *http = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path) {
        reply_error(req, REPLY_INVALID, "malformed request target", 0, NULL, NULL);
        return;
    }
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route *r = &routes[i];
        size_t n = strlen(r->path);
        bool hit = r->match == ROUTE_EXACT ? strcmp(path, r->path) == 0
                                           : strncmp(path, r->path, n) == 0 && path[n] != '\0';
        if (!hit)
            continue;
        if (method != r->method) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                              r->method == EVHTTP_REQ_POST ? "POST" : "GET");
            reply_error(req, REPLY_METHOD_NOT_ALLOWED, "method not allowed", 0, NULL, NULL);
            return;
        }
        r->handler(http->gw, req, r->match == ROUTE_PREFIX ? path + n : NULL);
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
    evhttp_set_max_body_size(http->evhttp, (ev_ssize_t)cfg->http_max_body_size);
    evhttp_set_timeout(http->evhttp, (int)cfg->http_idle_timeout);
    evhttp_set_allowed_methods(http->evhttp, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                                 EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD |
                                                 EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(http->evhttp, on_request, http);

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
    /* Our own listener for a deep backlog: evhttp_bind_socket is fixed at 128, which a
     * flash-sale burst of connects overflows. */
    http->listener = evconnlistener_new_bind(gw->base, NULL, NULL,
                                             LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                             (int)cfg->http_backlog, (struct sockaddr *)&ss, sslen);
    if (!http->listener) {
        snprintf(err, errlen, "http %s: %s", addr, strerror(errno));
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
        evhttp_del_accept_socket(http->evhttp, http->bound);  /* frees the listener too */
        http->bound = NULL;
        http->listener = NULL;
    }
}

void http_free(struct http *http)
{
    if (!http)
        return;
    if (http->evhttp)
        evhttp_free(http->evhttp);  /* closes the listener and every connection */
    else if (http->listener)
        evconnlistener_free(http->listener);
    free(http);
}
