/* bench/openloop: an open-loop HTTP load generator for the flash-sale scenarios.
 *
 * wrk is closed-loop: a connection sends its next request only after the previous answer,
 * so when the server slows down the load drops with it and the slow answers are never
 * sampled (coordinated omission). This generator sends on a fixed schedule instead:
 * request k is due at start + k / rate whatever the answers do, and its latency is counted
 * from that due time, so time spent waiting for a free connection is part of it.
 *
 *   openloop -p PORT -a ACTIVITY -r RATE (-d SECONDS | -n COUNT) [-h HOST] [-c CONNS]
 *            [-u FIRST_USER] [-x] [-t DRAIN_SECONDS] [-l] [-R SHARE] [-k SKIP_MS] [-T TIMEOUT_S]
 *            [-i TICK_US]
 *
 * Every request is `POST /seckill/execute?userId=U&activityId=A` with a new user each
 * (FIRST_USER, FIRST_USER+1, ...); -x adds `X-Forwarded-For: 10.a.b.c`, one address per
 * 64 users, for runs with the per-IP limit on behind http.trust-forwarded-for. At most
 * CONNS (default 512) keep-alive connections, one request in flight on each. After the
 * last request is due, answers are awaited up to DRAIN_SECONDS (default 30); what has no
 * answer by then is reported as unanswered.
 *
 * Prints one JSON object: requests due and sent, answers by HTTP status, unanswered,
 * socket errors, the achieved send rate, latency percentiles in ms (p50 p90 p99 p99.9
 * max), the time from the first request due to the last answer, and when the first was
 * due on the wall clock (start_unix_ms); last_sent_s (when the last request was written)
 * and max_send_wait_ms (the longest a due request waited for a free connection) show
 * how far behind its schedule the generator fell.
 *
 * For the chaos suite, which judges every answer against what Redis and MySQL hold:
 *   -l          one line per request on stdout as it ends, before the JSON object:
 *               `A <user> <repeat> <sent_s> <done_s> <http status> <content type> <body>`
 *               or `E <user> <repeat> <sent_s> <done_s> refused|dropped|timeout`,
 *               tab-separated, times in seconds on CLOCK_MONOTONIC (Python's
 *               time.monotonic()), sent being when the request was written.
 *   -R SHARE    that share of the requests is a second attempt by a user already answered
 *               (each user repeats at most once); the rest are new users.
 *   -k SKIP_MS  a due request that waited longer than SKIP_MS for a free connection is
 *               skipped, not sent (counted as skipped): no catch-up burst after a stall.
 *   -T SECONDS  a request unanswered for that long is a timeout; its connection is closed.
 *   -i TICK_US  how often due requests are queued (default 100 us); a coarser tick costs
 *               less CPU where the generator shares a small machine with the stack.
 * A refused connect with requests waiting uses the oldest one up as `refused` (the client
 * tried and was refused) and connects again 100 ms later. SIGTERM or SIGINT ends the
 * schedule early: what is in flight is awaited up to DRAIN_SECONDS, then reported.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define OPENLOOP_MAX_STATUS 600
#define OPENLOOP_MAX_BODY 4096
#define OPENLOOP_RECONNECT_US 100000

struct openloop_conn {
    struct openloop *ol;
    struct bufferevent *bev;
    bool busy;
    bool connected;
    int64_t index;       /* request in flight, when busy */
    int status;          /* of the answer being read; 0 until its status line */
    int64_t body_left;   /* -1 while reading the head */
    int64_t sent_us;
    struct event *retry; /* the next connect, after a refused one */
    char content_type[64];
    char body[OPENLOOP_MAX_BODY];
    size_t body_len;
};

struct openloop {
    struct event_base *base;
    struct sockaddr_in addr;
    int64_t activity;
    int64_t first_user;
    double rate;
    int64_t count;
    int conns_max;
    bool xff;
    double drain_seconds;
    bool log;
    double repeat_share;
    int64_t skip_us;         /* 0: never skip */
    int64_t timeout_us;      /* 0: no client timeout */
    uint64_t rng;
    int64_t next_user;       /* users [first_user, first_user + next_user) were used */
    int64_t *answered_users; /* first attempts answered and not yet repeated */
    int64_t answered_users_n;
    int64_t skipped;
    int64_t timeouts;
    int64_t refused;
    int64_t last_timeout_check_us;
    int tick_us;
    bool log_dirty;

