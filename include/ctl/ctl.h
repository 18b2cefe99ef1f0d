#ifndef SK_CTL_H
#define SK_CTL_H

#include <hiredis/hiredis.h>
#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/config.h"
#include "common/luascript.h"

/* seckillctl: the admin CLI. ctl.c holds main, the command table and the helpers every
 * command shares (option parsing, MySQL and Redis connections, output); each command
 * family lives in its own module (ctlcoupon, ctlactivity, ctlverify).
 *
 * Exit status: 0 done, 1 the operation failed (a backend refused, a check failed),
 * 2 the command line is wrong (nothing was written). Errors are one line on stderr. */

enum ctl_exit { CTL_OK = 0, CTL_FAIL = 1, CTL_USAGE = 2 };

/* One run of the CLI. Owned by main; the connections are opened on first use by
 * ctl_db / ctl_redis and closed by main after the command returns. */
struct ctl {
    struct config cfg;
    bool json;              /* --json anywhere on the command line */
    const char *command;    /* "activity create": for messages */
    const char *usage;      /* its arguments, for usage errors */
    MYSQL *db;
    redisContext *redis;
    struct luascript_set *scripts;  /* read on first use by ctl_redis_script */
};

/* A command handler gets the arguments after the command words. */
typedef int (*ctl_handler)(struct ctl *ctl, int argc, char **argv);

struct ctl_command {
    const char *name;       /* the command words, "coupon create" */
    ctl_handler handler;
    const char *usage;      /* arguments, for the help text and usage errors */
};

/* ---- options --------------------------------------------------------------------- */

/* Every option takes one value ("--stock 5" or "--stock=5"); each may appear once. */
struct ctl_opt {
    const char *name;       /* "--stock" */
    bool required;
    const char *value;      /* set by ctl_parse_opts, NULL when absent */
};

/* Splits argv into the options of opts and at most max_pos positional arguments.
 * Unknown options, a missing value, a repeated option, a missing required option or too
 * many positionals print a usage error and return CTL_USAGE; else CTL_OK. */
int ctl_parse_opts(struct ctl *ctl, int argc, char **argv, struct ctl_opt *opts, size_t nopts,
                   const char **pos, int min_pos, int max_pos, int *npos);

/* Value parsers for options and positionals: on a bad value they print
 * "<command>: <what> '<value>': <why>" and return CTL_USAGE. */
int ctl_parse_id(struct ctl *ctl, const char *what, const char *s, int64_t *out);
/* Commands of the form `NAME ID`: no options, one positive id named `what` in errors. */
int ctl_parse_single_id(struct ctl *ctl, int argc, char **argv, const char *what, int64_t *id);
/* A count in [min, max]. */
int ctl_parse_count(struct ctl *ctl, const char *what, const char *s, int64_t min, int64_t max,
                    int64_t *out);
int ctl_parse_time(struct ctl *ctl, const char *what, const char *s, int64_t now_ms,
                   int64_t *out_ms);
/* A name for a coupon or activity: 1-128 characters of valid UTF-8, no control characters
 * (the VARCHAR(128) columns count characters, not bytes). */
int ctl_parse_name(struct ctl *ctl, const char *what, const char *s);
/* Truncates a UTF-8 string in place to at most max_chars characters. */
void ctl_utf8_truncate(char *s, size_t max_chars);

/* ---- messages and output ----------------------------------------------------------- */

