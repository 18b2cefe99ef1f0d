#ifndef SK_COUNTERS_H
#define SK_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* Counter increments gathered over the whole transaction and applied at its end, one
 * UPDATE per row in id order: two consumers then lock counter rows in the same order
 * and cannot deadlock on them. Appended unsorted; sorted and summed by counters_coalesce. */
struct counters_delta {
    int64_t id;
    int64_t first;    /* seckill_activity: sold_count; coupon: issued_count */
    int64_t second;   /* coupon: used_count (a refund takes one back) */
};

/* Ownership: v is the list's, freed by counters_free. */
struct counters {
    struct counters_delta *v;
    size_t count;
    size_t cap;
};

/* Adds one increment (nothing when both are 0). Returns 0, or -1 when out of memory. */
int counters_add(struct counters *c, int64_t id, int64_t first, int64_t second);
/* Sorts by id and sums the increments of each id into one entry. */
void counters_coalesce(struct counters *c);
void counters_free(struct counters *c);


#endif