    struct openloop_conn *conns;
    int64_t *due_us;         /* per request: when it was due (monotonic) */
    int64_t *user;           /* per request: its user, chosen when it is sent */
    bool *repeat;            /* per request: a second attempt by that user */
    int32_t *latency_us;     /* per answered request, in answer order */
    int64_t answered;
    int64_t next_due;        /* requests [0, next_due) are due */
    int64_t next_send;       /* requests [0, next_send) were sent; due and unsent wait */
    int64_t start_us;
    int64_t start_wall_ms;   /* start_us on the wall clock, to compare with MariaDB's times */
    int64_t last_send_us;    /* when the last request was written: later than due when behind */
    int64_t max_send_wait_us; /* the longest a due request waited for a free connection */
    int64_t last_answer_us;
    int64_t errors;
    int64_t reconnects;
    uint64_t by_status[OPENLOOP_MAX_STATUS];
    struct event *tick;
    struct event *start;
    struct event *sigterm;
    struct event *sigint;
    int64_t start_deadline_us;
    bool draining;
    int64_t drain_deadline_us;
};

static int64_t openloop_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void openloop_connect(struct openloop_conn *c);

static uint64_t openloop_random(struct openloop *ol)
{
    /* xorshift64*: a reproducible sequence per activity, no libc state shared */
    ol->rng ^= ol->rng >> 12;
    ol->rng ^= ol->rng << 25;
    ol->rng ^= ol->rng >> 27;
    return ol->rng * 2685821657736338717ULL;
}

static void openloop_pick_user(struct openloop *ol, int64_t index)
{
    ol->repeat[index] = false;
    if (ol->repeat_share > 0 && ol->answered_users_n > 0 &&
        (double)(openloop_random(ol) >> 11) / 9007199254740992.0 < ol->repeat_share) {
        int64_t k = (int64_t)(openloop_random(ol) % (uint64_t)ol->answered_users_n);
        ol->user[index] = ol->answered_users[k];
        ol->answered_users[k] = ol->answered_users[--ol->answered_users_n];
        ol->repeat[index] = true;
        return;
    }
    ol->user[index] = ol->first_user + ol->next_user++;
}

static double openloop_seconds(int64_t us)
{
    return (double)us / 1e6;
}

static void openloop_log_error(struct openloop *ol, int64_t index, int64_t sent_us, const char *kind)
{
    if (!ol->log)
        return;
    printf("E\t%" PRId64 "\t%d\t%.6f\t%.6f\t%s\n", ol->user[index], ol->repeat[index] ? 1 : 0,
           openloop_seconds(sent_us), openloop_seconds(openloop_now_us()), kind);
    ol->log_dirty = true;
}

static void openloop_log_answer(struct openloop_conn *c, int64_t done_us)
{
    struct openloop *ol = c->ol;
    if (!ol->log)
        return;
    /* one line per answer whatever the body holds */
    for (size_t i = 0; i < c->body_len; i++)
        if (c->body[i] == '\n' || c->body[i] == '\r' || c->body[i] == '\t')
            c->body[i] = ' ';
    printf("A\t%" PRId64 "\t%d\t%.6f\t%.6f\t%d\t%s\t%.*s\n", ol->user[c->index], ol->repeat[c->index] ? 1 : 0,
           openloop_seconds(c->sent_us), openloop_seconds(done_us), c->status,
           c->content_type[0] ? c->content_type : "-", (int)c->body_len, c->body);
    ol->log_dirty = true;
}

static void openloop_send(struct openloop_conn *c, int64_t index)
{
    struct openloop *ol = c->ol;
    openloop_pick_user(ol, index);
    int64_t user = ol->user[index];
    char head[512];
    int n;
    if (ol->xff) {
        int64_t ip = user / 64;
        n = snprintf(head, sizeof(head),
                     "POST /seckill/execute?userId=%" PRId64 "&activityId=%" PRId64 " HTTP/1.1\r\n"
                     "Host: seckill\r\nX-Forwarded-For: 10.%d.%d.%d\r\nContent-Length: 0\r\n\r\n",
                     user, ol->activity, (int)((ip >> 16) & 255), (int)((ip >> 8) & 255), (int)(ip & 255));
    } else {
        n = snprintf(head, sizeof(head),
                     "POST /seckill/execute?userId=%" PRId64 "&activityId=%" PRId64 " HTTP/1.1\r\n"
                     "Host: seckill\r\nContent-Length: 0\r\n\r\n",
                     user, ol->activity);
    }
    int64_t now = openloop_now_us();
    if (now - ol->due_us[index] > ol->max_send_wait_us)
        ol->max_send_wait_us = now - ol->due_us[index];
    ol->last_send_us = now;
    c->busy = true;
    c->index = index;
    c->status = 0;
    c->body_left = -1;
    c->sent_us = now;
    c->content_type[0] = '\0';
    c->body_len = 0;
    bufferevent_write(c->bev, head, (size_t)n);
}

