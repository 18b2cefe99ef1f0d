#ifndef SK_INTMAP_H
#define SK_INTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A hash map from non-zero 64-bit keys to 64-bit values, for small in-memory sets: the
 * users holding an order of an activity (user id -> order id) and the open HTTP
 * connections of the gateway and the admin (evhttp connection -> its record in
 * httpconns.c). Open addressing with linear probing and backward-shift deletion; key 0
 * marks an empty slot. Iterate over `slots` directly. */

struct intmap_slot {
    int64_t key;
    uint64_t value;
};

struct intmap {
    struct intmap_slot *slots;  /* owned; freed by intmap_free */
    size_t capacity;            /* power of two, or 0 */
    size_t count;
};

void intmap_init(struct intmap *m);
void intmap_free(struct intmap *m);
int intmap_put(struct intmap *m, int64_t key, uint64_t value);
bool intmap_get(const struct intmap *m, int64_t key, uint64_t *value);
void intmap_remove(struct intmap *m, int64_t key);

#endif
