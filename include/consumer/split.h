#ifndef SK_SPLIT_H
#define SK_SPLIT_H

#include <stddef.h>

/* Isolating the items MySQL refuses for good. A batch whose transaction fails with a
 * deterministic error (sqlerror) is bisected: each half in a transaction of its own, a
 * refused half split again, down to single items; a single item refused is an offender.
 * The halves run left before right, so the items keep their order of application (a
 * coupon.used event after an earlier one of the same coupon still comes after it). When a
 * range is refused exactly when it holds an offender, a batch of n items with k
 * offenders costs at most 1 + 2k·ceil(log2 n) transactions (one when k = 0).
 * Pure logic: what a transaction is, and what an offender becomes, is the caller's. */

enum split_outcome {
    SPLIT_WRITTEN,   /* committed */
    SPLIT_REFUSED,   /* rolled back on a deterministic error: split, or an offender */
    SPLIT_FAILED,    /* rolled back on any other error: give up, the caller retries */
};

/* Writes items [lo, hi) in one transaction. */
typedef enum split_outcome (*split_write_fn)(void *ctx, size_t lo, size_t hi);
/* Item i, refused alone by the write just made. Returns 0, or -1 to give up. */
typedef int (*split_offender_fn)(void *ctx, size_t i);

struct split_stats {
    size_t transactions;   /* calls of write */
    size_t offenders;
};

/* Writes items [0, count): one transaction when nothing is refused. Returns 0 once every
 * item is written or an offender, or -1 as soon as a write FAILED or offender gave up
 * (the halves committed so far stay committed: the caller's retry must be idempotent). */
int split_run(size_t count, split_write_fn write, split_offender_fn offender, void *ctx,
              struct split_stats *stats);

#endif
