#include "gateway/waiters.h"

#include <string.h>

void waiters_init(struct waiters *ws, size_t max)
{
    memset(ws, 0, sizeof(*ws));
    intmap_init(&ws->by_order);
    ws->all.prev = ws->all.next = &ws->all;
    ws->max = max;
}

void waiters_free(struct waiters *ws) { intmap_free(&ws->by_order); }

static struct waiter *first_of(const struct waiters *ws, uint64_t order_id)
{
    uint64_t v;
    return intmap_get(&ws->by_order, (int64_t)order_id, &v) ? (struct waiter *)(uintptr_t)v : NULL;
}

int waiters_add(struct waiters *ws, struct waiter *w)
{
    if (w->registered || ws->count >= ws->max || w->order_id == 0)
        return -1;
    w->same = first_of(ws, w->order_id);
    if (intmap_put(&ws->by_order, (int64_t)w->order_id, (uint64_t)(uintptr_t)w) != 0)
        return -1;
    w->prev = ws->all.prev;
    w->next = &ws->all;
    ws->all.prev->next = w;
    ws->all.prev = w;
    w->registered = true;
    ws->count++;
    return 0;
}

void waiters_remove(struct waiters *ws, struct waiter *w)
{
    if (!w->registered)
        return;
    struct waiter *head = first_of(ws, w->order_id);
    if (head == w) {
        if (w->same)
            intmap_put(&ws->by_order, (int64_t)w->order_id, (uint64_t)(uintptr_t)w->same);
        else
            intmap_remove(&ws->by_order, (int64_t)w->order_id);
    } else {
        for (struct waiter *p = head; p; p = p->same)
            if (p->same == w) {
                p->same = w->same;
                break;
            }
    }
    w->prev->next = w->next;
    w->next->prev = w->prev;
    w->prev = w->next = w->same = NULL;
    w->registered = false;
    ws->count--;
}

struct waiter *waiters_find(const struct waiters *ws, uint64_t order_id) { return first_of(ws, order_id); }

struct waiter *waiters_next(const struct waiters *ws, const struct waiter *after)
{
    const struct waiter *n = after ? after->next : ws->all.next;
    return n == &ws->all ? NULL : (struct waiter *)n;
}

size_t waiters_count(const struct waiters *ws) { return ws->count; }

bool waiters_full(const struct waiters *ws) { return ws->count >= ws->max; }
