#include "gateway/salestats.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

/* The last answer of one sale. Entries are kept for every sale ever watched (a handful at
 * once) and only marked stale, so a callback never finds its entry gone. */
struct salestats_entry {
    int64_t id;
    bool valid;  /* the last read answered; false while Redis is away or the sale is over */
    struct salestats_sale sale;
    /* A bucketed sale (bucket.h): one read per bucket, summed here until the last one. */
    int waiting;
    bool partial_ok;
    struct salestats_sale partial;
};

struct salestats {
    const struct config *cfg;
    struct redisconn *redis;
    struct activity_cache *activities;
    struct event *timer;  /* NULL when the interval is 0 */
    struct salestats_entry *entries;  /* owned */
    size_t count, cap;
    size_t outstanding;  /* reads of the current pass not yet answered */
};

/* One salestats.lua call (on one bucket); freed by its callback. */
struct salestats_call {
    struct salestats *stats;
    int64_t id;
    bool bucketed;
};

int64_t salestats_imbalance(const struct salestats_sale *s)
{
    return s->left + s->reserved + s->queued + s->claimed + s->sold + s->returned - s->stock;
}

int salestats_from_reply(struct salestats_sale *sale, const redisReply *reply)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 8)
        return -1;
    int64_t v[8];
    for (size_t i = 0; i < 8; i++) {
        if (reply->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
        v[i] = reply->element[i]->integer;
    }
    *sale = (struct salestats_sale){ .stock = v[0], .left = v[1], .reserved = v[2], .queued = v[3],
                                     .claimed = v[4], .sold = v[5], .returned = v[6], .oldest_ms = v[7] };
    return 0;
}

static struct salestats_entry *entry_of(struct salestats *stats, int64_t id, bool create)
{
    for (size_t i = 0; i < stats->count; i++)
        if (stats->entries[i].id == id)
            return &stats->entries[i];
    if (!create)
        return NULL;
    if (stats->count == stats->cap) {
        size_t cap = stats->cap ? stats->cap * 2 : 8;
        struct salestats_entry *grown = realloc(stats->entries, cap * sizeof(*grown));
        if (!grown)
            return NULL;
        stats->entries = grown;
        stats->cap = cap;
    }
    struct salestats_entry *e = &stats->entries[stats->count++];
    memset(e, 0, sizeof(*e));
    e->id = id;
    return e;
}

int salestats_apply(struct salestats *stats, int64_t id, const redisReply *reply)
{
    struct salestats_entry *e = entry_of(stats, id, true);
    if (!e)
        return -1;
    e->valid = salestats_from_reply(&e->sale, reply) == 0;
    if (!e->valid && reply && reply->type == REDIS_REPLY_ERROR)
        LOG_WARN("activity %" PRId64 ": salestats.lua: %s", id, reply->str);
    return e->valid ? 0 : -1;
}

/* Adds one bucket's answer: every bucket's hash holds the sale's whole initial stock. */
static void add_bucket(struct salestats_entry *e, const redisReply *reply)
{
    struct salestats_sale one;
    if (salestats_from_reply(&one, reply) != 0) {
        e->partial_ok = false;
        return;
    }
    struct salestats_sale *p = &e->partial;
    p->stock = one.stock;
    p->left += one.left;
    p->reserved += one.reserved;
    p->queued += one.queued;
    p->claimed += one.claimed;
    p->sold = p->sold == SALESTATS_UNKNOWN || one.sold == SALESTATS_UNKNOWN ? SALESTATS_UNKNOWN
    : p->sold + one.sold;
    p->returned += one.returned;
    if (one.oldest_ms >= 0 && (p->oldest_ms < 0 || one.oldest_ms < p->oldest_ms))
        p->oldest_ms = one.oldest_ms;
}

static void on_read(redisReply *reply, void *privdata)
{
    struct salestats_call *call = privdata;
    call->stats->outstanding--;
    struct salestats_entry *e = call->bucketed ? entry_of(call->stats, call->id, false) : NULL;
    if (e) {
        add_bucket(e, reply);
        if (--e->waiting == 0) {
            e->valid = e->partial_ok;
            e->sale = e->partial;
        }
    } else if (!call->bucketed) {
        salestats_apply(call->stats, call->id, reply);
    }
    free(call);
}

static bool watched(const struct activity *a, int64_t now_ms)
{
    return a->loaded && a->listed && now_ms < a->end_ms + SALESTATS_AFTER_END_MS;
}

