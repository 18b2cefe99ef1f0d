#ifndef SK_ARCHIVE_H
#define SK_ARCHIVE_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/luascript.h"
#include "store/redisroute.h"

/* The end of a sale's life in Redis: once it is over, every order of it final and in MySQL,
 * its keys go but the activity hash, which keeps 'archived' = the epoch ms of the archive
 * (every bucket's hash, for a bucketed sale: the scripts of a bucket read only their own
 * slot). Used by `seckillctl activity archive` and the consumer's lifecycle pass. Blocking
 * calls: never on the gateway's loop.
 *
 * In order, each step safe to repeat, so that an archive cut short is finished by the next:
 *   1. checks, each read-only: the sale ENDED or CANCELLED in MySQL and its end
 *      ARCHIVE_END_GRACE_MS past; in every bucket no reservation, queued or claimed order,
 *      no transfer in flight and an empty failed stream (outcomes.c recorded it); no order
 *      PROCESSING in the orders hash (read in HSCAN pages of KEYS_SCAN_PAGE, so Redis never
 *      blocks); MySQL's rows = its sold_count = Redis's SUCCESS orders = the 'sold' counters
 *      (the counters compared first, so that most refusals cost no walk).
 *   2. archive.lua 'mark' on every bucket, bucket 0 first: 'archived' is set where nothing
 *      is in flight and 'sold' is still what step 1 counted, atomically; from then on the
 *      scripts refuse to write the bucket's keys. One bucket refusing unmarks the others.
 *   3. MySQL: seckill_activity.archived_at. From here on the archive is never undone.
 *   4. the id leaves seckill:activities (no gateway, reaper or gauge visits it again).
 *   5. archive.lua 'drop' on every bucket: UNLINK of its other keys (freed in the
 *      background, never a blocking DEL of a hash of a million fields).
 * The per-user and per-IP keys of the sale (seckill:rl:*, brush, ban, token) all carry a
 * TTL and are left to expire. */

/* The gateways check the end by their own clocks, and confirm.lua still honours an order
 * Redis lost within 5 s of the end: no archive before. */
#define ARCHIVE_END_GRACE_MS 5000

enum archive_rc {
    ARCHIVE_DONE = 0,       /* archived now, or found archived and finished */
    ARCHIVE_REFUSED = 1,    /* a check failed: nothing was changed (the reason in err) */
    ARCHIVE_MISSING = 2,    /* no such activity */
    ARCHIVE_ERROR = -1,     /* MySQL or Redis failed midway: running it again finishes it */
};

struct archive_result {
    bool already;           /* MySQL said archived before this call (it only finished the rest) */
    int64_t archived_ms;    /* the 'archived' of bucket 0 (MySQL's archived_at when already) */
    int64_t orders;         /* SUCCESS orders, all in MySQL */
    int64_t failed;         /* FAILED orders Redis held */
    int64_t keys_removed;
    int nbuckets;
};

/* Archives activity id at now_ms (wall clock). The redis route's command timeout bounds each
 * page. Returns an archive_rc, with the reason in err for anything but ARCHIVE_DONE. */
int archive_activity(MYSQL *db, struct redisroute *redis, const struct luascript_set *scripts,
                     const struct config *cfg, int64_t id, int64_t now_ms, struct archive_result *out,
                     char *err, size_t errlen);

/* The ids of sales the lifecycle pass should archive at now_ms: ENDED or CANCELLED, not
 * archived, ended at least after_ms ago (and ARCHIVE_END_GRACE_MS), the latest end first (a
 * backlog of old sales, refused ones among them, never holds up the sale of last night), at
 * most cap. Returns how many, or -1 with err. */
int archive_due(MYSQL *db, int64_t now_ms, int64_t after_ms, int64_t *ids, size_t cap, char *err,
                size_t errlen);

#endif
