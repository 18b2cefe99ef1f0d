#include "gateway/archive.h"

#include <stdlib.h>
#include <string.h>

#include "common/keys.h"
#include "common/parse.h"

/* A short array searched in order: a few hundred compares cost less than one Redis round
 * trip, and a sale is looked up only by reads that missed Redis or whose sale it holds. */
struct archive {
    struct redisconn *redis;
    const struct config *cfg;
    struct archive_sale items[ARCHIVE_CACHE_MAX];
    uint64_t used[ARCHIVE_CACHE_MAX];  /* when each was last read: the LRU order */
    size_t count;
    uint64_t clock;
};

/* One HGETALL in flight. Freed by its callback. */
struct archive_lookup {
    struct archive *ar;
    int64_t id;
    archive_cb cb;
    void *arg;
};

struct archive *archive_new(struct redisconn *redis, const struct config *cfg)
{
    struct archive *ar = calloc(1, sizeof(*ar));
    if (ar) {
        ar->redis = redis;
        ar->cfg = cfg;
    }
    return ar;
}

void archive_free(struct archive *ar) { free(ar); }

size_t archive_count(const struct archive *ar) { return ar->count; }

static ptrdiff_t index_of(const struct archive *ar, int64_t id)
{
    for (size_t i = 0; i < ar->count; i++)
        if (ar->items[i].id == id)
            return (ptrdiff_t)i;
    return -1;
}

const struct archive_sale *archive_find(struct archive *ar, int64_t id)
{
    ptrdiff_t i = index_of(ar, id);
    if (i < 0)
        return NULL;
    ar->used[i] = ++ar->clock;
    return &ar->items[i];
}

void archive_forget(struct archive *ar, int64_t id)
{
    ptrdiff_t i = index_of(ar, id);
    if (i < 0)
        return;
    ar->count--;
    ar->items[i] = ar->items[ar->count];
    ar->used[i] = ar->used[ar->count];
}

void archive_remember(struct archive *ar, const struct archive_sale *sale)
{
    ptrdiff_t i = index_of(ar, sale->id);
    if (i < 0 && ar->count < ARCHIVE_CACHE_MAX)
        i = (ptrdiff_t)ar->count++;
    if (i < 0) {
        i = 0;
        for (size_t j = 1; j < ar->count; j++)
            if (ar->used[j] < ar->used[i])
                i = (ptrdiff_t)j;
    }
    ar->items[i] = *sale;
    ar->used[i] = ++ar->clock;
}

static bool field_int(const redisReply *v, int64_t *out)
{
    if (v->type != REDIS_REPLY_STRING)
        return false;
    char *end;
    long long n = strtoll(v->str, &end, 10);
    if (end == v->str || *end != '\0')
        return false;
    *out = n;
    return true;
}

int archive_parse(struct archive_sale *sale, int64_t id, const redisReply *reply)
{
    memset(sale, 0, sizeof(*sale));
    sale->id = id;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0)
        return -1;
    bool archived = false;
    bool sale_total = false;   /* a bucketed sale's, over every bucket: it wins over bucket 0's own */
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
        const redisReply *k = reply->element[i], *v = reply->element[i + 1];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(k->str, "archived") == 0)
            archived = field_int(v, &sale->archived_ms);
        else if (strcmp(k->str, "stockLeft") == 0 && !sale_total && !field_int(v, &sale->stock_left))
            sale->stock_left = 0;
        else if (strcmp(k->str, "saleStockLeft") == 0)
            sale_total = field_int(v, &sale->stock_left);
        else if (strcmp(k->str, "status") == 0)
            sale->cancelled = v->type == REDIS_REPLY_STRING && strcmp(v->str, "CANCELLED") == 0;
    }
    return archived ? 1 : 0;
}

static void on_hash(redisReply *reply, void *privdata)
{
    struct archive_lookup *l = privdata;
    struct archive_sale sale;
    int found = archive_parse(&sale, l->id, reply);
    if (found == 1)
        archive_remember(l->ar, &sale);
    l->cb(l->arg, found == 1 ? &sale : NULL, found >= 0);
    free(l);
}

int archive_lookup(struct archive *ar, int64_t id, archive_cb cb, void *arg)
{
    char key[KEYS_LEN];
    struct archive_lookup *l = malloc(sizeof(*l));
    if (!l || keys_activity(key, sizeof(key), ar->cfg, KEYS_ACTIVITY, id) < 0) {
        free(l);
        return -1;
    }
    l->ar = ar;
    l->id = id;
    l->cb = cb;
    l->arg = arg;
    const char *argv[] = { "HGETALL", key };
    if (redisconn_command_argv(ar->redis, 2, argv, NULL, on_hash, l) != 0) {
        free(l);
        return -1;
    }
    return 0;
}
