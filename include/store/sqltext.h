#ifndef SK_SQLTEXT_H
#define SK_SQLTEXT_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

/* A growing SQL statement text. No I/O: the MYSQL handle of sqltext_quoted is used only
 * for its character set (an unconnected handle from mysql_init will do).
 *
 * Ownership: data is the builder's, freed by sqltext_free. A failed allocation, a time
 * beyond DATETIME or an amount beyond DECIMAL(15,2) sticks in failed, so a statement is
 * built without checking each append and checked once before it is sent. */
struct sqltext {
    char *data;
    size_t len;
    size_t cap;
    int failed;
};

/* DATETIME(3) ends with the year 9999. */
#define SQLTEXT_MAX_DATETIME_MS 253402300799999LL
/* DECIMAL(15,2): the largest amount in cents a money column holds. */
#define SQLTEXT_MAX_CENTS 999999999999999LL

void sqltext_free(struct sqltext *s);
/* Empties the text (and clears nothing else: a failure stays until sqltext_free). */
void sqltext_reset(struct sqltext *s);
void sqltext_printf(struct sqltext *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* str as a quoted, escaped string literal. */
void sqltext_quoted(struct sqltext *s, MYSQL *db, const char *str);
/* ms since the epoch as a UTC DATETIME(3) literal: '2026-12-01 12:00:00.250'. */
void sqltext_datetime(struct sqltext *s, int64_t ms);
/* Cents as a DECIMAL(15,2) literal: 1234 -> 12.34. */
void sqltext_cents(struct sqltext *s, int64_t cents);

#endif
