#ifndef SK_SQLTX_H
#define SK_SQLTX_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "consumer/counters.h"
#include "consumer/sqltext.h"

/* The state of persist_batch's one transaction, shared by the modules writing its parts
 * (orderrows, couponuse, counters). Ownership: sql and the counters are the transaction's,
 * released by sqltx_free; db, bulk and err are the caller's. */
struct orderbulk;

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
};

/* Runs the statement built in tx->sql; what names it in the error. Returns 0 (with the
 * affected rows in *affected when not NULL), or -1 with tx->err set. */
int sqltx_run(struct sqltx *tx, const char *what, uint64_t *affected);
/* The same for a statement that returns rows: its rows (caller frees), or NULL. */
MYSQL_RES *sqltx_select(struct sqltx *tx, const char *what);
/* Runs a constant statement (START TRANSACTION, COMMIT). */
int sqltx_simple(struct sqltx *tx, const char *stmt);
void sqltx_free(struct sqltx *tx);

#endif
