#include "gateway/adminfwd.h"

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/log.h"

/* An answer of the admin bigger than this is no answer to a read. */
#define ADMINFWD_MAX_BODY 65536

/* One forward in flight. Owned by the list of its adminfwd until its callback ran; its
 * connection is freed a loop pass later (libevent still uses it when the request's
 * callback returns). */
struct fwd {
    struct fwd *prev, *next;
    struct adminfwd *f;
    struct evhttp_connection *evcon;
    adminfwd_cb cb;
    void *arg;
    bool closing;           /* adminfwd_close gave it up: libevent's callback is ignored */
};

struct adminfwd {
    struct event_base *base;
    const struct config *cfg;
    char host[NI_MAXHOST];  /* numeric */
    unsigned short port;    /* 0: off */
    char authorization[512];
    struct fwd *live;       /* in flight */
    size_t in_flight;
    struct evhttp_connection *spent[ADMINFWD_MAX_IN_FLIGHT + 1];
    size_t nspent;
    struct event *reap;     /* frees the spent connections */
    bool closed;
    bool down;              /* the last forward got no answer: log the next that does */
};

static void free_spent(struct adminfwd *f)
{
    for (size_t i = 0; i < f->nspent; i++)
        evhttp_connection_free(f->spent[i]);
    f->nspent = 0;
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    free_spent(arg);
}

/* The address to connect to, numeric: a wildcard listener is reached on loopback. key
 * names the setting host came from, for the error. */
static int resolve(struct adminfwd *f, const char *key, const char *host, char *err, size_t errlen)
{
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "*") == 0)
        host = "127.0.0.1";
    else if (strcmp(host, "::") == 0)
        host = "::1";
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(err, errlen, "%s: cannot resolve '%s': %s", key, host, gai_strerror(rc));
        return -1;
    }
    rc = getnameinfo(ai->ai_addr, ai->ai_addrlen, f->host, sizeof(f->host), NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s: '%s': %s", key, host, gai_strerror(rc));
        return -1;
    }
    return 0;
}

struct adminfwd *adminfwd_new(struct event_base *base, const struct config *cfg, char *err, size_t errlen)
{
    struct adminfwd *f = calloc(1, sizeof(*f));
    if (!f || !(f->reap = event_new(base, -1, 0, on_reap, f))) {
        free(f);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->base = base;
    f->cfg = cfg;
    int64_t port = config_admin_port(cfg);
    if (port > 0) {
        /* Another machine reaches seckill-admin where it is advertised, not where it binds. */
        bool advertised = cfg->admin_advertised_host[0] != '\0';
        if (resolve(f, advertised ? "admin.advertised-host" : "admin.host",
                    advertised ? cfg->admin_advertised_host : cfg->admin_host, err, errlen) != 0) {
            adminfwd_free(f);
            return NULL;
        }
        f->port = (unsigned short)port;
        snprintf(f->authorization, sizeof(f->authorization), "Bearer %s", cfg->admin_token);
    }
    return f;
}

bool adminfwd_enabled(const struct adminfwd *f) { return f->port != 0; }

size_t adminfwd_in_flight(const struct adminfwd *f) { return f->in_flight; }

static void unlink_fwd(struct fwd *w)
{
    struct adminfwd *f = w->f;
    if (w->prev)
        w->prev->next = w->next;
    else
        f->live = w->next;
    if (w->next)
        w->next->prev = w->prev;
    f->in_flight--;
}

static cJSON *body_of(struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = in ? evbuffer_get_length(in) : 0;
    if (len == 0 || len > ADMINFWD_MAX_BODY)
        return NULL;
    const char *text = (const char *)evbuffer_pullup(in, -1);
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (j && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = NULL;
    }
    return j;
}

static void on_done(struct evhttp_request *req, void *arg)
{
    struct fwd *w = arg;
    if (w->closing)
        return;
    struct adminfwd *f = w->f;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    cJSON *body = code > 0 ? body_of(req) : NULL;
    if (code > 0 && !body)
        code = 0;  /* the admin answers JSON, always: anything else is a broken answer */
    if (code == 0 && !f->down) {
        LOG_WARN("seckill-admin at %s:%u gave no answer (unreachable, slower than http.request-timeout-ms, "
                 "or a broken reply): reads of archived sales answer 503", f->host, f->port);
        f->down = true;
    } else if (code > 0 && f->down) {
        LOG_INFO("seckill-admin at %s:%u answers again", f->host, f->port);
        f->down = false;
    }
    unlink_fwd(w);
    /* The connections spent before this one are no longer in libevent's hands. */
    if (f->nspent == sizeof(f->spent) / sizeof(f->spent[0]))
        free_spent(f);
    f->spent[f->nspent++] = w->evcon;
    event_active(f->reap, EV_TIMEOUT, 0);
    w->cb(w->arg, code, body);
    cJSON_Delete(body);
    free(w);
}

int adminfwd_get(struct adminfwd *f, const char *target, adminfwd_cb cb, void *arg)
{
    if (f->port == 0 || f->closed || f->in_flight >= ADMINFWD_MAX_IN_FLIGHT)
        return -1;
    struct fwd *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->evcon = evhttp_connection_base_new(f->base, NULL, f->host, f->port);
    struct evhttp_request *req = w->evcon ? evhttp_request_new(on_done, w) : NULL;
    if (!req) {
        if (w->evcon)
            evhttp_connection_free(w->evcon);
        free(w);
        return -1;
    }
    struct timeval tv = clock_timeval_ms(f->cfg->http_request_timeout_ms);
    evhttp_connection_set_timeout_tv(w->evcon, &tv);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", f->host);
    evhttp_add_header(h, "Authorization", f->authorization);
    evhttp_add_header(h, "Connection", "close");
    w->f = f;
    w->cb = cb;
    w->arg = arg;
    /* evhttp_make_request frees req when it fails. */
    if (evhttp_make_request(w->evcon, req, EVHTTP_REQ_GET, target) != 0) {
        evhttp_connection_free(w->evcon);
        free(w);
        return -1;
    }
    w->next = f->live;
    if (f->live)
        f->live->prev = w;
    f->live = w;
    f->in_flight++;
    return 0;
}

void adminfwd_close(struct adminfwd *f)
{
    if (!f)
        return;
    f->closed = true;
    while (f->live) {
        struct fwd *w = f->live;
        w->closing = true;
        unlink_fwd(w);
        evhttp_connection_free(w->evcon);  /* frees its request without calling on_done */
        w->cb(w->arg, 0, NULL);
        free(w);
    }
}

void adminfwd_free(struct adminfwd *f)
{
    if (!f)
        return;
    adminfwd_close(f);
    free_spent(f);
    event_free(f->reap);
    free(f);
}
