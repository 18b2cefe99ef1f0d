/* bench/delayproxy: a transparent TCP proxy that holds every byte back a fixed one-way time.
 *
 * The kernel here has no netem queueing discipline, so the latency benchmark
 * (bench/latency.py) makes a slow link out of this proxy: inside a gateway's network
 * namespace an nftables `redirect` (test/lib/netfault.py, Redirect) sends each new TCP
 * connection to Redis and Kafka here; the proxy asks the kernel where it was headed
 * (SO_ORIGINAL_DST), connects there itself with SO_MARK set (the rule lets marked
 * connections pass) and forwards both ways. Each chunk it reads is written to the other
 * side ONE_WAY_US microseconds after it was read, in order, so a request and its answer
 * gain 2 x ONE_WAY_US, as over a link with that one-way latency. A chunk waits for its own
 * time only, never behind a slower one: throughput is not capped by the delay (a link's
 * bandwidth-delay product is queued, up to QUEUE_MAX bytes a direction; beyond that the
 * proxy stops reading from the sender until the queue is below it again).
 *
 *   delayproxy --one-way-us US [--port PORT] [--listen ADDR] [--mark MARK]
 *              [--target HOST:PORT] [--queue-max BYTES] [--exit-on-stdin-eof]
 *
 *   --one-way-us       the delay of each direction, microseconds (0: none, forwarded at once)
 *   --port, --listen   where it listens (default 127.0.0.1, port 0: one the kernel picks)
 *   --mark             SO_MARK of its upstream connections (needs CAP_NET_ADMIN)
 *   --target           every connection goes there instead (a plain forwarding proxy, for
 *                      tests without the redirect); without it a connection that was not
 *                      redirected has no original destination and is closed
 *   --queue-max        bytes queued a direction before reading from its sender pauses (4 MiB)
 *   --exit-on-stdin-eof  exit when stdin closes, so that a proxy dies with the process
 *                      that started it on a pipe
 *
 * Prints "listening PORT" on stdout once it accepts. One thread, epoll, non-blocking
 * sockets; the chunks due next are found by one timerfd (a chunk's due time is its read
 * time + the delay, so the chunks of all connections fall due in the order they were read
 * and one FIFO of wake-ups holds them sorted). A side that closes is half-closed on the
 * other once what it sent was delivered; the connection closes when both directions are
 * done, or at once with a reset passed on when either side fails. The connect itself is
 * not delayed: the clients it is for keep their connections. SIGTERM or SIGINT ends it;
 * it then prints to stderr the connections, bytes and chunks it forwarded and how late
 * chunks were released after their due time (the proxy's own lag under load).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h, whose includes clash with netinet/in.h */
#endif

#define DP_READ_MAX 65536
#define DP_IOV_MAX 64
#define DP_EVENTS 256

struct dp_chunk {
    struct dp_chunk *next;
    uint64_t due_ns;
    size_t len, off;
    bool late_counted;
    char data[];
};

/* What was read from one side, waiting to be written to the other. */
struct dp_dir {
    struct dp_chunk *head, *tail;
    size_t queued;
    bool eof;       /* its sender closed */
    bool shut;      /* and everything it sent was delivered: the receiver was half-closed */
};

struct dp_conn;

/* One socket of a connection: 0 the client's, 1 the upstream one. epoll's pointer. */
struct dp_side {
    struct dp_conn *conn;
    int fd;
    int idx;
    bool paused;       /* reading stops: the other way's queue is over QUEUE_MAX */
    bool wblocked;     /* a write to it would block: EPOLLOUT wanted */
    bool registered;
    uint32_t events;
};

struct dp_conn {
    struct dp_side side[2];
    struct dp_dir dir[2];   /* dir[i]: read from side i, written to side 1 - i */
    uint32_t gen;           /* bumped at close: stale wake-ups of a reused slot are ignored */
    bool connecting;
    bool open;
    struct dp_conn *free_next;
    struct dp_conn *all_next;   /* every one allocated, for the clean exit */
};

