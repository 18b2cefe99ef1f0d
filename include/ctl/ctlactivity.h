#ifndef SK_CTLACTIVITY_H
#define SK_CTLACTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctl.h"

/* seckillctl activity ...: flash sales of a coupon, in MySQL and warmed into Redis.
 *
 * Stock a sale holds back from its coupon (the allotment, see ctlactivity_holds): a coupon
 * can give total_count - issued_count - what its sales hold. Sold orders are already in
 * issued_count. A live or future sale holds its unsold stock (stock - sold_count). An
 * ended or cancelled one holds only what may still turn into orders: stock Redis handed
 * out that MySQL has not recorded yet (reservations, orders queued in Kafka or claimed),
 * i.e. stock - sold_count - stock key - returned. The rest is back with the coupon:
 *   - the stock key of an ended sale (nobody can reserve after the end);
 *   - 'returned' in the activity hash: what cancel.lua took off a cancelled sale;
 *   - the stock key of a cancelled sale: units the reaper released after the cancel
 *     (release.lua INCRs the key, now closed to buyers; a later cancel or warmup moves
 *     them into 'returned').
 * So I3 reads, at quiescence: stock key + live reservations + SUCCESS + returned = stock. */

/* VARCHAR(128) of utf8mb4: at most 4 bytes a character. */
#define CTLACTIVITY_NAME_BYTES (128 * 4 + 1)

/* A sale still counts as live this long after its end: the gateways check the end against
 * their own clocks, and an execute sent just before the end may reach Redis up to a
 * redis.timeout-ms later. Holding the stock a little longer only delays its return. */
#define CTLACTIVITY_END_GRACE_MS 5000

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

/* The Redis side of one activity, read in one MULTI (one instant: cancel.lua moves units
 * from the stock key to 'returned' atomically, so the two are read together). */
struct ctlactivity_redis {
    bool warmed;            /* the activity hash exists */
    bool cancelled;         /* and its status says CANCELLED */
    bool has_stock;         /* the stock key exists */
    int64_t stock_left;     /* the stock key, when it exists */
    int64_t returned;       /* the hash's 'returned' (0 when absent) */
    int64_t reservations, queued, claimed;
};

/* Reads the row; CTL_OK, or CTL_FAIL after printing (missing row included). */
int ctlactivity_load(struct ctl *ctl, int64_t id, struct ctlactivity_row *row);
/* The activities of a coupon (coupon_id > 0) or all of them (0), by id; lock adds FOR
 * UPDATE (inside the caller's transaction). *rows is the caller's to free. */
int ctlactivity_list(struct ctl *ctl, int64_t coupon_id, bool lock, struct ctlactivity_row **rows,
                     size_t *n);
/* The status that holds at now_ms: CANCELLED when the row says so, else from the clock
 * (PENDING before the start, ACTIVE inside the window, ENDED from the end on). */
const char *ctlactivity_status_at(const struct ctlactivity_row *row, int64_t now_ms);

int ctlactivity_read_redis(struct ctl *ctl, int64_t id, struct ctlactivity_redis *rd);
/* Pure: how much of its coupon's count the activity holds back at now_ms (see above).
 * A cancel that MySQL records but the Redis hash does not show (Redis restored from
 * before it) may still be selling: the sale then holds its unsold stock like a live one. */
int64_t ctlactivity_holds(const struct ctlactivity_row *row, int64_t now_ms,
                          const struct ctlactivity_redis *rd);
/* The sum of ctlactivity_holds over the coupon's activities. With lock, their rows are
 * locked FOR UPDATE first: the consumer raises sold_count and then issued_count in one
 * transaction, so locking activities before the coupon row keeps one lock order. */
int ctlactivity_allotted(struct ctl *ctl, int64_t coupon_id, int64_t now_ms, bool lock,
                         int64_t *allotted);

/* Writes the activity into Redis (see activity warmup). On CTL_OK, report holds one line
 * saying what happened to the stock key. */
int ctlactivity_warm(struct ctl *ctl, const struct ctlactivity_row *row, char *report,
                     size_t reportlen);

int ctlactivity_create(struct ctl *ctl, int argc, char **argv);
int ctlactivity_warmup(struct ctl *ctl, int argc, char **argv);
int ctlactivity_cancel(struct ctl *ctl, int argc, char **argv);
int ctlactivity_show(struct ctl *ctl, int argc, char **argv);

#endif
