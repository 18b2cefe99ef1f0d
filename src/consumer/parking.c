#include "consumer/parking.h"

#include <stdlib.h>
#include <string.h>

#include "consumer/batch.h"

void parking_init(struct parking *p, size_t max, int64_t min_delay_ms, int64_t max_delay_ms)
{
    memset(p, 0, sizeof(*p));
    p->max = max;
    p->min_delay_ms = min_delay_ms;
    p->max_delay_ms = max_delay_ms;
    p->delay_ms = min_delay_ms;
}

void parking_free(struct parking *p)
{
    free(p->items);
    memset(p, 0, sizeof(*p));
}

bool parking_has_room(const struct parking *p, size_t n)
{
    return p->count + n <= p->max;
}

static bool same_run(const struct orderevent *ev, int64_t activity_id, const char *bucket_tag)
{
    return ev->activity_id == activity_id && strcmp(ev->bucket_tag, bucket_tag) == 0;
}

bool parking_waits_for(const struct parking *p, int64_t activity_id, const char *bucket_tag)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->items[i].batch == 0 && same_run(&p->items[i].ev, activity_id, bucket_tag))
            return true;
    return false;
}

/* Lots stay small (one lost slot's orders at most p->max): a linear search is enough. */
static struct parked *find(struct parking *p, const char *order_no)
{
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->items[i].ev.order_no, order_no) == 0)
            return &p->items[i];
    return NULL;
}

int parking_add(struct parking *p, const struct orderevent *ev, int32_t partition, int64_t offset,
                int64_t now_ms)
{
    struct parked *known = find(p, ev->order_no);
    if (known) {
        /* Fed again and parked again: its slot still does not answer. The next feed waits
         * twice as long (once per feed, however many of its orders come back). */
        if (known->batch != 0 && !p->setback) {
            p->setback = true;
            p->delay_ms = p->delay_ms * 2 > p->max_delay_ms ? p->max_delay_ms : p->delay_ms * 2;
        }
        known->batch = 0;
        p->feed_at_ms = now_ms + p->delay_ms;
        return 0;
    }
    if (p->count == p->cap) {
        size_t n = p->cap ? p->cap * 2 : 64;
        struct parked *items = realloc(p->items, n * sizeof(*items));
        if (!items)
            return -1;
        p->items = items;
        p->cap = n;
    }
    /* Later arrivals do not postpone the feed of those already waiting. */
    if (p->count == 0) {
        p->delay_ms = p->min_delay_ms;
        p->feed_at_ms = now_ms + p->delay_ms;
    }
    p->items[p->count++] = (struct parked){ *ev, partition, offset, 0 };
    return 0;
}

int parking_feed(struct parking *p, struct batch *b, uint64_t b_serial, size_t limit, int64_t now_ms)
{
    if (now_ms < p->feed_at_ms)
        return 0;
    size_t fed = 0;
    /* Whole runs, oldest first: part of a run fed would be kept waiting behind the rest. */
    for (size_t i = 0; i < p->count && fed < limit; i++) {
        if (p->items[i].batch != 0)
            continue;
        const struct orderevent *run = &p->items[i].ev;
        int64_t activity = run->activity_id;
        char bucket[sizeof(run->bucket_tag)];
        memcpy(bucket, run->bucket_tag, sizeof(bucket));
        for (size_t j = i; j < p->count; j++) {
            struct parked *it = &p->items[j];
            if (it->batch != 0 || !same_run(&it->ev, activity, bucket))
                continue;
            if (batch_add_order(b, &it->ev, it->partition, it->offset) != 0)
                return -1;
            it->batch = b_serial;
            fed++;
        }
    }
    if (fed > 0)
        p->setback = false;
    return (int)fed;
}

void parking_finish(struct parking *p, uint64_t b_serial)
{
    size_t kept = 0, done = 0;
    for (size_t i = 0; i < p->count; i++) {
        if (p->items[i].batch == b_serial)
            done++;
        else
            p->items[kept++] = p->items[i];
    }
    p->count = kept;
    /* Their slot answered again: the rest need not wait. */
    if (done > 0 && !p->setback) {
        p->delay_ms = p->min_delay_ms;
        p->feed_at_ms = 0;
    }
}

int64_t parking_floor(const struct parking *p, int32_t partition)
{
    int64_t floor = INT64_MAX;
    for (size_t i = 0; i < p->count; i++)
        if (p->items[i].partition == partition && p->items[i].offset < floor)
            floor = p->items[i].offset;
    return floor;
}

size_t parking_drop_partition(struct parking *p, int32_t partition)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < p->count; i++) {
        if (p->items[i].partition == partition)
            dropped++;
        else
            p->items[kept++] = p->items[i];
    }
    p->count = kept;
    return dropped;
}
