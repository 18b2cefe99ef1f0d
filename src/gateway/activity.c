#include "gateway/activity.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/holder.h"
#include "common/log.h"
#include "common/orderno.h"
#include "common/parse.h"
#include "gateway/archive.h"

/* Activities are few (a shop runs a handful of sales at once): a sorted array gives
 * binary-search lookups and stable pointers between refreshes. Entries are never removed
 * while the gateway runs, so pointers held by in-flight requests stay valid. */
#define ACTIVITY_CACHE_MAX 4096

struct activity_cache {
    struct event_base *base;
    const struct config *cfg;
    struct redisconn *redis;
    struct event *timer;
    struct activity *items[ACTIVITY_CACHE_MAX];  /* sorted by id; each owned */
    size_t count;
    bool listing;  /* a SMEMBERS is in flight */
    struct archive *archive;  /* told of every sale listed: it is not archived (any more) */
};

/* One HSCAN page of a winners load in flight, bucket by bucket. Freed by its callback. */
struct winners_load {
    struct activity_cache *cache;
    int64_t id;
    int bucket;
    struct intmap loaded;  /* owned until it replaces the activity's map */
};

/* One activity.lua call in flight, on one bucket. Freed by its callback. */
struct activity_fetch {
    struct activity_cache *cache;
    int64_t id;
    int bucket;
};

const char *activity_status_name(enum activity_status status)
{
    static const char *const names[] = { "PENDING", "ACTIVE", "ENDED", "CANCELLED" };
    return names[status];
}

const char *activity_shown_status(const struct activity *a, int64_t now_ms)
{
    enum activity_status status = activity_status_at(a, now_ms);
    if (a->paused && (status == ACTIVITY_PENDING || status == ACTIVITY_ACTIVE))
        return "PAUSED";
    return activity_status_name(status);
}

enum activity_status activity_status_at(const struct activity *a, int64_t now_ms)
{
    if (a->cancelled)
        return ACTIVITY_CANCELLED;
    if (now_ms < a->start_ms)
        return ACTIVITY_PENDING;
    if (now_ms >= a->end_ms)
        return ACTIVITY_ENDED;
    return ACTIVITY_ACTIVE;
}

static int int_of(const redisReply *r, int64_t *out)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING)
        return -1;
    char *end;
    long long v = strtoll(r->str, &end, 10);
    if (end == r->str || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int activity_from_reply(struct activity *a, const redisReply *reply)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 8)
        return -1;
    redisReply **e = reply->element;
    int64_t coupon, stock, start, end, left, holders;
    if (int_of(e[1], &coupon) || int_of(e[2], &stock) || int_of(e[3], &start) ||
        int_of(e[4], &end) || int_of(e[6], &left) || int_of(e[7], &holders))
        return -1;
    snprintf(a->name, sizeof(a->name), "%s", e[0]->type == REDIS_REPLY_STRING ? e[0]->str : "");
    a->coupon_id = coupon;
    a->stock = stock;
    a->start_ms = start;
    a->end_ms = end;
    a->stock_left = left;
    a->cancelled = e[5]->type == REDIS_REPLY_STRING && strcmp(e[5]->str, "CANCELLED") == 0;
    a->holders = holders;
    a->paused = reply->elements >= 10 && e[9]->type == REDIS_REPLY_STRING && strcmp(e[9]->str, "1") == 0;
    int64_t per_user = 1;
    if (reply->elements >= 12 && int_of(e[11], &per_user) != 0)
        per_user = 1;
    a->per_user = per_user > 1 && per_user <= HOLDER_MAX_SLOT ? (int)per_user : 1;
    const redisReply *record = reply->elements >= 11 && e[10]->type == REDIS_REPLY_STRING ? e[10] : NULL;
    a->has_coupon = record && record->len > 0 && usercoupon_decode(record->str, record->len, &a->coupon) == 0;
    a->loaded = true;
    /* Stock that came back (a rollback or an expired reservation) reopens the sale. */
    if (left > 0)
        a->sold_out = false;
    else
        a->sold_out = true;
    if (a->winners.count != (size_t)holders)
        a->winners_complete = false;
    return 0;
}

