#ifndef SK_WAITERS_H
#define SK_WAITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/bucket.h"
#include "common/orderno.h"
#include "common/intmap.h"

/* The registry of held long-poll requests (GET ...?wait=N): which requests wait on which
 * order, and on which channel (the bucket's hash tag) the news of that order arrives.
 * Pure bookkeeping, no I/O: longpoll.c owns the requests and embeds a struct waiter in
 * each; the registry only links them.
 *
 * - Several requests may wait on one order (a client retrying, two tabs): they are
 *   chained behind one map entry, newest first.
 * - Every waiter is also on one list, in registration order, for the walks that touch
 *   them all (a channel resubscribed, shutdown).
 * - The number held is bounded (http.max-waiting): waiters_add refuses beyond it. */

struct waiter {
    uint64_t order_id;              /* the order number's snowflake part: the map's key */
    char order_no[ORDERNO_LEN];
    char tag[BUCKET_TAG_LEN];       /* the channel's hash tag, without braces */
    struct waiter *same;            /* the next waiter of the same order */
    struct waiter *prev, *next;     /* the list of all, while registered */
    bool registered;
};

struct waiters {
    struct intmap by_order;         /* order id -> the newest waiter of that order */
    struct waiter all;              /* sentinel of the list of all */
    size_t count;
    size_t max;
};

void waiters_init(struct waiters *ws, size_t max);
/* Every waiter must have been removed (the registry owns none of them). */
void waiters_free(struct waiters *ws);

/* w->order_id, order_no and tag set. Returns 0, or -1 when max are held (or out of
 * memory): w is then not registered. */
int waiters_add(struct waiters *ws, struct waiter *w);
/* Safe on a waiter not (or no longer) registered. */
void waiters_remove(struct waiters *ws, struct waiter *w);

/* The newest waiter of order_id, or NULL; follow ->same for the others. */
struct waiter *waiters_find(const struct waiters *ws, uint64_t order_id);
/* The first waiter registered after `after` (NULL: the oldest), or NULL at the end. */
struct waiter *waiters_next(const struct waiters *ws, const struct waiter *after);

size_t waiters_count(const struct waiters *ws);
bool waiters_full(const struct waiters *ws);

#endif
