#ifndef SK_PENDING_H
#define SK_PENDING_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The lifetime of a client's request while the gateway waits on Redis or Kafka for it:
 * http.request-timeout-ms, and shutdown.
 *
 * A request context embeds a struct pending and starts it with the address of its own
 * request field (`struct evhttp_request **http`). That field is the one truth about the
 * client: set while the client waits, NULL once it was answered. The owner answers as
 * before and sets the field to NULL; the set answers in two cases and then sets it to
 * NULL itself:
 *
 * - the deadline (start + http.request-timeout-ms): 503 UNAVAILABLE with Retry-After,
 *   unless the owner gave an `expire` hook: then the hook decides (it may answer now or
 *   later; the entry stays tracked for shutdown);
 * - pending_close (shutdown, after the drain): 503 "shutting down" with
 *   `Connection: close` for every request still waiting, and at once for any started
 *   after.
 *
 * Either way the owner's callbacks still run exactly once, as they did; finding the field
 * NULL they only release what they own (reply.h sends nothing to a NULL request). The
 * owner calls pending_end before it frees the context. Nothing here frees a context. */

struct pending;
typedef void (*pending_expire_fn)(struct pending *p);
/* Sends the set's 503 (the default, reply.h's); a unit test passes its own. */
typedef void (*pending_answer_fn)(struct evhttp_request *req, const char *message, bool closing);

struct pending {
    struct pending *prev, *next;  /* in one of the set's lists while linked */
    struct pending_set *set;
    struct evhttp_request **http; /* the owner's field */
    pending_expire_fn expire;
    int64_t deadline_us;
    bool linked;
};

struct pending_set;

/* answer NULL: reply_error 503. The deadline check runs on a timer of base; `name` (a
 * static string) names the deadline in the log. */
struct pending_set *pending_set_new(struct event_base *base, int64_t timeout_ms, const char *name,
                                    pending_answer_fn answer);
void pending_set_free(struct pending_set *s);

/* *http must be set. After pending_close, answers at once (and *http becomes NULL). */
void pending_start(struct pending_set *s, struct pending *p, struct evhttp_request **http,
                   pending_expire_fn expire);
/* The owner is done with p (before freeing it); safe to call more than once. */
void pending_end(struct pending *p);

/* Answers (or hands to their hook) the requests whose deadline is at or before now_us;
 * the timer calls it with the monotonic clock. Returns how many were cut off. */
size_t pending_expire_due(struct pending_set *s, int64_t now_us);
/* Shutdown: answers every request still waiting; returns how many. */
size_t pending_close(struct pending_set *s);

/* Requests started and not ended (answered or not). */
size_t pending_count(const struct pending_set *s);
/* Requests cut off at their deadline since start. */
uint64_t pending_timeouts(const struct pending_set *s);

#endif