static size_t lower_bound(const struct activity_cache *cache, int64_t id)
{
    size_t lo = 0, hi = cache->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cache->items[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct activity *activity_cache_find(struct activity_cache *cache, int64_t id)
{
    size_t i = lower_bound(cache, id);
    return (i < cache->count && cache->items[i]->id == id) ? cache->items[i] : NULL;
}

static struct activity *cache_insert(struct activity_cache *cache, int64_t id)
{
    size_t i = lower_bound(cache, id);
    if (i < cache->count && cache->items[i]->id == id)
        return cache->items[i];
    if (cache->count == ACTIVITY_CACHE_MAX)
        return NULL;
    struct activity *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    if (keys_set_build(&a->keys, cache->cfg, id) != 0) {
        LOG_WARN("activity %" PRId64 ": a configured key prefix makes its keys too long", id);
        free(a);
        return NULL;
    }
    a->id = id;
    a->nbuckets = 1;
    intmap_init(&a->winners);
    memmove(&cache->items[i + 1], &cache->items[i], (cache->count - i) * sizeof(cache->items[0]));
    cache->items[i] = a;
    cache->count++;
    return a;
}

const struct keys_set *activity_keys(struct activity_cache *cache, int64_t id, struct keys_set *scratch)
{
    const struct activity *a = activity_cache_find(cache, id);
    if (a)
        return &a->keys;
    return keys_set_build(scratch, cache->cfg, id) == 0 ? scratch : NULL;
}

const struct keys_set *activity_user_keys(struct activity_cache *cache, int64_t id, int64_t user_id,
                                          int *bucket, struct keys_set *scratch)
{
    struct activity *a = activity_cache_find(cache, id);
    *bucket = 0;
    if (a && a->nbuckets > 1) {
        *bucket = bucket_of_user(user_id, a->nbuckets);
        return &a->buckets[*bucket].keys;
    }
    return activity_keys(cache, id, scratch);
}

const struct keys_set *activity_bucket_keys(struct activity_cache *cache, int64_t id, int b,
                                            struct keys_set *scratch)
{
    if (b == 0)
        return activity_keys(cache, id, scratch);
    struct activity *a = activity_cache_find(cache, id);
    return a && b > 0 && b < a->nbuckets ? &a->buckets[b].keys : NULL;
}

void activity_sum_buckets(struct activity *a)
{
    if (a->nbuckets <= 1)
        return;
    int64_t left = 0, transit = 0, holders = 0;
    for (int b = 0; b < a->nbuckets; b++) {
        left += a->buckets[b].stock_left;
        transit += a->buckets[b].in_transit;
        holders += a->buckets[b].holders;
    }
    a->stock_left = left;
    a->holders = holders;
    a->sold_out = left + transit == 0;
    if (!a->sold_out) {
        a->view_all_out = false;
        a->all_out_views = 0;
    }
    if (a->winners.count != (size_t)holders)
        a->winners_complete = false;
}

size_t activity_cache_count(const struct activity_cache *cache) { return cache->count; }

size_t activity_cache_winners(const struct activity_cache *cache)
{
    size_t n = 0;
    for (size_t i = 0; i < cache->count; i++)
        n += cache->items[i]->winners.count;
    return n;
}

struct activity *activity_cache_at(struct activity_cache *cache, size_t i) { return cache->items[i]; }

bool activity_answers_locally(const struct activity *a)
{
    return a->per_user <= 1 && a->sold_out && a->winners_complete && (a->nbuckets <= 1 || a->view_all_out);
}

static void load_page(struct winners_load *load, const char *cursor);

static bool over(const struct activity *a)
{
    enum activity_status status = activity_status_at(a, clock_wall_ms());
    return status == ACTIVITY_ENDED || status == ACTIVITY_CANCELLED;
}

/* An ended or cancelled sale answers execute without them: the user-to-order map of every
 * order it took goes, or the gateway would keep each sale's winners for as long as it runs. */
static void forget_winners(struct activity *a)
{
    if (a->winners.count == 0 && !a->winners_complete)
        return;
    intmap_free(&a->winners);
    intmap_init(&a->winners);
    a->winners_complete = false;
}

static void load_done(struct winners_load *load, bool ok)
{
    struct activity *a = activity_cache_find(load->cache, load->id);
    if (a) {
        a->winners_loading = false;
        if (ok && !over(a) && a->listed) {
            intmap_free(&a->winners);
            a->winners = load->loaded;
            intmap_init(&load->loaded);
            /* Complete only if nobody bought or left while the pages were read. */
            a->winners_complete = a->winners.count == (size_t)a->holders;
        }
    }
    intmap_free(&load->loaded);
    free(load);
}

static void on_page(redisReply *reply, void *privdata)
{
    struct winners_load *load = privdata;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING || reply->element[1]->type != REDIS_REPLY_ARRAY) {
        load_done(load, false);
        return;
    }
    const redisReply *pairs = reply->element[1];
    for (size_t i = 0; i + 1 < pairs->elements; i += 2) {
        int64_t user, activity_id;
        uint64_t order_id;
        if (pairs->element[i]->type == REDIS_REPLY_STRING &&
            pairs->element[i + 1]->type == REDIS_REPLY_STRING &&
            parse_id(pairs->element[i]->str, &user) == 0 &&
            orderno_parse(pairs->element[i + 1]->str, &order_id, &activity_id) == 0)
            intmap_put(&load->loaded, user, order_id);
    }
    if (strcmp(reply->element[0]->str, "0") == 0) {
        const struct activity *a = activity_cache_find(load->cache, load->id);
        if (a && load->bucket + 1 < a->nbuckets) {
            load->bucket++;  /* the winners of a bucketed sale are in every bucket */
            load_page(load, "0");
        } else {
            load_done(load, true);
        }
    } else
        load_page(load, reply->element[0]->str);
}

/* HSCAN pages (KEYS_SCAN_PAGE), not HGETALL: a sale of a million leaves Redis responsive. */
static void load_page(struct winners_load *load, const char *cursor)
{
    const struct activity *a = activity_cache_find(load->cache, load->id);
    if (!a) {
        load_done(load, false);
        return;
    }
    const struct keys_set *k = load->bucket == 0 ? &a->keys : &a->buckets[load->bucket].keys;
    const char *argv[] = { "HSCAN", k->name[KEYS_USERS], cursor, "COUNT", KEYS_SCAN_PAGE };
    if (redisconn_command_argv(load->cache->redis, 5, argv, NULL, on_page, load) != 0)
        load_done(load, false);
}

static void load_winners(struct activity_cache *cache, struct activity *a)
{
    if (a->winners_loading || a->winners_complete || a->per_user > 1)
        return;
    struct winners_load *load = malloc(sizeof(*load));
    if (!load)
        return;
    load->cache = cache;
    load->id = a->id;
    load->bucket = 0;
    intmap_init(&load->loaded);
    a->winners_loading = true;
    load_page(load, "0");
}

bool activity_bucket_empty(struct activity_cache *cache, struct activity *a, int b)
{
    if (a->nbuckets <= 1 || b >= a->nbuckets) {
        activity_cache_sold_out(cache, a);
        return true;
    }
    a->buckets[b].stock_left = 0;
    a->buckets[b].starved = true;
    activity_sum_buckets(a);
    bool confirmed = a->view_all_out || cache->cfg->rebalance_interval_ms == 0;
    if (!a->sold_out || !confirmed)
        return false;
    activity_cache_sold_out(cache, a);
    return true;
}

void activity_cache_sold_out(struct activity_cache *cache, struct activity *a)
{
    a->sold_out = true;
    a->stock_left = 0;
    load_winners(cache, a);
}

static void fetch_bucket(struct activity_cache *cache, const struct activity *a, int b);

/* Takes the bucket list of bucket 0's answer: the activity's buckets are fixed at its
 * creation, so a list is set up once (a different one, from an activity id reused after
 * a Redis flush, replaces it). */
static int adopt_buckets(struct activity_cache *cache, struct activity *a, const redisReply *reply)
{
    const char *tags = reply->elements >= 9 && reply->element[8]->type == REDIS_REPLY_STRING
                           ? reply->element[8]->str : "";
    struct bucket_list list;
    if (bucket_list_parse(tags, a->id, &list) != 0) {
        LOG_WARN("activity %" PRId64 ": malformed bucket tags '%s' in Redis", a->id, tags);
        return -1;
    }
    if (list.count == a->nbuckets && (list.count == 1 || strcmp(a->buckets[list.count - 1].keys.tag,
                                                                list.tag[list.count - 1]) == 0))
        return 0;
    struct activity_bucket *buckets = NULL;
    if (list.count > 1) {
        buckets = calloc((size_t)list.count, sizeof(*buckets));
        if (!buckets)
            return -1;
        for (int b = 0; b < list.count; b++)
            if (keys_set_build_tag(&buckets[b].keys, cache->cfg, a->id, list.tag[b]) != 0) {
                LOG_WARN("activity %" PRId64 ": a configured key prefix makes its keys too long", a->id);
                free(buckets);
                return -1;
            }
    }
    /* In-flight requests hold keys of the old list only through the batch's own copy of
     * the key names, so the old array can go now. */
    free(a->buckets);
    a->buckets = buckets;
    a->nbuckets = list.count;
    return 0;
}

static void on_fetched(redisReply *reply, void *privdata)
{
    struct activity_fetch *fetch = privdata;
    struct activity *a = activity_cache_find(fetch->cache, fetch->id);
    if (a && fetch->bucket > 0) {
        struct activity_fetch *f = fetch;
        if (f->bucket < a->nbuckets && reply && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 8) {
            int64_t left, holders;
            if (int_of(reply->element[6], &left) == 0 && int_of(reply->element[7], &holders) == 0) {
                a->buckets[f->bucket].stock_left = left;
                a->buckets[f->bucket].holders = holders;
                activity_sum_buckets(a);
                if (a->sold_out && activity_status_at(a, clock_wall_ms()) == ACTIVITY_ACTIVE)
                    load_winners(fetch->cache, a);
            }
        }
        free(fetch);
        return;
    }
    if (a && reply && reply->type == REDIS_REPLY_ARRAY) {
        if (reply->elements == 0)
            a->loaded = false;  /* no longer warmed: let the script answer NOT_FOUND */
        else if (activity_from_reply(a, reply) != 0 || adopt_buckets(fetch->cache, a, reply) != 0)
            LOG_WARN("activity %" PRId64 ": malformed activity hash in Redis", a->id);
        else if (a->nbuckets > 1) {
            a->buckets[0].stock_left = a->stock_left;
            a->buckets[0].holders = a->holders;
            activity_sum_buckets(a);
            for (int b = 1; b < a->nbuckets; b++)
                fetch_bucket(fetch->cache, a, b);
        } else if (a->sold_out && activity_status_at(a, clock_wall_ms()) == ACTIVITY_ACTIVE)
            load_winners(fetch->cache, a);  /* an ended sale answers ENDED: no winners needed */
        if (a->loaded && over(a))
            forget_winners(a);
    }
    free(fetch);
}

static void fetch_bucket(struct activity_cache *cache, const struct activity *a, int b)
{
    struct activity_fetch *fetch = malloc(sizeof(*fetch));
    if (!fetch)
        return;
    fetch->cache = cache;
    fetch->id = a->id;
    fetch->bucket = b;
    const struct keys_set *k = b == 0 ? &a->keys : &a->buckets[b].keys;
    const char *argv[] = { k->name[KEYS_ACTIVITY], k->name[KEYS_STOCK], k->name[KEYS_USERS] };
    if (redisconn_eval(cache->redis, LUASCRIPT_ACTIVITY, 3, 0, argv, NULL, on_fetched, fetch) != 0)
        free(fetch);
}

/* Bucket 0 first: its answer carries the bucket list, and asks the other buckets. */
static void fetch_activity(struct activity_cache *cache, const struct activity *a)
{
    fetch_bucket(cache, a, 0);
}

static void on_listed(redisReply *reply, void *privdata)
{
    struct activity_cache *cache = privdata;
    cache->listing = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i < cache->count; i++)
        cache->items[i]->listed = false;
    for (size_t i = 0; i < reply->elements; i++) {
        int64_t id;
        if (reply->element[i]->type != REDIS_REPLY_STRING || parse_id(reply->element[i]->str, &id) != 0)
            continue;
        if (cache->archive)
            archive_forget(cache->archive, id);
        struct activity *a = cache_insert(cache, id);
        if (a) {
            a->listed = true;
            fetch_activity(cache, a);
        } else if (cache->count == ACTIVITY_CACHE_MAX)
            LOG_WARN("activity cache full (%d): activity %" PRId64 " served by Redis alone",
                     ACTIVITY_CACHE_MAX, id);
    }
    for (size_t i = 0; i < cache->count; i++) {
        struct activity *a = cache->items[i];
        if (!a->listed)
            forget_winners(a);  /* no longer warmed (archived): nothing to answer for it */
    }
}

