#ifndef SK_CTLARGS_H
#define SK_CTLARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"

/* A command's arguments: options, positionals and the values they carry. On a bad
 * command line every function prints one usage error ("<command>: <what> '<value>':
 * <why>") and returns CTLRUN_USAGE; nothing else is touched. */

/* Every option takes one value ("--stock 5" or "--stock=5"); each may appear once. */
struct ctlargs_opt {
    const char *name;       /* "--stock" */
    bool required;
    const char *value;      /* set by ctlargs_parse, NULL when absent */
};

/* Splits argv into the options of opts and at most max_pos positional arguments ("--"
 * ends the options). Unknown options, a missing value, a repeated option, a missing
 * required option or too many or too few positionals are usage errors; else CTLRUN_OK. */
int ctlargs_parse(struct ctlrun *ctl, int argc, char **argv, struct ctlargs_opt *opts, size_t nopts,
                  const char **pos, int min_pos, int max_pos, int *npos);
/* Commands of the form `NAME ID`: no options, one positive id named `what` in errors. */
int ctlargs_single_id(struct ctlrun *ctl, int argc, char **argv, const char *what, int64_t *id);

/* A positive id. */
int ctlargs_id(struct ctlrun *ctl, const char *what, const char *s, int64_t *out);
/* A count in [min, max]. */
int ctlargs_count(struct ctlrun *ctl, const char *what, const char *s, int64_t min, int64_t max,
                  int64_t *out);
/* A time as timeparse reads it (ISO-8601, now, +10m), relative to now_ms. */
int ctlargs_time(struct ctlrun *ctl, const char *what, const char *s, int64_t now_ms, int64_t *out_ms);
/* --start and --end of a window. A relative --end after an ISO --start counts from the
 * start ("--start 2026-12-01T20:00:00+08:00 --end +1h" is one hour); after "now" or a
 * relative --start it counts from now_ms, like the start. */
int ctlargs_window(struct ctlrun *ctl, const char *start, const char *end, int64_t now_ms,
                   int64_t *start_ms, int64_t *end_ms);
/* A name for a coupon or activity: 1-128 characters of valid UTF-8, not all blanks, no
 * control characters (the VARCHAR(128) columns count characters, not bytes). */
int ctlargs_name(struct ctlrun *ctl, const char *what, const char *s);
/* An order number, "<digits>-<activityId>", copied into no (ORDERNO_LEN bytes) with what
 * it holds: the number's id and its activity. */
int ctlargs_order_no(struct ctlrun *ctl, const char *s, char *no, uint64_t *id, int64_t *activity_id);
/* The command line of a command taking one argument and --reason TEXT (checked as
 * ctlargs_name): *arg, and *reason ("" when not given). */
int ctlargs_reasoned(struct ctlrun *ctl, int argc, char **argv, const char **arg, const char **reason);
/* An amount in yuan ("10.00") into cents, within a DECIMAL(15,2) column. */
int ctlargs_amount(struct ctlrun *ctl, const char *what, const char *s, int64_t *cents);
/* --rate: a share of the price paid in (0, 1] with at most 4 decimals, "0.85" -> 8500
 * (ten-thousandths, CTLCOUPON_RATE_ONE). */
int ctlargs_rate(struct ctlrun *ctl, const char *s, int64_t *out);

#endif