/* A wake-up: dir `dir` of `conn` has a chunk due at `due_ns`. */
struct dp_due {
    struct dp_conn *conn;
    uint32_t gen;
    int dir;
    uint64_t due_ns;
};

enum { DP_TAG_LISTENER = 1, DP_TAG_TIMER, DP_TAG_SIGNAL, DP_TAG_STDIN };

struct dp {
    uint64_t delay_ns;
    size_t queue_max;
    int mark;            /* -1: none */
    bool have_target;
    struct sockaddr_in target;
    struct sockaddr_in self;
    int epfd, listen_fd, timer_fd, signal_fd;
    int tags[5];         /* epoll pointers of the fds that are not connections */
    struct dp_due *fifo;
    size_t fifo_cap, fifo_head, fifo_len;
    uint64_t armed_ns;   /* 0: timer not armed */
    struct dp_conn *free_conns, *closed_conns, *all_conns;
    bool stop;
    /* what it did, for the summary at exit */
    uint64_t accepted, refused, bytes[2], chunks[2], late_sum_ns, late_max_ns, late_n;
    size_t max_queued[2];
};

static uint64_t dp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void dp_die(const char *what)
{
    fprintf(stderr, "delayproxy: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *dp_alloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "delayproxy: out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- the side's epoll interest -------------------------------------------------------- */

/* A side is done when its sender closed and its receiver was half-closed: nothing more can
 * pass through it. */
static bool dp_side_done(const struct dp_conn *c, int i)
{
    return c->dir[i].eof && c->dir[1 - i].shut;
}

/* A side is watched only while it is read or waited on for a write: EPOLLHUP comes whether
 * asked for or not, and a side whose reading paused would be woken by it again and again. */
static void dp_side_update(struct dp *dp, struct dp_conn *c, int i)
{
    struct dp_side *s = &c->side[i];
    uint32_t want = 0;
    if (!c->dir[i].eof && !s->paused && !(i == 1 && c->connecting))
        want |= EPOLLIN;
    if (s->wblocked || (i == 1 && c->connecting))
        want |= EPOLLOUT;
    if (want == 0 || dp_side_done(c, i)) {
        if (s->registered) {
            epoll_ctl(dp->epfd, EPOLL_CTL_DEL, s->fd, NULL);
            s->registered = false;
        }
        return;
    }
    if (s->registered && want == s->events)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = s};
    if (epoll_ctl(dp->epfd, s->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &ev) != 0)
        dp_die("epoll_ctl");
    s->registered = true;
    s->events = want;
}

/* ---- connections ---------------------------------------------------------------------- */

static void dp_conn_close(struct dp *dp, struct dp_conn *c, bool reset)
{
    for (int i = 0; i < 2; i++) {
        struct dp_side *s = &c->side[i];
        if (s->fd >= 0) {
            if (reset) {
                /* A failure on one side reaches the other as one: a reset, not a clean end. */
                struct linger lg = {.l_onoff = 1, .l_linger = 0};
                setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            }
            close(s->fd);
            s->fd = -1;
        }
        struct dp_chunk *ch = c->dir[i].head;
        while (ch != NULL) {
            struct dp_chunk *next = ch->next;
            free(ch);
            ch = next;
        }
        c->dir[i].head = c->dir[i].tail = NULL;
    }
    c->open = false;
    c->gen++;
    /* Reused only after the current batch of events: one of them may still name it. */
    c->free_next = dp->closed_conns;
    dp->closed_conns = c;
}

static void dp_maybe_close(struct dp *dp, struct dp_conn *c)
{
    if (c->open && dp_side_done(c, 0) && dp_side_done(c, 1))
        dp_conn_close(dp, c, false);
}

static void dp_timer_arm(struct dp *dp, uint64_t due_ns)
{
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(due_ns / 1000000000u);
    its.it_value.tv_nsec = (long)(due_ns % 1000000000u);
    if (timerfd_settime(dp->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0)
        dp_die("timerfd_settime");
    dp->armed_ns = due_ns;
}

static void dp_fifo_push(struct dp *dp, struct dp_conn *c, int dir, uint64_t due_ns)
{
    if (dp->fifo_len == dp->fifo_cap) {
        size_t cap = dp->fifo_cap ? dp->fifo_cap * 2 : 1024;
        struct dp_due *grown = dp_alloc(cap * sizeof *grown);
        for (size_t k = 0; k < dp->fifo_len; k++)
            grown[k] = dp->fifo[(dp->fifo_head + k) % dp->fifo_cap];
        free(dp->fifo);
        dp->fifo = grown;
        dp->fifo_cap = cap;
        dp->fifo_head = 0;
    }
    dp->fifo[(dp->fifo_head + dp->fifo_len) % dp->fifo_cap] =
        (struct dp_due){.conn = c, .gen = c->gen, .dir = dir, .due_ns = due_ns};
    dp->fifo_len++;
    if (dp->armed_ns == 0)
        dp_timer_arm(dp, due_ns);
}

/* Writes direction `d`'s chunks that are due to the other side, as far as it takes them. */
static void dp_flush(struct dp *dp, struct dp_conn *c, int d)
{
    struct dp_dir *dir = &c->dir[d];
    struct dp_side *to = &c->side[1 - d];
    if (c->connecting || to->wblocked)
        return;
    uint64_t now = dp_now_ns();
    while (dir->head != NULL && dir->head->due_ns <= now) {
        struct iovec iov[DP_IOV_MAX];
        int n = 0;
        size_t asked = 0;
        for (struct dp_chunk *ch = dir->head; ch != NULL && ch->due_ns <= now && n < DP_IOV_MAX;
             ch = ch->next) {
            iov[n].iov_base = ch->data + ch->off;
            iov[n].iov_len = ch->len - ch->off;
            asked += iov[n].iov_len;
            if (!ch->late_counted) {
                uint64_t late = now - ch->due_ns;
                dp->late_sum_ns += late;
                dp->late_n++;
                if (late > dp->late_max_ns)
                    dp->late_max_ns = late;
                ch->late_counted = true;
            }
            n++;
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(to->fd, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                to->wblocked = true;
                dp_side_update(dp, c, 1 - d);
                return;
            }
            dp_conn_close(dp, c, true);
            return;
        }
        size_t left = (size_t)w;
        dp->bytes[d] += left;
        dir->queued -= left;
        while (left > 0) {
            struct dp_chunk *ch = dir->head;
            size_t part = ch->len - ch->off;
            if (left < part) {
                ch->off += left;
                break;
            }
            left -= part;
            dir->head = ch->next;
            if (dir->head == NULL)
                dir->tail = NULL;
            free(ch);
        }
        if ((size_t)w < asked) {
            /* A short write: the socket's buffer is full. */
            to->wblocked = true;
            dp_side_update(dp, c, 1 - d);
            return;
        }
    }
    struct dp_side *from = &c->side[d];
    if (from->paused && dir->queued <= dp->queue_max) {
        from->paused = false;
        dp_side_update(dp, c, d);
    }
    if (dir->eof && dir->head == NULL && !dir->shut) {
        shutdown(to->fd, SHUT_WR);
        dir->shut = true;
        dp_side_update(dp, c, 0);
        dp_side_update(dp, c, 1);
        dp_maybe_close(dp, c);
    }
}

/* Reads once from side `i` into its direction's queue. */
static void dp_read(struct dp *dp, struct dp_conn *c, int i)
{
    static char buf[DP_READ_MAX];
    struct dp_dir *dir = &c->dir[i];
    if (dir->eof)
        return;
    ssize_t n = read(c->side[i].fd, buf, sizeof buf);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        dp_conn_close(dp, c, true);
        return;
    }
    if (n == 0) {
        dir->eof = true;
        dp_side_update(dp, c, i);
        dp_flush(dp, c, i);  /* the half-close once the queue is empty */
        return;
    }
    struct dp_chunk *ch = dp_alloc(sizeof *ch + (size_t)n);
    memcpy(ch->data, buf, (size_t)n);
    ch->next = NULL;
    ch->len = (size_t)n;
    ch->off = 0;
    ch->late_counted = false;
    ch->due_ns = dp_now_ns() + dp->delay_ns;
    if (dir->tail != NULL)
        dir->tail->next = ch;
    else
        dir->head = ch;
    dir->tail = ch;
    dir->queued += (size_t)n;
    dp->chunks[i]++;
    if (dir->queued > dp->max_queued[i])
        dp->max_queued[i] = dir->queued;
    if (dir->queued > dp->queue_max) {
        c->side[i].paused = true;
        dp_side_update(dp, c, i);
    }
    if (dp->delay_ns == 0)
        dp_flush(dp, c, i);
    else
        dp_fifo_push(dp, c, i, ch->due_ns);
}

static void dp_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void dp_accept(struct dp *dp)
{
    for (;;) {
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        int fd = accept4(dp->listen_fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            if (errno == ECONNABORTED)
                continue;
            fprintf(stderr, "delayproxy: accept: %s\n", strerror(errno));
            return;
        }
        struct sockaddr_in dst = dp->target;
        if (!dp->have_target) {
            socklen_t dlen = sizeof dst;
            if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &dlen) != 0) {
                dp->refused++;
                close(fd);
                continue;
            }
            /* A connection made to the proxy itself, not redirected: forwarding it would loop. */
            if (dst.sin_addr.s_addr == dp->self.sin_addr.s_addr && dst.sin_port == dp->self.sin_port) {
                dp->refused++;
                close(fd);
                continue;
            }
        }
        int up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (up < 0) {
            fprintf(stderr, "delayproxy: socket: %s\n", strerror(errno));
            close(fd);
            continue;
        }
        if (dp->mark >= 0)
            setsockopt(up, SOL_SOCKET, SO_MARK, &dp->mark, sizeof dp->mark); /* tried at start */
        dp_nodelay(fd);
        dp_nodelay(up);
        bool connecting = false;
        if (connect(up, (struct sockaddr *)&dst, sizeof dst) != 0) {
            if (errno != EINPROGRESS) {
                dp->refused++;
                close(up);
                close(fd);
                continue;
            }
            connecting = true;
        }
        struct dp_conn *c = dp->free_conns;
        if (c != NULL) {
            dp->free_conns = c->free_next;
        } else {
            c = dp_alloc(sizeof *c);
            c->gen = 0;
            c->all_next = dp->all_conns;
            dp->all_conns = c;
        }
        uint32_t gen = c->gen;
        struct dp_conn *all_next = c->all_next;
        memset(c, 0, sizeof *c);
        c->gen = gen;
        c->all_next = all_next;
        c->open = true;
        c->connecting = connecting;
        int fds[2] = {fd, up};
        for (int i = 0; i < 2; i++) {
            c->side[i].conn = c;
            c->side[i].fd = fds[i];
            c->side[i].idx = i;
        }
        dp->accepted++;
        dp_side_update(dp, c, 0);
        dp_side_update(dp, c, 1);
    }
}

