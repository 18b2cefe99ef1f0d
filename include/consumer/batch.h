#ifndef SK_BATCH_H
#define SK_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/orderevent.h"
#include "common/redeemevent.h"

/* One batch of the order consumer: what it read from Kafka between two offset commits.
 * Filled while polling, sealed (sorted by activity, duplicates dropped), then claimed,
 * persisted and finalized as a whole; only then are its offsets committed. No I/O here.
 * The coupon.used events of the same topic ride along in arrival order; they are written
 * in the same transaction, after the orders. */

enum batch_verdict {
    BATCH_PENDING,   /* not yet claimed in Redis */
    BATCH_ACCEPTED,  /* claimed or already confirmed: write it */
    BATCH_REJECTED,  /* released before it could be persisted: skip it */
    BATCH_PARKED,    /* its slot could not be claimed in: set aside (parking.h) */
    BATCH_ARCHIVED,  /* its sale is archived: final, its outcome in MySQL (archived.h); skip it */
};

#define BATCH_ERROR_LEN 256   /* a dead letter's reason, with MySQL's message */

/* Where a dead letter stands with the DLQ producer. */
enum batch_dead_state {
    BATCH_DEAD_PENDING,   /* to be produced (again, after a failed delivery) */
    BATCH_DEAD_INFLIGHT,  /* produced, delivery report outstanding */
    BATCH_DEAD_DELIVERED,
};

/* A message that cannot become an order, kept with everything the dead-letter topic needs.
 * Owned by its batch; the DLQ producer holds a pointer to it as the message opaque while
 * INFLIGHT, so the batch must not be reset before no entry is INFLIGHT any more. */
struct batch_dead {
    char *payload;      /* copy of the original value, may be NULL */
    size_t payload_len;
    char *key;          /* copy of the original key, may be NULL */
    size_t key_len;
    int32_t partition;
    int64_t offset;
    char error[BATCH_ERROR_LEN];
    enum batch_dead_state state;
};

/* Where a coupon.used event came from: its message, copied, so that it can still be
 * dead-lettered when MySQL finds it inconsistent (after the DLQ step of the batch ran). */
struct batch_use_msg {
    char *payload;
    size_t payload_len;
    char *key;
    size_t key_len;
    int32_t partition;
    int64_t offset;
};

/* The user coupon an order issued, for publishing it to Redis after the commit. */
struct batch_coupon {
    int64_t id;         /* user_coupon.id; 0 when none was issued */
    int64_t coupon_id;
};

/* What became of one coupon.used or coupon.refunded event in MySQL. */
enum batch_use_verdict {
    BATCH_USE_APPLIED,       /* the user coupon went UNUSED -> USED, used_count + 1 (a
                              * refund: USED -> UNUSED, used_count - 1) */
    BATCH_USE_REPEATED,      /* applied before (a replay): nothing to do */
    BATCH_USE_INCONSISTENT,  /* no such user coupon, another user's, USED by another
                              * order, not UNUSED, or amounts MySQL cannot hold: nothing
                              * written; reason says which, for the dead-letter topic */
    BATCH_USE_REFUSED,       /* MySQL refused it with a deterministic error (split):
                              * nothing written; reason holds the error */
};

struct batch_use_result {
    enum batch_use_verdict verdict;
    int64_t coupon_id;      /* of the user coupon, when MySQL has it */
    bool last;              /* APPLIED, and the last event of the batch applied to its user
                             * coupon: the state MySQL holds after the commit */
    char reason[BATCH_ERROR_LEN];
};

/* Where an order came from, for the dead-letter headers should MySQL refuse it. Kept in
 * arrival order, apart from the orders (which batch_seal sorts and thins). */
struct batch_origin {
    char order_no[ORDERNO_LEN];
    int32_t partition;
    int64_t offset;
};

/* How MySQL refused an accepted order (batch.refused). */
#define BATCH_REFUSED 1           /* for good: abandon.lua returns its unit */
#define BATCH_REFUSED_SOLD_OUT 2  /* by activity_sold_within_stock: MySQL sold every unit
                                   * already, so its unit is not returned (supersede.h) */

/* An accepted order MySQL refused with a deterministic error (split). */
struct batch_refusal {
    size_t index;                  /* into accepted */
    char reason[BATCH_ERROR_LEN];
};

struct batch_offset {
    int32_t partition;
    int64_t offset;   /* highest offset seen in this batch */
};

/* Ownership: every array and every dead entry belongs to the batch; batch_free releases
 * them, batch_reset empties the batch but keeps the arrays for the next one. */
struct batch {
    struct orderevent *orders;       /* valid events; sorted after batch_seal */
    enum batch_verdict *verdicts;    /* parallel to orders */
    size_t count;
    size_t cap;

