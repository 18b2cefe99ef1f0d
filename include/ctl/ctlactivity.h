#ifndef SK_CTLACTIVITY_H
#define SK_CTLACTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"
#include "ctl/ctlredis.h"
#include "common/bucket.h"
#include "common/keys.h"

/* One activity as seckillctl reads it: its seckill_activity row in MySQL and its counters
 * in Redis, and cancel.lua, the one script that changes the Redis side outside a warmup.
 * What an activity holds back from its coupon is ctlallotment's. */

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
    bool coupon_inactive;   /* its coupon is INACTIVE: the sale is paused */
    char bucket_tags[BUCKET_LIST_LEN];  /* the column: "" for one bucket (bucket.h) */
    bool archived;          /* archived_at is set: Redis keeps only the activity hash (archive.h) */
    int64_t archived_ms;
    int per_user;           /* orders a user may hold, 1..HOLDER_MAX_SLOT (holder.h) */
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
    /* A bucketed activity: the sums over its buckets (has_stock when every bucket has its
     * stock key), plus the units in transit between them, which count as unsold stock. */
    int nbuckets;
    int64_t in_transit;
};

/* Reads the row; CTLRUN_OK, or CTLRUN_FAIL after printing (missing row included). */
int ctlactivity_load(struct ctlrun *ctl, int64_t id, struct ctlactivity_row *row);
/* The row of the command line's one argument, an activity id (`activity show ID` and the
 * like): CTLRUN_OK, CTLRUN_USAGE or CTLRUN_FAIL after printing. */
int ctlactivity_load_arg(struct ctlrun *ctl, int argc, char **argv, struct ctlactivity_row *row);
/* The activities of a coupon (coupon_id > 0) or all of them (0), by id; lock adds FOR
 * UPDATE (inside the caller's transaction). *rows is the caller's to free. */
int ctlactivity_list(struct ctlrun *ctl, int64_t coupon_id, bool lock, struct ctlactivity_row **rows,
                     size_t *n);
/* The status that holds at now_ms: CANCELLED when the row says so, else from the clock
 * (PENDING before the start, ACTIVE inside the window, ENDED from the end on). */
const char *ctlactivity_status_at(const struct ctlactivity_row *row, int64_t now_ms);
/* A window a command asks for a sale (create, update), its end after its start: no longer
 * than seckill.max-seckill-duration. CTLRUN_OK, or a usage error. */
int ctlactivity_check_length(struct ctlrun *ctl, int64_t start_ms, int64_t end_ms);
/* The row says CANCELLED. */
bool ctlactivity_is_cancelled(const struct ctlactivity_row *row);

/* The commands of ctlactivity_read_redis, in this order, first in a MULTI that a caller
 * may extend with commands of its own (activity show adds HVALS of the orders). */
enum { CTLACTIVITY_REDIS_CMDS = 7 };
void ctlactivity_redis_cmds(const struct keys_set *keys, struct ctlredis_cmd *cmds);
/* Reads the first CTLACTIVITY_REDIS_CMDS answers of the EXEC reply r into rd. */
int ctlactivity_redis_parse(struct ctlrun *ctl, const redisReply *r, struct ctlactivity_redis *rd);
/* The Redis side of row's activity, summed over its buckets. */
int ctlactivity_read_redis(struct ctlrun *ctl, const struct ctlactivity_row *row,
                           struct ctlactivity_redis *rd);
/* The bucket list of row (one bucket for an activity created without --buckets). */
int ctlactivity_buckets(struct ctlrun *ctl, const struct ctlactivity_row *row, struct bucket_list *list);

/* cancel.lua on one activity (every bucket of it): closes it to buyers on every gateway
 * and moves its stock key into 'returned'; units in transit between buckets are delivered
 * first and returned too. Idempotent. */
struct ctlactivity_cancelled {
    bool warmed;            /* false: no activity hash, nothing was changed */
    int64_t moved;          /* units moved into 'returned' by this call */
    int64_t returned;       /* 'returned' in all */
    bool was_cancelled;     /* the hash said CANCELLED already */
};
int ctlactivity_cancel_redis(struct ctlrun *ctl, const struct ctlactivity_row *row,
                             struct ctlactivity_cancelled *out);

#endif
