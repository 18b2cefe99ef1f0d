#include "consumer/consumermetrics.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/textbuf.h"

enum consumermetrics_kind { COUNTER, GAUGE, SECONDS, COUNT };

/* Upper bounds: microseconds (0.1 ms to 30 s) for SECONDS, orders for COUNT. */
static const int64_t seconds_bounds[] = { 100, 250, 500, 1000, 2500, 5000, 10000, 25000,
                                          50000, 100000, 250000, 500000, 1000000, 2500000,
                                          5000000, 10000000, 30000000 };
static const int64_t count_bounds[] = { 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000,
                                        10000, 100000 };
#define MAX_BOUNDS 17

struct metric_def {
    enum consumermetrics_kind kind;
    const char *name, *labels, *help;
};

#define CONSUMERMETRICS_DEF(id, kind, name, labels, help) { kind, name, labels, help },
static const struct metric_def defs[] = { CONSUMERMETRICS_LIST(CONSUMERMETRICS_DEF) };
#undef CONSUMERMETRICS_DEF

/* A histogram's buckets are not cumulative (summed when rendered); the last one is +Inf.
 * Its count is the sum of its buckets, so that _count always equals the +Inf bucket. */
struct histogram {
    atomic_uint_least64_t buckets[MAX_BOUNDS + 1];
    atomic_int_least64_t sum;
};

/* The values: written by the consumer thread, read by the server thread. Static storage,
 * so zero-initialised before either thread runs. Histogram slots of counters and gauges
 * stay unused: a few KB for one list indexed by one enum. */
static atomic_uint_least64_t values[CONSUMERMETRICS_COUNT];
static struct histogram histograms[CONSUMERMETRICS_COUNT];

static void bounds_of(enum consumermetrics_kind kind, const int64_t **bounds, size_t *n)
{
    if (kind == SECONDS) {
        *bounds = seconds_bounds;
        *n = sizeof(seconds_bounds) / sizeof(seconds_bounds[0]);
    } else {
        *bounds = count_bounds;
        *n = sizeof(count_bounds) / sizeof(count_bounds[0]);
    }
}

void consumermetrics_add(enum consumermetrics_id id, uint64_t n)
{
    atomic_fetch_add_explicit(&values[id], n, memory_order_relaxed);
}

void consumermetrics_set(enum consumermetrics_id id, uint64_t value)
{
    atomic_store_explicit(&values[id], value, memory_order_relaxed);
}

void consumermetrics_observe(enum consumermetrics_id id, int64_t value)
{
    const int64_t *bounds;
    size_t n;
    bounds_of(defs[id].kind, &bounds, &n);
    size_t i = 0;
    while (i < n && value > bounds[i])
        i++;
    atomic_fetch_add_explicit(&histograms[id].buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&histograms[id].sum, value, memory_order_relaxed);
}

/* ---- rendering -------------------------------------------------------------------- */

/* name{labels} or name{labels,extra} or name: the series of one sample. */
static void series(struct textbuf *t, const char *name, const char *suffix, const char *labels,
                   const char *extra)
{
    const char *sep = labels[0] && extra[0] ? "," : "";
    if (labels[0] || extra[0])
        textbuf_printf(t, "%s%s{%s%s%s} ", name, suffix, labels, sep, extra);
    else
        textbuf_printf(t, "%s%s ", name, suffix);
}

static void render_histogram(struct textbuf *t, enum consumermetrics_id id)
{
    const struct metric_def *d = &defs[id];
    const int64_t *bounds;
    size_t n;
    bounds_of(d->kind, &bounds, &n);
    uint64_t cumulative = 0;
    char le[48];
    for (size_t i = 0; i <= n; i++) {
        cumulative += atomic_load_explicit(&histograms[id].buckets[i], memory_order_relaxed);
        if (i == n)
            snprintf(le, sizeof(le), "le=\"+Inf\"");
        else if (d->kind == SECONDS)
            snprintf(le, sizeof(le), "le=\"%g\"", (double)bounds[i] / 1e6);
        else
            snprintf(le, sizeof(le), "le=\"%" PRId64 "\"", bounds[i]);
        series(t, d->name, "_bucket", d->labels, le);
        textbuf_printf(t, "%" PRIu64 "\n", cumulative);
    }
    int64_t sum = atomic_load_explicit(&histograms[id].sum, memory_order_relaxed);
    series(t, d->name, "_sum", d->labels, "");
    if (d->kind == SECONDS)
        textbuf_printf(t, "%.6f\n", (double)sum / 1e6);
    else
        textbuf_printf(t, "%" PRId64 "\n", sum);
    series(t, d->name, "_count", d->labels, "");
    textbuf_printf(t, "%" PRIu64 "\n", cumulative);
}

