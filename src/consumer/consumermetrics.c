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

#include "common/exposition.h"
#include "common/histogram.h"
#include "common/textbuf.h"

static const struct exposition_def defs[] = { CONSUMERMETRICS_LIST(EXPOSITION_DEF) };

/* The values: written by the consumer thread, read by the server thread. Static storage,
 * so zero-initialised before either thread runs. Histogram slots of counters and gauges
 * stay unused: a few KB for one list indexed by one enum. */
static atomic_uint_least64_t values[CONSUMERMETRICS_COUNT];
#define CONSUMERMETRICS_UNIT(id, kind, name, labels, help) EXPOSITION_HISTOGRAM(CONSUMERMETRICS_##id, kind)
static struct histogram histograms[CONSUMERMETRICS_COUNT] = { CONSUMERMETRICS_LIST(CONSUMERMETRICS_UNIT) };
#undef CONSUMERMETRICS_UNIT

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
    histogram_observe(&histograms[id], value);
}

/* ---- rendering -------------------------------------------------------------------- */

static uint64_t value_of(size_t i, void *arg)
{
    (void)arg;
    return atomic_load_explicit(&values[i], memory_order_relaxed);
}

char *consumermetrics_render(void)
{
    struct textbuf t;
    textbuf_init(&t);
    exposition_render(&t, defs, CONSUMERMETRICS_COUNT, value_of, NULL, histograms);
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