/* Hands due requests to free connections, oldest first. */
static void openloop_dispatch(struct openloop *ol)
{
    int64_t now = ol->skip_us ? openloop_now_us() : 0;
    for (int i = 0; i < ol->conns_max && ol->next_send < ol->next_due; i++) {
        struct openloop_conn *c = &ol->conns[i];
        if (!c->connected || c->busy)
            continue;
        while (ol->skip_us && ol->next_send < ol->next_due && now - ol->due_us[ol->next_send] > ol->skip_us) {
            ol->next_send++;
            ol->skipped++;
        }
        if (ol->next_send < ol->next_due)
            openloop_send(c, ol->next_send++);
    }
}

static void openloop_finish(struct openloop_conn *c)
{
    struct openloop *ol = c->ol;
    int64_t now = openloop_now_us();
    if (c->status > 0 && c->status < OPENLOOP_MAX_STATUS)
        ol->by_status[c->status]++;
    int64_t latency = now - ol->due_us[c->index];
    ol->latency_us[ol->answered++] = latency > INT32_MAX ? INT32_MAX : (int32_t)latency;
    ol->last_answer_us = now;
    openloop_log_answer(c, now);
    if (!ol->repeat[c->index])
        ol->answered_users[ol->answered_users_n++] = ol->user[c->index];
    c->busy = false;
}

/* A request that got no answer on a connection that broke: counted as an error; the
 * schedule never resends it (a real client would not either). */
static void openloop_drop(struct openloop_conn *c, const char *kind)
{
    if (c->busy) {
        c->ol->errors++;
        openloop_log_error(c->ol, c->index, c->sent_us, kind);
        c->busy = false;
    }
    if (c->bev)
        bufferevent_free(c->bev);
    c->bev = NULL;
    c->connected = false;
}

static int openloop_parse_head(struct openloop_conn *c, struct evbuffer *in)
{
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        return 0;
    size_t head_len = (size_t)end.pos + 4;
    char *head = malloc(head_len + 1);
    if (!head)
        return -1;
    evbuffer_remove(in, head, head_len);
    head[head_len] = '\0';
    int status = 0;
    if (sscanf(head, "HTTP/1.%*d %d", &status) != 1) {
        free(head);
        return -1;
    }
    int64_t length = 0;
    for (char *line = strstr(head, "\r\n"); line; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0)
            length = strtoll(line + 17, NULL, 10);
        else if (strncasecmp(line + 2, "Content-Type:", 13) == 0) {
            const char *v = line + 15;
            while (*v == ' ')
                v++;
            size_t n = strcspn(v, "\r");
            if (n >= sizeof(c->content_type))
                n = sizeof(c->content_type) - 1;
            memcpy(c->content_type, v, n);
            c->content_type[n] = '\0';
        }
    }
    free(head);
    c->status = status;
    c->body_left = length;
    return 1;
}

static void openloop_on_read(struct bufferevent *bev, void *arg)
{
    struct openloop_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (c->busy) {
        if (c->body_left < 0) {
            int rc = openloop_parse_head(c, in);
            if (rc < 0) {
                openloop_drop(c, "dropped");
                openloop_connect(c);
                return;
            }
            if (rc == 0)
                return;
        }
        size_t have = evbuffer_get_length(in);
        size_t take = have < (size_t)c->body_left ? have : (size_t)c->body_left;
        if (c->ol->log && c->body_len < sizeof(c->body)) {
            size_t room = sizeof(c->body) - c->body_len;
            size_t keep = take < room ? take : room;
            evbuffer_copyout(in, c->body + c->body_len, keep);
            c->body_len += keep;
        }
        evbuffer_drain(in, take);
        c->body_left -= (int64_t)take;
        if (c->body_left > 0)
            return;
        openloop_finish(c);
        openloop_dispatch(c->ol);
    }
}

