#include "gateway/pending.h"

#include <event2/http.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/reply.h"

/* Every request shares one timeout, so the order of starts is the order of deadlines:
 * the live list is a queue whose head is the next to expire, and one timer is set for the
 * head's deadline (none while nothing waits: an idle gateway does not wake for it).
 * Entries handed to their expire hook move to `overdue`, where only shutdown looks. */
struct pending_set {
    struct pending live;      /* sentinel; oldest first */
    struct pending overdue;   /* sentinel */
    struct event *timer;
    pending_answer_fn answer;
    const char *name;
    int64_t timeout_us;
    size_t count;
    uint64_t timeouts;
    bool closed;
};

static void default_answer(struct evhttp_request *req, const char *message, bool closing)
{
    if (closing)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    reply_error(req, REPLY_UNAVAILABLE, message, 1, NULL, NULL);
}

static void list_init(struct pending *head) { head->prev = head->next = head; }

static void list_append(struct pending *head, struct pending *p)
{
    p->prev = head->prev;
    p->next = head;
    head->prev->next = p;
    head->prev = p;
    p->linked = true;
}

static void list_remove(struct pending *p)
{
    p->prev->next = p->next;
    p->next->prev = p->prev;
    p->prev = p->next = NULL;
    p->linked = false;
}

static void answer(struct pending_set *s, struct pending *p, const char *message, bool closing)
{
    struct evhttp_request *req = *p->http;
    *p->http = NULL;
    s->answer(req, message, closing);
}

size_t pending_expire_due(struct pending_set *s, int64_t now_us)
{
    size_t cut = 0;
    while (s->live.next != &s->live && s->live.next->deadline_us <= now_us) {
        struct pending *p = s->live.next;
        list_remove(p);
        if (!*p->http) {
            s->count--;  /* answered by its owner; only the owner's pending_end is left */
            p->set = NULL;
            continue;
        }
        cut++;
        s->timeouts++;
        list_append(&s->overdue, p);
        if (p->expire)
            p->expire(p);
        else
            answer(s, p, "request timed out, please retry", false);
    }
    return cut;
}

static void arm(struct pending_set *s)
{
    if (s->live.next == &s->live || evtimer_pending(s->timer, NULL))
        return;
    int64_t wait_us = s->live.next->deadline_us - clock_mono_us();
    struct timeval tv = { 0, 0 };
    if (wait_us > 0) {
        tv.tv_sec = (time_t)(wait_us / 1000000);
        tv.tv_usec = (suseconds_t)(wait_us % 1000000);
    }
    evtimer_add(s->timer, &tv);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct pending_set *s = arg;
    size_t cut = pending_expire_due(s, clock_mono_us());
    if (cut)
        LOG_WARN("%zu requests still waiting at %s (%lld ms)", cut, s->name,
                 (long long)(s->timeout_us / 1000));
    arm(s);
}

struct pending_set *pending_set_new(struct event_base *base, int64_t timeout_ms, const char *name,
                                    pending_answer_fn answer_fn)
{
    struct pending_set *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    list_init(&s->live);
    list_init(&s->overdue);
    s->answer = answer_fn ? answer_fn : default_answer;
    s->name = name;
    s->timeout_us = timeout_ms * 1000;
    s->timer = evtimer_new(base, on_deadline, s);
    if (!s->timer) {
        free(s);
        return NULL;
    }
    return s;
}

void pending_set_free(struct pending_set *s)
{
    if (!s)
        return;
    if (s->count)
        LOG_ERROR("%zu request contexts still open at exit", s->count);
    /* Whatever is left is not ours to free; it only must not point back here. */
    for (struct pending *head = &s->live; head; head = head == &s->live ? &s->overdue : NULL)
        while (head->next != head) {
            struct pending *p = head->next;
            list_remove(p);
            p->set = NULL;
        }
    event_free(s->timer);
    free(s);
}

void pending_start(struct pending_set *s, struct pending *p, struct evhttp_request **http,
                   pending_expire_fn expire)
{
    p->http = http;
    p->expire = expire;
    p->linked = false;
    p->set = NULL;
    if (s->closed) {
        answer(s, p, "shutting down", true);
        return;
    }
    p->set = s;
    p->deadline_us = clock_mono_us() + s->timeout_us;
    s->count++;
    list_append(&s->live, p);
    arm(s);
}

void pending_end(struct pending *p)
{
    if (!p->set)
        return;
    if (p->linked)
        list_remove(p);
    p->set->count--;
    p->set = NULL;
}

size_t pending_close(struct pending_set *s)
{
    size_t n = 0;
    s->closed = true;
    for (struct pending *head = &s->live; head; head = head == &s->live ? &s->overdue : NULL)
        for (struct pending *p = head->next; p != head; p = p->next)
            if (*p->http) {
                answer(s, p, "shutting down", true);
                n++;
            }
    return n;
}

size_t pending_count(const struct pending_set *s) { return s->count; }

uint64_t pending_timeouts(const struct pending_set *s) { return s->timeouts; }