static void dp_on_side(struct dp *dp, struct dp_side *s, uint32_t events)
{
    struct dp_conn *c = s->conn;
    int i = s->idx;
    if (i == 1 && c->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
            dp->refused++;
            dp_conn_close(dp, c, true);
            return;
        }
        c->connecting = false;
        dp_side_update(dp, c, 1);
        dp_flush(dp, c, 0);
        return;
    }
    if (events & EPOLLERR) {
        dp_conn_close(dp, c, true);
        return;
    }
    if (events & EPOLLOUT) {
        s->wblocked = false;
        dp_side_update(dp, c, i);
        dp_flush(dp, c, 1 - i);
        if (!c->open)
            return;
    }
    /* EPOLLHUP: read what is left, so that the end is seen. Seen again after the end, the
     * socket can no longer take what is still queued for it (a reset): nothing is left to do. */
    if ((events & EPOLLHUP) && c->dir[i].eof) {
        dp_conn_close(dp, c, true);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP))
        dp_read(dp, c, i);
}

static void dp_on_timer(struct dp *dp)
{
    uint64_t expirations;
    if (read(dp->timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        dp_die("read timerfd");
    dp->armed_ns = 0;
    uint64_t now = dp_now_ns();
    while (dp->fifo_len > 0) {
        struct dp_due *due = &dp->fifo[dp->fifo_head];
        if (due->due_ns > now) {
            dp_timer_arm(dp, due->due_ns);
            return;
        }
        struct dp_due e = *due;
        dp->fifo_head = (dp->fifo_head + 1) % dp->fifo_cap;
        dp->fifo_len--;
        if (e.conn->open && e.conn->gen == e.gen)
            dp_flush(dp, e.conn, e.dir);
    }
}

static bool dp_parse_addr(const char *text, struct sockaddr_in *out)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    if (colon == NULL || (size_t)(colon - text) >= sizeof host)
        return false;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535)
        return false;
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &out->sin_addr) == 1;
}

