#ifndef SK_ACTIVITY_H
#define SK_ACTIVITY_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/keys.h"
#include "gateway/redisconn.h"
#include "common/intmap.h"
#include "common/usercoupon.h"

/* The gateway's local view of every warmed activity (Redis set seckill:activities),
 * refreshed on a timer. It lets the hot path answer NOT_STARTED, ENDED, CANCELLED and
 * sold-out storms without I/O; the execute script stays the authority for everything
 * else, so a stale cache can delay an answer but never make a wrong sale. */

#define ACTIVITY_NAME_LEN 128

enum activity_status { ACTIVITY_PENDING, ACTIVITY_ACTIVE, ACTIVITY_ENDED, ACTIVITY_CANCELLED };

/* One bucket of a bucketed activity (bucket.h), as of the last refresh, script answer or
 * rebalance view. */
struct activity_bucket {
    struct keys_set keys;
    int64_t stock_left;
    int64_t holders;
    int64_t in_transit;     /* units in this bucket's outbound transfer records */
    bool starved;           /* a request found it empty since the last rebalance pass */
};

struct activity {
    int64_t id;
    struct keys_set keys;   /* every Redis key of the activity, built when it is cached */
    char name[ACTIVITY_NAME_LEN];
    int64_t coupon_id;
    int64_t stock;          /* initial stock */
    int64_t stock_left;     /* as of the last refresh or script answer */
    int64_t start_ms;
    int64_t end_ms;
    bool cancelled;
    bool paused;            /* its coupon is deactivated: execute.lua answers INACTIVE */
    int per_user;           /* orders one user may hold (execute.lua's perUser), 1 by default */
    bool has_coupon;        /* coupon holds the coupon's terms and name (a warm-up wrote them) */
    struct usercoupon coupon;
    bool loaded;            /* false until the first refresh answered */
    /* In seckill:activities at the last refresh. An archived sale leaves the set (its keys
     * are gone but the activity hash): the reaper and the rebalance stop visiting it, while
     * the entry stays for requests that hold it, without its winners. */
    bool listed;
    bool sold_out;          /* set by an OUT_OF_STOCK answer, cleared when stock returns */
    /* Users holding an order (user id -> order id). Complete once loaded from Redis after
     * the sale sold out; only then may a sold-out sale be answered locally, since a
     * winner's repeat must get DUPLICATE, whichever gateway sold to them. Not kept for a
     * sale of per_user > 1: the script answers those (a user's slots are not one order). */
    struct intmap winners;  /* owned */
    int64_t holders;        /* users holding an order in Redis, as of the last refresh */
    bool winners_complete;
    bool winners_loading;
    /* 1, or the bucket count once a refresh read the activity's tags; buckets is NULL for
     * one bucket (a->keys is bucket 0's keys either way). Owned. */
    int nbuckets;
    struct activity_bucket *buckets;
    /* The last complete rebalance view found every bucket empty and nothing in transit:
     * only then is a bucketed sale answered "sold out" (the cached sums alone may be older
     * than a transfer another gateway just made). Cleared when stock is seen again. */
    bool view_all_out;
    int all_out_views;   /* consecutive complete rebalance views that found every bucket out */
};

struct activity_cache;

struct activity_cache *activity_cache_new(struct event_base *base, const struct config *cfg,
                                          struct redisconn *redis);
void activity_cache_free(struct activity_cache *cache);
struct archive;
/* Every sale listed in seckill:activities is forgotten by archive (archive.h): listed
 * again, it was warmed anew. */
void activity_cache_set_archive(struct activity_cache *cache, struct archive *archive);

struct activity *activity_cache_find(struct activity_cache *cache, int64_t id);
/* The keys of activity `id`: the cached activity's set, or for an id the cache does not
 * hold (not warmed, or warmed since the last refresh) one built into *scratch. NULL when
 * a configured prefix makes a key longer than KEYS_LEN. */
const struct keys_set *activity_keys(struct activity_cache *cache, int64_t id, struct keys_set *scratch);
/* The keys of the bucket of user_id in activity id, and its index in *bucket: bucket 0's
 * keys while the cache does not know the activity's buckets (execute.lua then refuses a
 * user of another bucket with WRONG_BUCKET). NULL as activity_keys. */
const struct keys_set *activity_user_keys(struct activity_cache *cache, int64_t id, int64_t user_id,
                                          int *bucket, struct keys_set *scratch);
/* The keys of bucket b of activity id: NULL unless b is 0 or the cache knows bucket b. */
const struct keys_set *activity_bucket_keys(struct activity_cache *cache, int64_t id, int b,
                                            struct keys_set *scratch);
/* Bucket b answered OUT_OF_STOCK. Returns true when the whole sale is out (every bucket
 * empty as far as this gateway knows, nothing in transit): "sold out"; false when stock
 * is left elsewhere and the request should be retried while it is moved here. */
bool activity_bucket_empty(struct activity_cache *cache, struct activity *a, int b);
/* Recomputes stock_left and sold_out of a bucketed activity from its buckets. */
void activity_sum_buckets(struct activity *a);
size_t activity_cache_count(const struct activity_cache *cache);
/* Buyers remembered over every cached sale (an ended or cancelled sale's are let go). */
size_t activity_cache_winners(const struct activity_cache *cache);
struct activity *activity_cache_at(struct activity_cache *cache, size_t i);
/* Refresh now instead of at the next tick (after a reconnect). */
void activity_cache_refresh(struct activity_cache *cache);
/* The sale answered OUT_OF_STOCK: remember it, and load its winners from Redis. */
void activity_cache_sold_out(struct activity_cache *cache, struct activity *a);
/* True when a sold-out sale can be answered without Redis. */
bool activity_answers_locally(const struct activity *a);

enum activity_status activity_status_at(const struct activity *a, int64_t now_ms);
const char *activity_status_name(enum activity_status status);
/* What the read API shows: the status's name, or PAUSED for a sale pending or active while
 * its coupon is deactivated. */
const char *activity_shown_status(const struct activity *a, int64_t now_ms);
/* Fills a from an activity.lua reply; returns -1 when the reply says "not warmed". */
int activity_from_reply(struct activity *a, const redisReply *reply);

#endif
