#include "common/intmap.h"

#include <stdlib.h>

void intmap_init(struct intmap *m)
{
    m->slots = NULL;
    m->capacity = 0;
    m->count = 0;
}

void intmap_free(struct intmap *m)
{
    free(m->slots);
    intmap_init(m);
}

static size_t slot_of(const struct intmap *m, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (m->capacity - 1);
}

static int intmap_grow(struct intmap *m)
{
    size_t capacity = m->capacity ? m->capacity * 2 : 64;
    struct intmap_slot *slots = calloc(capacity, sizeof(*slots));
    if (!slots)
        return -1;
    struct intmap old = *m;
    m->slots = slots;
    m->capacity = capacity;
    m->count = 0;
    for (size_t i = 0; i < old.capacity; i++)
        if (old.slots[i].key)
            intmap_put(m, old.slots[i].key, old.slots[i].value);
    free(old.slots);
    return 0;
}

int intmap_put(struct intmap *m, int64_t key, uint64_t value)
{
    if ((m->count + 1) * 4 > m->capacity * 3 && intmap_grow(m) != 0)
        return -1;
    size_t i = slot_of(m, key);
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & (m->capacity - 1);
    if (!m->slots[i].key)
        m->count++;
    m->slots[i].key = key;
    m->slots[i].value = value;
    return 0;
}

bool intmap_get(const struct intmap *m, int64_t key, uint64_t *value)
{
    if (!m->capacity)
        return false;
    size_t i = slot_of(m, key);
    while (m->slots[i].key) {
        if (m->slots[i].key == key) {
            *value = m->slots[i].value;
            return true;
        }
        i = (i + 1) & (m->capacity - 1);
    }
    return false;
}

void intmap_remove(struct intmap *m, int64_t key)
{
    if (!m->capacity)
        return;
    size_t i = slot_of(m, key);
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & (m->capacity - 1);
    if (!m->slots[i].key)
        return;
    /* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
    size_t hole = i;
    for (size_t j = (i + 1) & (m->capacity - 1); m->slots[j].key; j = (j + 1) & (m->capacity - 1)) {
        size_t home = slot_of(m, m->slots[j].key);
        bool movable = (hole <= j) ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = 0;
    m->slots[hole].value = 0;
    m->count--;
}