    /* Written by batch_collect_accepted, then by persist_batch. */
    struct orderevent *accepted;     /* copies of the ACCEPTED orders, still sorted */
    unsigned char *in_db;            /* parallel to accepted: the row is in MySQL */
    struct batch_coupon *coupons;    /* parallel to accepted: the user coupon it issued */
    unsigned char *refused;          /* parallel to accepted: MySQL refused it for good,
                                      * BATCH_REFUSED or BATCH_REFUSED_SOLD_OUT; 0 if not */
    unsigned char *parked;           /* parallel to accepted: in MySQL, but a Redis step
                                      * after the write failed on its slot (parking.h) */
    size_t accepted_count;
    size_t parked_count;             /* orders and accepted orders set aside */
    uint64_t serial;                 /* which batch this is, from 1 (parking.h) */
    struct batch_refusal *refusals;  /* the refused ones, with their reasons */
    size_t refusal_count;
    size_t refusal_cap;

    struct batch_origin *origins;    /* one per order added, in arrival order */
    size_t origin_count;
    size_t origin_cap;

    struct redeemevent *uses;        /* coupon.used and coupon.refunded events, in arrival order */
    struct batch_use_msg *use_msgs;  /* parallel to uses */
    struct batch_use_result *use_results;  /* parallel to uses, written by persist_batch */
    size_t use_count;
    size_t use_cap;

    struct batch_dead **dead;        /* pointers stay put while the array grows */
    size_t dead_count;
    size_t dead_cap;

    struct batch_offset *offsets;    /* one per partition seen */
    size_t offset_count;
    size_t offset_cap;

    size_t messages;                 /* messages read, valid or not */
    size_t duplicates;               /* events dropped by batch_seal as repeats */
};

int batch_init(struct batch *b, size_t cap_hint);
void batch_free(struct batch *b);
void batch_reset(struct batch *b);

/* The order of the message at partition/offset. */
int batch_add_order(struct batch *b, const struct orderevent *ev, int32_t partition,
                    int64_t offset);
/* Copies payload and key. */
int batch_add_dead(struct batch *b, const void *payload, size_t payload_len, const void *key,
                   size_t key_len, int32_t partition, int64_t offset, const char *error);
/* Copies payload and key too. */
int batch_add_use(struct batch *b, const struct redeemevent *ev, const void *payload,
                  size_t payload_len, const void *key, size_t key_len, int32_t partition,
                  int64_t offset);
/* Turns uses[i] into a dead letter carrying error (its message, copied again). */
int batch_dead_use(struct batch *b, size_t i, const char *error);
/* Marks accepted[i] refused by MySQL, keeping reason. Returns 0, or -1 out of memory. */
int batch_refuse_order(struct batch *b, size_t i, const char *reason);
/* Forgets every refusal (a persist attempt starts over). */
void batch_clear_refusals(struct batch *b);
/* Turns accepted[i] into a dead letter carrying error: its event encoded again (the
 * codec is strict, so this is the message's content), without a key (orders are
 * produced without one), from the partition and offset it arrived at. */
int batch_dead_order(struct batch *b, size_t i, const char *error);
/* Where the order of that number arrived: its partition and offset, or -1 and -1. */
void batch_origin(const struct batch *b, const char *order_no, int32_t *partition, int64_t *offset);
int batch_note_offset(struct batch *b, int32_t partition, int64_t offset);

/* Sorts the orders by activity, coupon, then order number and drops repeated order
 * numbers (a redelivery inside one batch), so that each activity is one contiguous run,
 * and inside it each coupon (claim and finalize go by activity, persist by activity and
 * coupon, each binary-searching order numbers inside a run). The only sort of the orders:
 * the accepted copies keep this order. */
void batch_seal(struct batch *b);
/* batch_seal's order, for qsort and for checking it: <0, 0, >0. */
int batch_order_cmp(const struct orderevent *a, const struct orderevent *b);
/* End (exclusive) of the run of orders sharing the activity of orders[start]. */
size_t batch_run_end(const struct orderevent *orders, size_t count, size_t start);
/* The same for the run sharing activity and bucket (batch_seal sorts by activity, then
 * bucket). */
size_t batch_bucket_run_end(const struct orderevent *orders, size_t count, size_t start);
/* The same for the run sharing activity and coupon id. */
size_t batch_coupon_run_end(const struct orderevent *orders, size_t count, size_t start);
/* Copies the ACCEPTED orders into b->accepted and clears in_db, coupons, refused, parked
 * and the refusals. */
void batch_collect_accepted(struct batch *b);

/* True when the batch holds nothing to do: no order, no use, no dead letter, no offset. */
int batch_is_empty(const struct batch *b);

#endif
