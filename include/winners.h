#ifndef SK_WINNERS_H
#define SK_WINNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Users this gateway has seen holding an order of one activity, with that order's id.
 * Lets a sold-out activity answer a winner's repeat with DUPLICATE and everyone else with
 * OUT_OF_STOCK without a Redis round trip. At most one entry per unit of stock.
 * Open addressing with linear probing; user ids are positive, 0 marks an empty slot. */

struct winners_slot {
    int64_t user_id;
    uint64_t order_id;
};

struct winners {
    struct winners_slot *slots;  /* owned; freed by winners_free */
    size_t capacity;             /* power of two */
    size_t count;
};

void winners_init(struct winners *w);
void winners_free(struct winners *w);
int winners_put(struct winners *w, int64_t user_id, uint64_t order_id);
bool winners_get(const struct winners *w, int64_t user_id, uint64_t *order_id);
void winners_remove(struct winners *w, int64_t user_id);

#endif
