#ifndef SK_SQLTX_H
#define SK_SQLTX_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "consumer/counters.h"
#include "store/sqltext.h"

/* Rows per statement (INSERT ... VALUES, SELECT ... IN): a batch of the usual sizes is
 * one statement per table, and each stays far below max_allowed_packet (16 MB by
 * default; a row of text is about 110 bytes). */
#define SQLTX_ROWS_PER_STATEMENT 5000

/* What the transactions of one batch wrote. */
struct sqltx_stats {
    uint64_t orders_added;   /* seckill_order rows this transaction created */
    uint64_t coupons_added;  /* user_coupon rows it created */
    size_t conflicts;        /* orders refused: their user's slot already holds another order
                              * of the activity (UNIQUE(user_id, activity_id, user_slot)) */
    size_t uses_applied;
    size_t uses_repeated;
    size_t uses_inconsistent;
    size_t orders_refused;   /* set aside: MySQL refused them for good (split) */
    size_t uses_refused;
    size_t transactions;     /* 1, or more when a refusal split the batch */
    /* What halves of a split committed in an attempt that then failed: the next attempt
     * finds those rows as replays, yet they are new rows of this batch. Kept across
     * attempts, folded into the counts above by the attempt that succeeds. The caller
     * zeroes the whole struct before a batch's first attempt. */
    struct {
        uint64_t orders_added;
        uint64_t coupons_added;
        size_t uses_applied;
    } carried;
};

/* The state of persist_batch's one transaction, shared by the modules writing its parts
 * (orderrows, couponuse, counters). Ownership: sql and the counters are the transaction's,
 * released by sqltx_free; db, bulk and err are the caller's. */
struct orderbulk;
struct outbox;

struct sqltx {
    MYSQL *db;
    struct orderbulk *bulk;  /* the connection's prepared INSERTs, kept across batches */
    struct sqltext sql;      /* the statement being built */
    char *err;
    size_t errlen;
    unsigned int errcode;    /* the MySQL error code of the failed step: a prepared
                              * statement's is not always the connection's */
    struct counters activities;
    struct counters coupons;
    struct outbox *outbox;   /* the outcome events of the transaction; NULL: none kept */
};

/* Runs the statement built in tx->sql; what names it in the error. Returns 0 (with the
 * affected rows in *affected when not NULL), or -1 with tx->err set. */
int sqltx_run(struct sqltx *tx, const char *what, uint64_t *affected);
/* The same for a statement that returns rows: its rows (caller frees), or NULL. */
MYSQL_RES *sqltx_select(struct sqltx *tx, const char *what);
/* Runs a constant statement (START TRANSACTION, COMMIT). */
int sqltx_simple(struct sqltx *tx, const char *stmt);
/* The counters, last in the transaction: tx's activities then its coupons, each
 * coalesced and in id order. Returns 0, or -1 with tx->err set. */
int sqltx_apply_counters(struct sqltx *tx);
void sqltx_free(struct sqltx *tx);

#endif
