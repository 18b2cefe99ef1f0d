#include "winners.h"

#include <stdlib.h>

void winners_init(struct winners *w)
{
    w->slots = NULL;
    w->capacity = 0;
    w->count = 0;
}

void winners_free(struct winners *w)
{
    free(w->slots);
    winners_init(w);
}

static size_t slot_of(const struct winners *w, int64_t user_id)
{
    uint64_t h = (uint64_t)user_id * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (w->capacity - 1);
}

static int winners_grow(struct winners *w)
{
    size_t capacity = w->capacity ? w->capacity * 2 : 64;
    struct winners_slot *slots = calloc(capacity, sizeof(*slots));
    if (!slots)
        return -1;
    struct winners old = *w;
    w->slots = slots;
    w->capacity = capacity;
    w->count = 0;
    for (size_t i = 0; i < old.capacity; i++)
        if (old.slots[i].user_id)
            winners_put(w, old.slots[i].user_id, old.slots[i].order_id);
    free(old.slots);
    return 0;
}

int winners_put(struct winners *w, int64_t user_id, uint64_t order_id)
{
    if ((w->count + 1) * 4 > w->capacity * 3 && winners_grow(w) != 0)
        return -1;
    size_t i = slot_of(w, user_id);
    while (w->slots[i].user_id && w->slots[i].user_id != user_id)
        i = (i + 1) & (w->capacity - 1);
    if (!w->slots[i].user_id)
        w->count++;
    w->slots[i].user_id = user_id;
    w->slots[i].order_id = order_id;
    return 0;
}

bool winners_get(const struct winners *w, int64_t user_id, uint64_t *order_id)
{
    if (!w->capacity)
        return false;
    size_t i = slot_of(w, user_id);
    while (w->slots[i].user_id) {
        if (w->slots[i].user_id == user_id) {
            *order_id = w->slots[i].order_id;
            return true;
        }
        i = (i + 1) & (w->capacity - 1);
    }
    return false;
}

void winners_remove(struct winners *w, int64_t user_id)
{
    if (!w->capacity)
        return;
    size_t i = slot_of(w, user_id);
    while (w->slots[i].user_id && w->slots[i].user_id != user_id)
        i = (i + 1) & (w->capacity - 1);
    if (!w->slots[i].user_id)
        return;
    /* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
    size_t hole = i;
    for (size_t j = (i + 1) & (w->capacity - 1); w->slots[j].user_id; j = (j + 1) & (w->capacity - 1)) {
        size_t home = slot_of(w, w->slots[j].user_id);
        bool movable = (hole <= j) ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            w->slots[hole] = w->slots[j];
            hole = j;
        }
    }
    w->slots[hole].user_id = 0;
    w->slots[hole].order_id = 0;
    w->count--;
}