void activity_cache_refresh(struct activity_cache *cache)
{
    if (cache->listing || !redisconn_ready(cache->redis))
        return;
    const char *argv[] = { "SMEMBERS", KEYS_ACTIVITIES };
    if (redisconn_command_argv(cache->redis, 2, argv, NULL, on_listed, cache) == 0)
        cache->listing = true;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    activity_cache_refresh(arg);
}

struct activity_cache *activity_cache_new(struct event_base *base, const struct config *cfg,
                                          struct redisconn *redis)
{
    struct activity_cache *cache = calloc(1, sizeof(*cache));
    if (!cache)
        return NULL;
    cache->base = base;
    cache->cfg = cfg;
    cache->redis = redis;
    cache->timer = event_new(base, -1, EV_PERSIST, on_timer, cache);
    struct timeval tv = clock_timeval_ms(cfg->activity_refresh_ms);
    event_add(cache->timer, &tv);
    return cache;
}

void activity_cache_set_archive(struct activity_cache *cache,
                                struct archive *archive) { cache->archive = archive; }

void activity_cache_free(struct activity_cache *cache)
{
    if (!cache)
        return;
    event_free(cache->timer);
    for (size_t i = 0; i < cache->count; i++) {
        intmap_free(&cache->items[i]->winners);
        free(cache->items[i]->buckets);
        free(cache->items[i]);
    }
    free(cache);
}
