#ifndef SK_CTLDB_H
#define SK_CTLDB_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"

/* The MySQL connection of one seckillctl run and the few ways the commands use it.
 * Every failure prints the server's message and returns CTLRUN_FAIL (or NULL). */

/* The connection of this run, opened on first use; NULL after printing the error. */
MYSQL *ctldb_conn(struct ctlrun *ctl);
struct outbox_event;
/* The outcome events of the caller's transaction (outbox.h), written in it; nothing when
 * kafka.outcome-topic is empty. */
int ctldb_outcomes(struct ctlrun *ctl, const struct outbox_event *events, size_t count);
/* A statement without rows. */
int ctldb_exec(struct ctlrun *ctl, const char *sql);
/* A query with rows, all stored client-side (small results); NULL after printing. */
MYSQL_RES *ctldb_query(struct ctlrun *ctl, const char *sql);
/* The same, streamed row by row (big results: order rows); NULL after printing. */
MYSQL_RES *ctldb_stream(struct ctlrun *ctl, const char *sql);
/* Runs sql, which must return exactly one row of integers, into out[0..n-1]
 * (NULL reads as 0). CTLRUN_OK, or CTLRUN_FAIL after printing. */
int ctldb_ints(struct ctlrun *ctl, const char *sql, int64_t *out, size_t n);
/* Column text to an integer; NULL or junk gives 0. */
int64_t ctldb_int(const char *s);
/* A string literal for SQL: quotes s, escaping it for this connection. Caller frees. */
char *ctldb_quote(struct ctlrun *ctl, const char *s);

#endif
