#ifndef SK_HTTPCONNS_H
#define SK_HTTPCONNS_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The connections of one evhttp server, for the gateway's listeners and seckill-admin's:
 * the cap on open connections (http.max-connections), the deadline of a request's head
 * and body (http.header-timeout-ms), accepting paused while the process has no descriptor
 * left (EMFILE, ENFILE), the descriptor limit raised, and the listening socket itself.
 * evhttp 2.1 has none of these: without them a trickle of slow connections fills every
 * descriptor, and libevent retries a failing accept() at once, for ever. */

struct httpconns;

struct httpconns_limits {
    int64_t max_connections;    /* at this many open connections accepting pauses */
    int64_t header_timeout_ms;  /* a request must be complete this long after it began */
};

/* What the owner may count (the gateway's metrics). */
enum httpconns_event {
    HTTPCONNS_CAP_PAUSE,        /* accepting paused at max_connections */
    HTTPCONNS_HEADER_TIMEOUT,   /* a connection closed at its deadline */
    HTTPCONNS_ACCEPT_FAILED,    /* accept() failed (no descriptor left): paused for a while */
};
typedef void (*httpconns_note)(enum httpconns_event event, void *arg);

/* A new evhttp on base, its connections counted and timed; note (may be NULL) hears of
 * each event above. The first call raises RLIMIT_NOFILE's soft limit to the hard one. */
struct httpconns *httpconns_new(struct event_base *base, const struct httpconns_limits *limits,
                                httpconns_note note, void *note_arg);
/* The evhttp to set limits and callbacks on; httpconns_free frees it. Its bevcb is this
 * module's and each connection's close callback too: the owner sets neither. */
struct evhttp *httpconns_evhttp(struct httpconns *hc);
/* Listens on host:port (key names the setting in messages) with a backlog of its own
 * (evhttp_bind_socket's is fixed at 128) and SO_REUSEPORT when asked. addr gets
 * "host:port". -1 with err set when the address is bad or cannot be bound. */
int httpconns_listen(struct httpconns *hc, const char *key, const char *host, int64_t port, int backlog,
                     bool reuse_port, char *addr, size_t addrlen, char *err, size_t errlen);
/* Every request handler calls this first: the request is complete, so its connection
 * leaves the deadline until the answer is written. A body evhttp left unread (it reads
 * none for HEAD, TRACE and methods it does not know) closes the connection after the
 * answer, or its bytes would be taken for the next request. */
void httpconns_begin(struct httpconns *hc, struct evhttp_request *req);
/* The connection closes once this request is answered (Connection: close). */
void httpconns_close_after(struct evhttp_request *req);
/* Closes the listening socket; open connections still get answers. */
void httpconns_stop_accepting(struct httpconns *hc);
/* Every accepted connection evhttp has not closed yet. */
size_t httpconns_open(const struct httpconns *hc);
/* Frees the evhttp (closing the listener and every connection) and the rest. */
void httpconns_free(struct httpconns *hc);

#endif