char *consumermetrics_render(void)
{
    static const char *const types[] = {
        [COUNTER] = "counter", [GAUGE] = "gauge", [SECONDS] = "histogram", [COUNT] = "histogram",
    };
    struct textbuf t;
    textbuf_init(&t);
    for (size_t i = 0; i < CONSUMERMETRICS_COUNT; i++) {
        const struct metric_def *d = &defs[i];
        if (i == 0 || strcmp(d->name, defs[i - 1].name) != 0)
            textbuf_printf(&t, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name, types[d->kind]);
        if (d->kind == SECONDS || d->kind == COUNT) {
            render_histogram(&t, (enum consumermetrics_id)i);
            continue;
        }
        series(&t, d->name, "", d->labels, "");
        textbuf_printf(&t, "%" PRIu64 "\n", (uint64_t)atomic_load_explicit(&values[i], memory_order_relaxed));
    }
    return textbuf_take(&t);
}

/* ---- the server thread ------------------------------------------------------------ */

/* Ownership: the main thread creates all of it in consumermetrics_start, before the
 * thread exists, and frees it in consumermetrics_stop, after joining it. In between
 * only the thread touches base and http; the main thread writes one byte to wake[1]. */
static struct {
    struct event_base *base;
    struct evhttp *http;
    struct event *wake_event;
    int wake[2];               /* a pipe: a byte on it ends the loop */
    pthread_t thread;
    int started;
} server = { .wake = { -1, -1 } };

static void send_text(struct evhttp_request *req, int code, const char *reason,
                      const char *type, const char *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
    struct evbuffer *buf = evbuffer_new();
    if (buf)
        evbuffer_add(buf, body, strlen(body));
    evhttp_send_reply(req, code, reason, buf);
    if (buf)
        evbuffer_free(buf);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || strcmp(path, "/metrics") != 0) {
        send_text(req, 404, "Not Found", "application/json",
                  "{\"success\":false,\"status\":\"NOT_FOUND\",\"message\":\"no such endpoint\"}");
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        send_text(req, 405, "Method Not Allowed", "application/json",
                  "{\"success\":false,\"status\":\"METHOD_NOT_ALLOWED\",\"message\":\"method not allowed\"}");
        return;
    }
    char *text = consumermetrics_render();
    if (!text) {
        send_text(req, 503, "Service Unavailable", "application/json",
                  "{\"success\":false,\"status\":\"UNAVAILABLE\",\"message\":\"out of memory\"}");
        return;
    }
    send_text(req, 200, "OK", "text/plain; version=0.0.4", text);
    free(text);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static void *server_main(void *arg)
{
    (void)arg;
    event_base_dispatch(server.base);
    return NULL;
}

static void server_free(void)
{
    if (server.wake_event)
        event_free(server.wake_event);
    if (server.http)
        evhttp_free(server.http);
    if (server.base)
        event_base_free(server.base);
    for (int i = 0; i < 2; i++)
        if (server.wake[i] >= 0)
            close(server.wake[i]);
    server.wake_event = NULL;
    server.http = NULL;
    server.base = NULL;
    server.wake[0] = server.wake[1] = -1;
}

int consumermetrics_start(const char *host, int port, char *err, size_t errlen)
{
    if (port == 0)
        return 0;
    if (pipe(server.wake) != 0) {
        server.wake[0] = server.wake[1] = -1;
        snprintf(err, errlen, "consumer.metrics-port: pipe: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < 2; i++)
        fcntl(server.wake[i], F_SETFD, FD_CLOEXEC);
    server.base = event_base_new();
    server.http = server.base ? evhttp_new(server.base) : NULL;
    server.wake_event = server.base ? event_new(server.base, server.wake[0], EV_READ, on_wake,
                                                server.base)
                                    : NULL;
    if (!server.http || !server.wake_event || event_add(server.wake_event, NULL) != 0) {
        snprintf(err, errlen, "consumer.metrics-port: cannot set up the metrics server");
        server_free();
        return -1;
    }
    evhttp_set_allowed_methods(server.http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                                EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
    evhttp_set_timeout(server.http, 30);
    evhttp_set_gencb(server.http, on_request, NULL);
    if (!evhttp_bind_socket_with_handle(server.http, host, (uint16_t)port)) {
        snprintf(err, errlen, "consumer.metrics-port: cannot listen on %s:%d: %s", host, port,
                 strerror(errno));
        server_free();
        return -1;
    }
    /* Signals are the consumer thread's: the server thread blocks them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&server.thread, NULL, server_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "consumer.metrics-port: cannot start the metrics thread: %s",
                 strerror(rc));
        server_free();
        return -1;
    }
    server.started = 1;
    return 0;
}

void consumermetrics_stop(void)
{
    if (!server.started)
        return;
    char byte = 0;
    ssize_t n;
    do
        n = write(server.wake[1], &byte, 1);
    while (n < 0 && errno == EINTR);
    pthread_join(server.thread, NULL);
    server.started = 0;
    server_free();
}
