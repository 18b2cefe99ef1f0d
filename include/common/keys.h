#ifndef SK_KEYS_H
#define SK_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "common/bucket.h"
#include "common/config.h"

/* Redis key names. Every key of one activity carries the hash tag {activityId}, so each
 * script touches one slot and the layout moves to Redis Cluster unchanged.
 *
 *   <stock.prefix>:{A}        string  stock left to reserve
 *   <user.prefix>:{A}         hash    holder -> orderNo (holder.h: a user,
 *                                     or a user's slot where perUser > 1)
 *   seckill:activity:{A}      hash    name couponId stock start end (ms) status, and
 *                                     paused = 1 while the sale's coupon is INACTIVE;
 *                                     archived = ms of the archive and stockLeft, the stock
 *                                     left then, and on bucket 0 saleStockLeft, the whole
 *                                     sale's (this hash is then the sale's only key:
 *                                     store/archive.h, gateway/archive.h)
 *   seckill:order:{A}         hash    orderNo -> PROCESSING | SUCCESS | FAILED
 *   seckill:resv:{A}          zset    "orderNo|userId" scored by accept ms: not yet in Kafka
 *   seckill:queued:{A}        set     "orderNo|userId": durably in Kafka, not yet claimed
 *   seckill:claimed:{A}       set     "orderNo|userId": claimed by a consumer, being written
 *   seckill:failed:{A}        stream  orders that ended FAILED (o orderNo, u userId, r reason,
 *                                     t ms), written by the script that failed them, until a
 *                                     consumer has recorded them in MySQL (outcomes.c)
 *   seckill:rl:user:{A}:<uid> seckill:rl:ip:{A}:<ip> seckill:brush:{A}:<uid> seckill:ban:{A}:<uid>
 *   seckill:token:{A}:<nonce> a spent purchase token (expires with the token)
 *   seckill:xfer:out:{A}      hash    transfer id -> "<to bucket>|<units>": stock taken out of
 *                                     this bucket and not yet known to have arrived
 *   seckill:xfer:in:{A}       set     transfer ids this bucket received (rebalance.lua)
 *
 * A bucketed activity (bucket.h) has one such set of keys per bucket, under the bucket's
 * tag instead of {A}: bucket 0 keeps {A}, bucket b the tag {A.b.s}. The per-user and per-IP
 * subject keys of a request live in the user's bucket (a user never changes bucket, so the
 * per-user limits, ban and spent tokens are exactly as without buckets; an address seen in
 * several buckets is counted in each).
 *   seckill:activities        set     ids of warmed activities not archived (gateway cache and
 *                                     reaper, the consumer's outcomes pass)
 *   seckill:{archive}:lock    string  the consumer whose lifecycle pass archives sales now
 *
 * Archived (store/archive.h, archive.lua): once a sale is over and every order of it final
 * and in MySQL, all its keys above are UNLINKed but each bucket's activity hash, which gets
 * 'archived' = epoch ms (set before anything is removed); its id leaves seckill:activities.
 * Every script that writes a sale's keys refuses once 'archived' is there. The subject keys
 * (rl, brush, ban, token) all carry a TTL and expire by themselves.
 *   seckill:bans              hash    ban id -> its record (banrecord.h): the manual bans every
 *                                     gateway enforces (seckillctl ban; MySQL seckill_ban is the
 *                                     record), and 'version', changed by every write. One key on
 *                                     one slot: small, read once a refresh, never per request
 *   seckill:coupon:{c<C>}     hash    status = INACTIVE while coupon C is deactivated
 *                                     (redeeming refuses it); absent or ACTIVE otherwise
 *   seckill:{nodes}:seq       counter where the search for a free node id starts
 *   seckill:{nodes}           hash    node id -> "<token>:<expiry ms>" of the gateway leasing
 *                                     it (nodelease.c)
 */

#define KEYS_LEN 160
/* Fields per HSCAN page when a sale's users or orders hash is read whole (the gateway's
 * winners load, seckillctl verify): each page one short command on a live sale. Pages of
 * 1000 took 10-16 ms on a hash of a million on a busy 2-core machine, over the 10 ms that
 * test_big_sale.py allows any command. */
#define KEYS_SCAN_PAGE "100"
#define KEYS_ACTIVITIES "seckill:activities"
/* The manual bans (banrecord.h): written by seckillctl, read by every gateway (bans.c). */
#define KEYS_BANS "seckill:bans"
/* Held (SET NX PX) by the one consumer whose lifecycle pass archives sales (autoarchive.c). */
#define KEYS_ARCHIVE_LOCK "seckill:{archive}:lock"
/* Held by the one consumer whose lifecycle pass walks a coupon out of Redis (autoarchive.c). */
#define KEYS_COUPON_ARCHIVE_LOCK "seckill:{archive}:coupons"
/* The two keys of nodelease.lua share the tag {nodes}: one slot in a Redis Cluster. */
#define KEYS_NODE_SEQ "seckill:{nodes}:seq"
#define KEYS_NODES "seckill:{nodes}"

enum keys_kind {
    KEYS_ACTIVITY,
    KEYS_STOCK,
    KEYS_USERS,
    KEYS_ORDERS,
    KEYS_RESERVED,
    KEYS_QUEUED,
    KEYS_CLAIMED,
    KEYS_FAILED,
    KEYS_XFER_OUT,
    KEYS_XFER_IN,
    KEYS_FAILED_USERS,  /* user -> "orderNo reason" of their last order that FAILED and freed them */
    KEYS_KIND_COUNT
};

enum keys_subject_kind {
    KEYS_RATE_USER,
    KEYS_RATE_IP,
    KEYS_BRUSH,
    KEYS_BAN,
    KEYS_TOKEN,
};

int keys_activity(char *buf, size_t len, const struct config *cfg, enum keys_kind kind,
                  int64_t activity_id);
/* Every key of one activity, built once: the gateway keeps one in each cached activity,
 * the consumer and seckillctl build one per activity they touch. name[kind] is the key. */
struct keys_set {
    int64_t activity_id;
    char tag[BUCKET_TAG_LEN];   /* the hash tag, without braces */
    char name[KEYS_KIND_COUNT][KEYS_LEN];
};

/* Returns 0, or -1 when a configured prefix makes a key longer than KEYS_LEN. */
/* seckill:coupon:{c<couponId>}: a coupon's own slot, like a user's coupons' {u<userId>}. */
int keys_coupon(char *buf, size_t len, int64_t coupon_id);

int keys_set_build(struct keys_set *set, const struct config *cfg, int64_t activity_id);
/* The keys of one bucket of activity_id, under tag (bucket.h). */
int keys_set_build_tag(struct keys_set *set, const struct config *cfg, int64_t activity_id,
                       const char *tag);

int keys_subject(char *buf, size_t len, enum keys_subject_kind kind, int64_t activity_id,
                 const char *subject);
/* The part of a subject key before the subject ("seckill:rl:ip:{A}:"), for callers that
 * build the keys of many subjects of one activity; returns its length or -1. */
int keys_subject_prefix(char *buf, size_t len, enum keys_subject_kind kind, int64_t activity_id);
/* The same in the bucket of tag. */
int keys_subject_prefix_tag(char *buf, size_t len, enum keys_subject_kind kind, const char *tag);

#endif
