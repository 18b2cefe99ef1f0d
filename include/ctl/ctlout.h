#ifndef SK_CTLOUT_H
#define SK_CTLOUT_H

#include "ctl/ctlrun.h"

/* What seckillctl prints besides tables: errors and notes on stderr, JSON on stdout. */

/* "seckillctl: <command>: <message>" on stderr (without the command when ctl is NULL or
 * has none); they return CTLRUN_USAGE / CTLRUN_FAIL. */
int ctlout_usage_error(struct ctlrun *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ctlout_fail(struct ctlrun *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same as ctlout_fail, saying what kind of failure it is to a caller that tells them
 * apart (ctlcall.h): a coupon or activity that does not exist; MySQL or Redis that could
 * not be reached. */
int ctlout_missing(struct ctlrun *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ctlout_unavailable(struct ctlrun *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A note for the operator that is not the command's result (stderr, no exit change). */
void ctlout_note(struct ctlrun *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints obj (a cJSON *) as one line of JSON on stdout and deletes it (inside a ctlcall:
 * hands it to the call). */
int ctlout_json(struct ctlrun *ctl, void *cjson_obj);

#endif