static void openloop_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct openloop_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        c->connected = true;
        int one = 1;
        setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        openloop_dispatch(c->ol);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        struct openloop *ol = c->ol;
        bool never_connected = !c->connected;
        openloop_drop(c, "dropped");
        if (ol->draining)
            return;
        ol->reconnects++;
        if (!never_connected) {
            openloop_connect(c);
            return;
        }
        /* Nobody listens: the oldest waiting request was tried and refused, and the
         * next try waits, so a dead server is not hammered in a loop. */
        if (ol->next_send < ol->next_due) {
            int64_t index = ol->next_send++;
            openloop_pick_user(ol, index);
            ol->refused++;
            ol->errors++;
            openloop_log_error(ol, index, openloop_now_us(), "refused");
        }
        struct timeval tv = { 0, OPENLOOP_RECONNECT_US };
        evtimer_add(c->retry, &tv);
    }
}

static void openloop_on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct openloop_conn *c = arg;
    if (!c->ol->draining && !c->bev)
        openloop_connect(c);
}

/* Requests in flight longer than the client timeout end as timeouts; their connections
 * are closed and opened again, as a client that gives up would do. */
static void openloop_check_timeouts(struct openloop *ol, int64_t now)
{
    if (!ol->timeout_us || now - ol->last_timeout_check_us < 10000)
        return;
    ol->last_timeout_check_us = now;
    for (int i = 0; i < ol->conns_max; i++) {
        struct openloop_conn *c = &ol->conns[i];
        if (c->busy && now - c->sent_us > ol->timeout_us) {
            ol->timeouts++;
            openloop_drop(c, "timeout");
            if (!ol->draining)
                openloop_connect(c);
        }
    }
}

static void openloop_connect(struct openloop_conn *c)
{
    struct openloop *ol = c->ol;
    c->bev = bufferevent_socket_new(ol->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev)
        return;
    bufferevent_setcb(c->bev, openloop_on_read, NULL, openloop_on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&ol->addr, sizeof(ol->addr)) < 0) {
        bufferevent_free(c->bev);
        c->bev = NULL;
        ol->errors++;
        struct timeval tv = { 0, OPENLOOP_RECONNECT_US };
        evtimer_add(c->retry, &tv);
    }
}

static bool openloop_idle(const struct openloop *ol)
{
    for (int i = 0; i < ol->conns_max; i++)
        if (ol->conns[i].busy)
            return false;
    return ol->next_send >= ol->count;
}

/* SIGTERM, SIGINT: no request is due after now; what is in flight is awaited. */
static void openloop_on_signal(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct openloop *ol = arg;
    if (ol->next_due < ol->count)
        ol->count = ol->next_due;
    if (ol->next_send > ol->count)
        ol->next_send = ol->count;
    if (!ol->start_us) {
        ol->start_us = openloop_now_us();
        struct timeval zero = { 0, 0 };
        evtimer_add(ol->tick, &zero);
    }
}

/* Every tick (100 us unless -i): the requests whose due time has come join the queue. */
static void openloop_on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct openloop *ol = arg;
    int64_t now = openloop_now_us();
    int64_t due = (int64_t)((double)(now - ol->start_us) * ol->rate / 1e6) + 1;
    if (due > ol->count)
        due = ol->count;
    for (; ol->next_due < due; ol->next_due++)
        ol->due_us[ol->next_due] = ol->start_us + (int64_t)((double)ol->next_due * 1e6 / ol->rate);
    openloop_dispatch(ol);
    openloop_check_timeouts(ol, now);
    if (ol->log_dirty) {
        fflush(stdout);
        ol->log_dirty = false;
    }
    if (ol->next_due == ol->count && !ol->draining) {
        ol->draining = true;
        ol->drain_deadline_us = now + (int64_t)(ol->drain_seconds * 1e6);
    }
    if (ol->draining && (openloop_idle(ol) || now >= ol->drain_deadline_us)) {
        for (int i = 0; i < ol->conns_max; i++)
            if (ol->conns[i].busy)
                openloop_drop(&ol->conns[i], "timeout");
        event_base_loopbreak(ol->base);
        return;
    }
    struct timeval tv = { 0, ol->tick_us };
    evtimer_add(ol->tick, &tv);
}

