/* bench/baseline: the ceiling of the HTTP layer on this machine.
 *
 * A minimal evhttp server that answers every request, on any path and with any method,
 * with one fixed JSON body of the size of the gateway's "order accepted" answer. It sets
 * up HTTP the way src/http.c does (its own evconnlistener with a deep backlog, the same
 * evhttp limits and idle timeout, a bufferevent made per connection), and does nothing
 * else: no parameters, no Redis, no Kafka. `make bench` drives it with the same wrk
 * settings as the gateway, and the report gives every scenario as a ratio of it.
 *
 *   baseline [-h host] [-p port] [-b backlog] [-t idle-timeout-seconds]
 *
 * Runs until SIGTERM or SIGINT; prints "baseline: listening on host:port" once ready.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* The length of the gateway's accept answer, with an order number of typical length. */
static const char BASELINE_BODY[] =
    "{\"success\":true,\"message\":\"order accepted\",\"orderNo\":\"2939845720392704001-1\","
    "\"status\":\"PROCESSING\"}";

struct baseline {
    struct event_base *base;
    struct evhttp *http;
};

static void baseline_on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        evhttp_send_error(req, 503, "out of memory");
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evbuffer_add(out, BASELINE_BODY, sizeof(BASELINE_BODY) - 1);
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

/* Like the gateway: one bufferevent per accepted socket, made by us. */
static struct bufferevent *baseline_on_connection(struct event_base *base, void *arg)
{
    (void)arg;
    return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
}

static void baseline_on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

static int baseline_int(const char *s, long lo, long hi, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "baseline: bad %s '%s' (%ld..%ld)\n", what, s, lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    int port = 8080, backlog = 4096, idle_timeout = 60, opt;
    while ((opt = getopt(argc, argv, "h:p:b:t:")) != -1) {
        switch (opt) {
        case 'h': host = optarg; break;
        case 'p': port = baseline_int(optarg, 1, 65535, "port"); break;
        case 'b': backlog = baseline_int(optarg, 1, 1 << 20, "backlog"); break;
        case 't': idle_timeout = baseline_int(optarg, 1, 86400, "idle timeout"); break;
        default:
            fprintf(stderr, "usage: %s [-h host] [-p port] [-b backlog] [-t idle-timeout-seconds]\n",
                    argv[0]);
            return 2;
        }
    }
    /* The gateway raises its descriptor limit the same way. */
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    signal(SIGPIPE, SIG_IGN);

    struct baseline b = { 0 };
    b.base = event_base_new();
    b.http = b.base ? evhttp_new(b.base) : NULL;
    if (!b.http) {
        fprintf(stderr, "baseline: libevent set-up failed\n");
        return 1;
    }
    /* The gateway's evhttp settings with conf/seckill.conf's values. */
    evhttp_set_max_headers_size(b.http, 8192);
    evhttp_set_max_body_size(b.http, 65536);
    evhttp_set_timeout(b.http, idle_timeout);
    evhttp_set_allowed_methods(b.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                           EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(b.http, baseline_on_request, NULL);
    evhttp_set_bevcb(b.http, baseline_on_connection, NULL);

    char addr[300];
    snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    struct sockaddr_storage ss;
    int sslen = (int)sizeof(ss);
    memset(&ss, 0, sizeof(ss));
    if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &sslen) != 0) {
        fprintf(stderr, "baseline: '%s' is not an IP address\n", host);
        return 2;
    }
    struct evconnlistener *listener =
        evconnlistener_new_bind(b.base, NULL, NULL,
                                LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, backlog,
                                (struct sockaddr *)&ss, sslen);
    if (!listener) {
        fprintf(stderr, "baseline: listen on %s: %s\n", addr, strerror(errno));
        return 1;
    }
    if (!evhttp_bind_listener(b.http, listener)) {
        fprintf(stderr, "baseline: evhttp_bind_listener failed\n");
        return 1;
    }
    struct event *term = evsignal_new(b.base, SIGTERM, baseline_on_signal, b.base);
    struct event *intr = evsignal_new(b.base, SIGINT, baseline_on_signal, b.base);
    if (!term || !intr || event_add(term, NULL) != 0 || event_add(intr, NULL) != 0) {
        fprintf(stderr, "baseline: signal set-up failed\n");
        return 1;
    }
    printf("baseline: listening on %s\n", addr);
    fflush(stdout);
    event_base_dispatch(b.base);
    event_free(term);
    event_free(intr);
    evhttp_free(b.http);  /* closes the listener and every connection */
    event_base_free(b.base);
    return 0;
}
