#ifndef SK_CTLACTIVITY_H
#define SK_CTLACTIVITY_H

#include <stddef.h>
#include <stdint.h>

#include "ctl.h"

/* seckillctl activity ...: flash sales of a coupon, in MySQL and warmed into Redis. */

/* VARCHAR(128) of utf8mb4: at most 4 bytes a character. */
#define CTLACTIVITY_NAME_BYTES (128 * 4 + 1)

/* One seckill_activity row as the commands need it. */
struct ctlactivity_row {
    int64_t id;
    int64_t coupon_id;
    int64_t stock;          /* initial stock */
    int64_t sold_count;
    int64_t start_ms;
    int64_t end_ms;
    char name[CTLACTIVITY_NAME_BYTES];
    char status[16];        /* the column: PENDING ACTIVE ENDED CANCELLED */
};

/* Reads the row; CTL_OK, or CTL_FAIL after printing (missing row included). */
int ctlactivity_load(struct ctl *ctl, int64_t id, struct ctlactivity_row *row);
/* The status that holds at now_ms: CANCELLED when the row says so, else from the clock
 * (PENDING before the start, ACTIVE inside the window, ENDED from the end on). */
const char *ctlactivity_status_at(const struct ctlactivity_row *row, int64_t now_ms);

/* Writes the activity into Redis (see activity warmup). On CTL_OK, report holds one line
 * saying what happened to the stock key. */
int ctlactivity_warm(struct ctl *ctl, const struct ctlactivity_row *row, char *report,
                     size_t reportlen);

int ctlactivity_create(struct ctl *ctl, int argc, char **argv);
int ctlactivity_warmup(struct ctl *ctl, int argc, char **argv);
int ctlactivity_show(struct ctl *ctl, int argc, char **argv);

#endif