static void openloop_on_start(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct openloop *ol = arg;
    int up = 0;
    for (int i = 0; i < ol->conns_max; i++)
        up += ol->conns[i].connected;
    int64_t now = openloop_now_us();
    if (up < ol->conns_max && now < ol->start_deadline_us) {
        struct timeval tv = { 0, 10000 };
        evtimer_add(ol->start, &tv);
        return;
    }
    ol->start_us = now;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    ol->start_wall_ms = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
    struct timeval zero = { 0, 0 };
    evtimer_add(ol->tick, &zero);
}

static int openloop_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static double openloop_pct_ms(const struct openloop *ol, double p)
{
    if (ol->answered == 0)
        return 0;
    int64_t i = (int64_t)(p * (double)(ol->answered - 1) + 0.5);
    return ol->latency_us[i] / 1000.0;
}

static void openloop_report(struct openloop *ol, int64_t end_us)
{
    qsort(ol->latency_us, (size_t)ol->answered, sizeof(ol->latency_us[0]), openloop_cmp);
    int64_t last_due = ol->count > 0 ? ol->due_us[ol->count - 1] : ol->start_us;
    double send_seconds = (double)(last_due - ol->start_us) / 1e6;
    int64_t unanswered = ol->count - ol->answered - ol->errors - ol->skipped;
    printf("{\"due\":%" PRId64 ",\"sent\":%" PRId64 ",\"answered\":%" PRId64 ",\"unanswered\":%" PRId64
           ",\"socket_errors\":%" PRId64 ",\"reconnects\":%" PRId64 ",\"target_rate\":%.0f,"
           "\"send_seconds\":%.3f", ol->next_due, ol->next_send - ol->skipped - ol->refused, ol->answered,
           unanswered < 0 ? 0 : unanswered, ol->errors, ol->reconnects, ol->rate, send_seconds);
    printf(",\"skipped\":%" PRId64 ",\"refused\":%" PRId64 ",\"timeouts\":%" PRId64, ol->skipped, ol->refused,
           ol->timeouts);
    printf(",\"status\":{");
    bool first = true;
    for (int s = 0; s < OPENLOOP_MAX_STATUS; s++) {
        if (!ol->by_status[s])
            continue;
        printf("%s\"%d\":%" PRIu64, first ? "" : ",", s, ol->by_status[s]);
        first = false;
    }
    printf("},\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}",
           openloop_pct_ms(ol, 0.50), openloop_pct_ms(ol, 0.90), openloop_pct_ms(ol, 0.99),
           openloop_pct_ms(ol, 0.999), openloop_pct_ms(ol, 1.0));
    printf(",\"start_unix_ms\":%" PRId64 ",\"last_sent_s\":%.3f,\"max_send_wait_ms\":%.3f", ol->start_wall_ms,
           ol->last_send_us ? (double)(ol->last_send_us - ol->start_us) / 1e6 : 0.0,
           (double)ol->max_send_wait_us / 1000.0);
    printf(",\"first_due_to_last_answer_s\":%.3f,\"wall_s\":%.3f}\n",
           ol->last_answer_us ? (double)(ol->last_answer_us - ol->start_us) / 1e6 : 0.0,
           (double)(end_us - ol->start_us) / 1e6);
}