/* "seckillctl: <command>: <message>" on stderr; they return CTL_USAGE / CTL_FAIL. */
int ctl_usage_error(struct ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ctl_fail(struct ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A note for the operator that is not the command's result (stderr, no exit change). */
void ctl_note(struct ctl *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints obj as one line of JSON on stdout and deletes it. */
int ctl_print_json(struct ctl *ctl, void *cjson_obj);

/* An aligned text table for listings (stats): the cells are copied; widths are terminal
 * columns (East Asian wide characters count two). Owned by the caller; ctl_table_free
 * releases the cells. */
struct ctl_table {
    size_t ncols;
    const char *const *heads;   /* ncols column titles */
    const char *align;          /* one letter a column: 'l' left, 'r' right */
    char **cells;               /* nrows * ncols */
    size_t nrows, cap;
};

void ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *heads, const char *align);
/* Adds one row of ncols cells (NULL prints as "-"). CTL_OK, or CTL_FAIL after printing. */
int ctl_table_row(struct ctl *ctl, struct ctl_table *t, const char *const *cells);
void ctl_table_print(const struct ctl_table *t, FILE *out);
void ctl_table_free(struct ctl_table *t);

/* 1050 -> "10.50". buf of 32 bytes. */
void ctl_format_cents(int64_t cents, char *buf, size_t len);

int64_t ctl_now_ms(void);

/* ---- MySQL ------------------------------------------------------------------------- */

/* The connection of this run, opened on first use; NULL after printing the error. */
MYSQL *ctl_db(struct ctl *ctl);
/* A statement without rows; prints the server's message and returns CTL_FAIL. */
int ctl_db_exec(struct ctl *ctl, const char *sql);
/* A query with rows, all stored client-side (small results); NULL after printing. */
MYSQL_RES *ctl_db_query(struct ctl *ctl, const char *sql);
/* The same, streamed row by row (big results: order rows); NULL after printing. */
MYSQL_RES *ctl_db_stream(struct ctl *ctl, const char *sql);
/* Runs sql, which must return exactly one row of integers, into out[0..n-1]
 * (NULL reads as 0). CTL_OK, or CTL_FAIL after printing. */
int ctl_db_ints(struct ctl *ctl, const char *sql, int64_t *out, size_t n);
/* Column text to an integer; NULL or junk gives 0. */
int64_t ctl_db_int(const char *s);
/* A string literal for SQL: quotes s, escaping it for this connection. Caller frees. */
char *ctl_db_quote(struct ctl *ctl, const char *s);

/* A DATETIME column read back as epoch milliseconds. TIMESTAMPDIFF is plain calendar
 * arithmetic: unlike UNIX_TIMESTAMP (MariaDB 10.11) it does not stop at 2038 and does
 * not depend on the session time zone. */
#define CTL_SQL_MS(col) "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " col ") DIV 1000)"

/* ---- Redis ------------------------------------------------------------------------- */

/* The connection of this run, opened on first use; NULL after printing the error. */
redisContext *ctl_redis(struct ctl *ctl);
/* One command; returns the reply, or NULL after printing the error (no reply, or an
 * error reply). The caller frees the reply. */
redisReply *ctl_redis_argv(struct ctl *ctl, int argc, const char **argv);
/* A reply as an integer: integers, and strings holding one ("GET" of a counter).
 * Returns 0 on success, -1 when the reply is nil or not a number. */
int ctl_redis_int(const redisReply *r, int64_t *out);

/* One command of a MULTI/EXEC block. */
struct ctl_redis_cmd {
    int argc;
    const char *argv[16];
};
/* Runs the commands as one MULTI/EXEC (one consistent snapshot, one round trip) and
 * returns EXEC's array reply, element i answering cmds[i]; an element may be an error
 * reply (WRONGTYPE) for the caller to judge. NULL after printing the error. */
redisReply *ctl_redis_multi(struct ctl *ctl, const struct ctl_redis_cmd *cmds, size_t n);
/* EVALSHA of one of the schema/lua scripts (read from seckill.lua-dir on first use; a
 * NOSCRIPT is answered with SCRIPT LOAD and a retry). Returns the reply, or NULL after
 * printing the error (an error reply included). The caller frees the reply. */
redisReply *ctl_redis_script(struct ctl *ctl, enum luascript_id id, int nkeys,
                             const char *const *keys, int nargs, const char *const *args);

#endif