static void read_all(struct salestats *stats)
{
    int64_t now_ms = clock_wall_ms();
    size_t n = activity_cache_count(stats->activities);
    for (size_t i = 0; i < n; i++) {
        struct activity *a = activity_cache_at(stats->activities, i);
        struct salestats_entry *e = entry_of(stats, a->id, watched(a, now_ms));
        if (!e)
            continue;
        if (!watched(a, now_ms) || !redisconn_ready(stats->redis)) {
            e->valid = false;
            continue;
        }
        /* Units in transit between buckets are in no bucket's terms: a transfer under
         * way shows as a short imbalance. */
        bool bucketed = a->nbuckets > 1;
        if (bucketed) {
            e->waiting = 0;
            e->partial_ok = true;
            e->partial = (struct salestats_sale){ .oldest_ms = -1 };
        }
        for (int b = 0; b < a->nbuckets; b++) {
            const struct keys_set *k = b == 0 ? &a->keys : &a->buckets[b].keys;
            struct salestats_call *call = malloc(sizeof(*call));
            if (!call)
                return;
            call->stats = stats;
            call->id = a->id;
            call->bucketed = bucketed;
            const char *argv[] = { k->name[KEYS_ACTIVITY], k->name[KEYS_STOCK], k->name[KEYS_RESERVED],
                                   k->name[KEYS_QUEUED], k->name[KEYS_CLAIMED] };
            if (redisconn_eval(stats->redis, LUASCRIPT_SALESTATS, 5, 0, argv, NULL, on_read, call) != 0) {
                free(call);
                e->valid = false;
                e->partial_ok = false;
                break;
            }
            e->waiting += bucketed ? 1 : 0;
            stats->outstanding++;
        }
    }
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct salestats *stats = arg;
    /* A pass still unanswered means Redis is slow: do not pile more reads on it. */
    if (stats->outstanding == 0)
        read_all(stats);
}

struct salestats *salestats_new(struct event_base *base, const struct config *cfg, struct redisconn *redis,
                                struct activity_cache *activities)
{
    struct salestats *stats = calloc(1, sizeof(*stats));
    if (!stats)
        return NULL;
    stats->cfg = cfg;
    stats->redis = redis;
    stats->activities = activities;
    if (cfg->sale_stats_interval_ms > 0) {
        stats->timer = event_new(base, -1, EV_PERSIST, on_timer, stats);
        struct timeval tv = clock_timeval_ms(cfg->sale_stats_interval_ms);
        if (!stats->timer || event_add(stats->timer, &tv) != 0) {
            salestats_free(stats);
            return NULL;
        }
    }
    return stats;
}

void salestats_free(struct salestats *stats)
{
    if (!stats)
        return;
    if (stats->timer)
        event_free(stats->timer);
    free(stats->entries);
    free(stats);
}

static void family(struct textbuf *t, const char *name, const char *help)
{
    textbuf_printf(t, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

void salestats_render(const struct salestats *stats, struct textbuf *t, int64_t now_ms)
{
    family(t, "seckill_reservation_timeout_seconds",
           "seckill.pre-reduce-timeout: a reservation not in Kafka this long is expired by the reaper");
    textbuf_printf(t, "seckill_reservation_timeout_seconds %" PRId64 "\n", stats->cfg->pre_reduce_timeout);

    family(t, "seckill_sale_stock", "Initial stock of the sale");
    for (size_t i = 0; i < stats->count; i++)
        if (stats->entries[i].valid)
            textbuf_printf(t, "seckill_sale_stock{activity=\"%" PRId64 "\"} %" PRId64 "\n",
                           stats->entries[i].id, stats->entries[i].sale.stock);

    family(t, "seckill_sale_units",
           "Units of the sale's stock by state, read in one Redis script from counters: left to sell, "
           "reserved (not yet in Kafka), queued (in Kafka), claimed (being written to MySQL), sold (SUCCESS; "
           "absent for a sale warmed before the counter existed), returned (cancel)");
    static const char *const states[] = { "left", "reserved", "queued", "claimed", "sold", "returned" };
    for (size_t i = 0; i < stats->count; i++) {
        const struct salestats_entry *e = &stats->entries[i];
        if (!e->valid)
            continue;
        const int64_t v[] = { e->sale.left, e->sale.reserved, e->sale.queued,
                              e->sale.claimed, e->sale.sold, e->sale.returned };
        for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++)
            if (e->sale.sold != SALESTATS_UNKNOWN || strcmp(states[s], "sold") != 0)
                textbuf_printf(t, "seckill_sale_units{activity=\"%" PRId64 "\",state=\"%s\"} %" PRId64 "\n",
                               e->id, states[s], v[s]);
    }

    family(t, "seckill_sale_imbalance",
           "Sum of seckill_sale_units minus the initial stock: 0 while conservation (I3) holds");
    for (size_t i = 0; i < stats->count; i++)
        if (stats->entries[i].valid && stats->entries[i].sale.sold != SALESTATS_UNKNOWN)
            textbuf_printf(t, "seckill_sale_imbalance{activity=\"%" PRId64 "\"} %" PRId64 "\n",
                           stats->entries[i].id, salestats_imbalance(&stats->entries[i].sale));

    family(t, "seckill_sale_oldest_reservation_seconds",
           "Age of the sale's oldest reservation not yet in Kafka (0: none)");
    for (size_t i = 0; i < stats->count; i++) {
        const struct salestats_entry *e = &stats->entries[i];
        if (!e->valid)
            continue;
        int64_t age_ms = e->sale.oldest_ms < 0 || now_ms < e->sale.oldest_ms ? 0 : now_ms - e->sale.oldest_ms;
        textbuf_printf(t, "seckill_sale_oldest_reservation_seconds{activity=\"%" PRId64 "\"} "
                       "%" PRId64 ".%03" PRId64 "\n", e->id, age_ms / 1000, age_ms % 1000);
    }
}