static void openloop_usage(void)
{
    fprintf(stderr, "usage: openloop -p PORT -a ACTIVITY -r RATE (-d SECONDS | -n COUNT) [-h HOST] "
                    "[-c CONNS] [-u FIRST_USER] [-x] [-t DRAIN_SECONDS] [-l] [-R SHARE] [-k SKIP_MS] "
                    "[-T TIMEOUT_S] [-i TICK_US]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct openloop ol;
    memset(&ol, 0, sizeof(ol));
    const char *host = "127.0.0.1";
    int port = 0;
    double seconds = 0;
    ol.conns_max = 512;
    ol.first_user = 1;
    ol.drain_seconds = 30;
    ol.tick_us = 100;
    int opt;
    while ((opt = getopt(argc, argv, "h:p:a:r:d:n:c:u:xt:lR:k:T:i:")) != -1) {
        switch (opt) {
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'a': ol.activity = strtoll(optarg, NULL, 10); break;
        case 'r': ol.rate = strtod(optarg, NULL); break;
        case 'd': seconds = strtod(optarg, NULL); break;
        case 'n': ol.count = strtoll(optarg, NULL, 10); break;
        case 'c': ol.conns_max = atoi(optarg); break;
        case 'u': ol.first_user = strtoll(optarg, NULL, 10); break;
        case 'x': ol.xff = true; break;
        case 't': ol.drain_seconds = strtod(optarg, NULL); break;
        case 'l': ol.log = true; break;
        case 'R': ol.repeat_share = strtod(optarg, NULL); break;
        case 'k': ol.skip_us = (int64_t)(strtod(optarg, NULL) * 1000); break;
        case 'i': ol.tick_us = atoi(optarg); break;
        case 'T': ol.timeout_us = (int64_t)(strtod(optarg, NULL) * 1e6); break;
        default: openloop_usage();
        }
    }
    if (port <= 0 || port > 65535 || ol.activity <= 0 || ol.rate <= 0 || ol.conns_max <= 0 ||
        (seconds <= 0 && ol.count <= 0) || ol.repeat_share < 0 || ol.repeat_share >= 1 || ol.skip_us < 0 ||
        ol.timeout_us < 0 || ol.tick_us < 1 || ol.tick_us > 999999)
        openloop_usage();
    if (ol.count <= 0)
        ol.count = (int64_t)(seconds * ol.rate);
    ol.addr.sin_family = AF_INET;
    ol.addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &ol.addr.sin_addr) != 1) {
        fprintf(stderr, "openloop: %s is not an IPv4 address\n", host);
        return 2;
    }
    struct rlimit rl = { (rlim_t)ol.conns_max + 64, (rlim_t)ol.conns_max + 64 };
    setrlimit(RLIMIT_NOFILE, &rl);

    /* Precise timers (timerfd): the schedule's tick is 100 us, under epoll's 1 ms. */
    struct event_config *ecfg = event_config_new();
    if (ecfg)
        event_config_set_flag(ecfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    ol.base = ecfg ? event_base_new_with_config(ecfg) : NULL;
    if (ecfg)
        event_config_free(ecfg);
    ol.conns = calloc((size_t)ol.conns_max, sizeof(*ol.conns));
    ol.due_us = calloc((size_t)ol.count, sizeof(*ol.due_us));
    ol.latency_us = calloc((size_t)ol.count, sizeof(*ol.latency_us));
    ol.user = calloc((size_t)ol.count, sizeof(*ol.user));
    ol.repeat = calloc((size_t)ol.count, sizeof(*ol.repeat));
    ol.answered_users = calloc((size_t)ol.count, sizeof(*ol.answered_users));
    ol.rng = (uint64_t)ol.activity * 0x9E3779B97F4A7C15ULL | 1;
    ol.sigterm = evsignal_new(ol.base, SIGTERM, openloop_on_signal, &ol);
    ol.sigint = evsignal_new(ol.base, SIGINT, openloop_on_signal, &ol);
    ol.tick = evtimer_new(ol.base, openloop_on_tick, &ol);
    ol.start = evtimer_new(ol.base, openloop_on_start, &ol);
    if (!ol.base || !ol.conns || !ol.due_us || !ol.latency_us || !ol.user || !ol.repeat ||
        !ol.answered_users || !ol.tick || !ol.start || !ol.sigterm || !ol.sigint ||
        event_add(ol.sigterm, NULL) || event_add(ol.sigint, NULL)) {
        fprintf(stderr, "openloop: out of memory\n");
        return 1;
    }
    for (int i = 0; i < ol.conns_max; i++) {
        ol.conns[i].ol = &ol;
        ol.conns[i].retry = evtimer_new(ol.base, openloop_on_retry, &ol.conns[i]);
        if (!ol.conns[i].retry) {
            fprintf(stderr, "openloop: out of memory\n");
            return 1;
        }
        openloop_connect(&ol.conns[i]);
    }
    /* The schedule starts once every connection is open (or after 2 s): a connect storm
     * is not part of what is measured. */
    ol.start_deadline_us = openloop_now_us() + 2000000;
    struct timeval zero = { 0, 0 };
    evtimer_add(ol.start, &zero);
    event_base_dispatch(ol.base);
    int64_t end_us = openloop_now_us();
    openloop_report(&ol, end_us);

    ol.draining = true;
    for (int i = 0; i < ol.conns_max; i++) {
        if (ol.conns[i].bev)
            bufferevent_free(ol.conns[i].bev);
        event_free(ol.conns[i].retry);
    }
    event_free(ol.tick);
    event_free(ol.start);
    event_free(ol.sigterm);
    event_free(ol.sigint);
    event_base_free(ol.base);
    free(ol.conns);
    free(ol.due_us);
    free(ol.latency_us);
    free(ol.user);
    free(ol.repeat);
    free(ol.answered_users);
    return 0;
}