static void dp_usage(void)
{
    fprintf(stderr, "usage: delayproxy --one-way-us US [--port PORT] [--listen ADDR] [--mark MARK]\n"
                    "                  [--target HOST:PORT] [--queue-max BYTES] [--exit-on-stdin-eof]\n");
    exit(2);
}

static long long dp_number(const char *text, long long min, long long max)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 0);
    if (errno != 0 || *end != '\0' || end == text || v < min || v > max)
        dp_usage();
    return v;
}

static void dp_watch(struct dp *dp, int fd, int tag)
{
    dp->tags[tag] = tag;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &dp->tags[tag]};
    if (epoll_ctl(dp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        dp_die("epoll_ctl");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"one-way-us", required_argument, NULL, 'd'}, {"port", required_argument, NULL, 'p'},
        {"listen", required_argument, NULL, 'l'},     {"mark", required_argument, NULL, 'm'},
        {"target", required_argument, NULL, 't'},     {"queue-max", required_argument, NULL, 'q'},
        {"exit-on-stdin-eof", no_argument, NULL, 's'}, {NULL, 0, NULL, 0},
    };
    struct dp dp = {.mark = -1, .queue_max = 4u << 20};
    long long delay_us = -1, port = 0;
    const char *listen_host = "127.0.0.1";
    bool stdin_eof = false;
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'd': delay_us = dp_number(optarg, 0, 60000000); break;
        case 'p': port = dp_number(optarg, 0, 65535); break;
        case 'l': listen_host = optarg; break;
        case 'm': dp.mark = (int)dp_number(optarg, 0, INT32_MAX); break;
        case 'q': dp.queue_max = (size_t)dp_number(optarg, 1, 1LL << 34); break;
        case 's': stdin_eof = true; break;
        case 't':
            if (!dp_parse_addr(optarg, &dp.target))
                dp_usage();
            dp.have_target = true;
            break;
        default: dp_usage();
        }
    }
    if (delay_us < 0 || optind != argc)
        dp_usage();
    dp.delay_ns = (uint64_t)delay_us * 1000u;

    /* The kernel's default timer slack (50 us) would be a fifth of a 250 us delay. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0)
        dp_die("sigprocmask");

    dp.epfd = epoll_create1(EPOLL_CLOEXEC);
    dp.signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    dp.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    dp.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (dp.epfd < 0 || dp.signal_fd < 0 || dp.timer_fd < 0 || dp.listen_fd < 0)
        dp_die("setting up");
    /* Without the mark its own connections would be redirected to it again: fail now, not
     * at the first connection. */
    if (dp.mark >= 0) {
        int probe = socket(AF_INET, SOCK_STREAM, 0);
        if (probe < 0 || setsockopt(probe, SOL_SOCKET, SO_MARK, &dp.mark, sizeof dp.mark) != 0)
            dp_die("setsockopt SO_MARK (needs CAP_NET_ADMIN)");
        close(probe);
    }
    int one = 1;
    setsockopt(dp.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    dp.self.sin_family = AF_INET;
    dp.self.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, listen_host, &dp.self.sin_addr) != 1)
        dp_usage();
    if (bind(dp.listen_fd, (struct sockaddr *)&dp.self, sizeof dp.self) != 0)
        dp_die("bind");
    if (listen(dp.listen_fd, 4096) != 0)
        dp_die("listen");
    socklen_t slen = sizeof dp.self;
    getsockname(dp.listen_fd, (struct sockaddr *)&dp.self, &slen);
    dp_watch(&dp, dp.listen_fd, DP_TAG_LISTENER);
    dp_watch(&dp, dp.timer_fd, DP_TAG_TIMER);
    dp_watch(&dp, dp.signal_fd, DP_TAG_SIGNAL);
    if (stdin_eof)
        dp_watch(&dp, STDIN_FILENO, DP_TAG_STDIN);
    printf("listening %u\n", ntohs(dp.self.sin_port));
    fflush(stdout);

    struct epoll_event events[DP_EVENTS];
    while (!dp.stop) {
        int n = epoll_wait(dp.epfd, events, DP_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            dp_die("epoll_wait");
        }
        for (int k = 0; k < n; k++) {
            int *tag = events[k].data.ptr;
            if (tag == &dp.tags[DP_TAG_LISTENER]) {
                dp_accept(&dp);
            } else if (tag == &dp.tags[DP_TAG_TIMER]) {
                dp_on_timer(&dp);
            } else if (tag == &dp.tags[DP_TAG_SIGNAL]) {
                dp.stop = true;
            } else if (tag == &dp.tags[DP_TAG_STDIN]) {
                char buf[256];
                ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
                    dp.stop = true;
            } else {
                struct dp_side *s = events[k].data.ptr;
                /* An earlier event of this batch may have closed its connection. */
                if (s->conn->open && s->fd >= 0)
                    dp_on_side(&dp, s, events[k].events);
            }
        }
        while (dp.closed_conns != NULL) {
            struct dp_conn *c = dp.closed_conns;
            dp.closed_conns = c->free_next;
            c->free_next = dp.free_conns;
            dp.free_conns = c;
        }
    }
    fprintf(stderr,
            "delayproxy: one-way %" PRIu64 " us: %" PRIu64 " connections (%" PRIu64 " refused or failed), "
            "%" PRIu64 " bytes in %" PRIu64 " chunks client->upstream, %" PRIu64 " bytes in %" PRIu64
            " chunks upstream->client, most queued %zu / %zu bytes, released %.1f us late on average "
            "(most %.1f us)\n",
            dp.delay_ns / 1000u, dp.accepted, dp.refused, dp.bytes[0], dp.chunks[0], dp.bytes[1],
            dp.chunks[1], dp.max_queued[0], dp.max_queued[1],
            dp.late_n ? (double)dp.late_sum_ns / (double)dp.late_n / 1e3 : 0.0, (double)dp.late_max_ns / 1e3);
    while (dp.all_conns != NULL) {
        struct dp_conn *c = dp.all_conns;
        dp.all_conns = c->all_next;
        if (c->open)
            dp_conn_close(&dp, c, false);
        free(c);
    }
    free(dp.fifo);
    return 0;
}
