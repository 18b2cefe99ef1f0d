#ifndef SK_UNITLOOP_H
#define SK_UNITLOOP_H

/* The event loop of the unit tests that drive real libevent code (redisconn, executebatch,
 * delivery): run it until a condition holds, or give up after a bound so that a test that
 * waits for what never comes fails instead of hanging. Header-only, like fakeredis.h. */

#include <event2/event.h>
#include <stdbool.h>

static void unitloop_give_up(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bool *timed_out = arg;
    *timed_out = true;
}

/* Runs base until done(arg) or seconds pass; returns done(arg). */
static inline bool unitloop_run_until(struct event_base *base, bool (*done)(void *), void *arg, int seconds)
{
    bool timed_out = false;
    struct event *t = evtimer_new(base, unitloop_give_up, &timed_out);
    struct timeval tv = { seconds, 0 };
    evtimer_add(t, &tv);
    while (!done(arg) && !timed_out)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
    return done(arg);
}

/* Runs base for ms: time for a late or second callback to show. */
static inline void unitloop_run_for(struct event_base *base, int ms)
{
    bool over = false;
    struct event *t = evtimer_new(base, unitloop_give_up, &over);
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(t, &tv);
    while (!over)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(t);
}

#endif
