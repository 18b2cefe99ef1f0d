#include "consumer/batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The capacity to grow to so that need elements fit: doubling, from 16. */
static size_t grown_cap(size_t cap, size_t need)
{
    size_t n = cap ? cap : 16;
    while (n < need)
        n *= 2;
    return n;
}

/* orders, verdicts, accepted, in_db, coupons, refused and parked always share one capacity. */
static int grow_orders(struct batch *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t n = grown_cap(b->cap, need);
    struct orderevent *orders = realloc(b->orders, n * sizeof(*orders));
    if (!orders)
        return -1;
    b->orders = orders;
    enum batch_verdict *verdicts = realloc(b->verdicts, n * sizeof(*verdicts));
    if (!verdicts)
        return -1;
    b->verdicts = verdicts;
    struct orderevent *accepted = realloc(b->accepted, n * sizeof(*accepted));
    if (!accepted)
        return -1;
    b->accepted = accepted;
    unsigned char *in_db = realloc(b->in_db, n);
    if (!in_db)
        return -1;
    b->in_db = in_db;
    struct batch_coupon *coupons = realloc(b->coupons, n * sizeof(*coupons));
    if (!coupons)
        return -1;
    b->coupons = coupons;
    unsigned char *refused = realloc(b->refused, n);
    if (!refused)
        return -1;
    b->refused = refused;
    unsigned char *parked = realloc(b->parked, n);
    if (!parked)
        return -1;
    b->parked = parked;
    b->cap = n;
    return 0;
}

int batch_init(struct batch *b, size_t cap_hint)
{
    memset(b, 0, sizeof(*b));
    if (grow_orders(b, cap_hint) != 0) {
        batch_free(b);
        return -1;
    }
    return 0;
}

static void dead_free(struct batch_dead *d)
{
    if (!d)
        return;
    free(d->payload);
    free(d->key);
    free(d);
}

void batch_reset(struct batch *b)
{
    for (size_t i = 0; i < b->dead_count; i++)
        dead_free(b->dead[i]);
    b->dead_count = 0;
    for (size_t i = 0; i < b->use_count; i++) {
        free(b->use_msgs[i].payload);
        free(b->use_msgs[i].key);
    }
    b->use_count = 0;
    b->count = 0;
    b->accepted_count = 0;
    b->parked_count = 0;
    b->refusal_count = 0;
    b->origin_count = 0;
    b->offset_count = 0;
    b->messages = 0;
    b->duplicates = 0;
}

void batch_free(struct batch *b)
{
    batch_reset(b);
    free(b->orders);
    free(b->verdicts);
    free(b->accepted);
    free(b->in_db);
    free(b->coupons);
    free(b->refused);
    free(b->parked);
    free(b->refusals);
    free(b->origins);
    free(b->uses);
    free(b->use_msgs);
    free(b->use_results);
    free(b->dead);
    free(b->offsets);
    memset(b, 0, sizeof(*b));
}

int batch_add_order(struct batch *b, const struct orderevent *ev, int32_t partition,
                    int64_t offset)
{
    if (grow_orders(b, b->count + 1) != 0)
        return -1;
    if (b->origin_count == b->origin_cap) {
        size_t n = grown_cap(b->origin_cap, b->origin_count + 1);
        struct batch_origin *origins = realloc(b->origins, n * sizeof(*origins));
        if (!origins)
            return -1;
        b->origins = origins;
        b->origin_cap = n;
    }
    struct batch_origin *o = &b->origins[b->origin_count++];
    memcpy(o->order_no, ev->order_no, sizeof(o->order_no));
    o->partition = partition;
    o->offset = offset;
    b->orders[b->count] = *ev;
    b->verdicts[b->count] = BATCH_PENDING;
    b->count++;
    return 0;
}

static void *dup_bytes(const void *src, size_t len)
{
    if (!src || len == 0)
        return NULL;
    void *p = malloc(len);
    if (p)
        memcpy(p, src, len);
    return p;
}

int batch_add_dead(struct batch *b, const void *payload, size_t payload_len, const void *key,
                   size_t key_len, int32_t partition, int64_t offset, const char *error)
{
    if (b->dead_count == b->dead_cap) {
        size_t n = grown_cap(b->dead_cap, b->dead_count + 1);
        struct batch_dead **dead = realloc(b->dead, n * sizeof(*dead));
        if (!dead)
            return -1;
        b->dead = dead;
        b->dead_cap = n;
    }
    struct batch_dead *d = calloc(1, sizeof(*d));
    if (!d)
        return -1;
    d->payload = dup_bytes(payload, payload_len);
    d->key = dup_bytes(key, key_len);
    if ((payload_len && payload && !d->payload) || (key_len && key && !d->key)) {
        dead_free(d);
        return -1;
    }
    d->payload_len = d->payload ? payload_len : 0;
    d->key_len = d->key ? key_len : 0;
    d->partition = partition;
    d->offset = offset;
    snprintf(d->error, sizeof(d->error), "%s", error);
    d->state = BATCH_DEAD_PENDING;
    b->dead[b->dead_count++] = d;
    return 0;
}

int batch_add_use(struct batch *b, const struct redeemevent *ev, const void *payload,
                  size_t payload_len, const void *key, size_t key_len, int32_t partition,
                  int64_t offset)
{
    if (b->use_count == b->use_cap) {
        size_t n = grown_cap(b->use_cap, b->use_count + 1);
        struct redeemevent *uses = realloc(b->uses, n * sizeof(*uses));
        if (!uses)
            return -1;
        b->uses = uses;
        struct batch_use_msg *msgs = realloc(b->use_msgs, n * sizeof(*msgs));
        if (!msgs)
            return -1;
        b->use_msgs = msgs;
        struct batch_use_result *results = realloc(b->use_results, n * sizeof(*results));
        if (!results)
            return -1;
        b->use_results = results;
        b->use_cap = n;
    }
    struct batch_use_msg m = { dup_bytes(payload, payload_len), 0, dup_bytes(key, key_len), 0,
                               partition, offset };
    if ((payload_len && payload && !m.payload) || (key_len && key && !m.key)) {
        free(m.payload);
        free(m.key);
        return -1;
    }
    m.payload_len = m.payload ? payload_len : 0;
    m.key_len = m.key ? key_len : 0;
    b->uses[b->use_count] = *ev;
    b->use_msgs[b->use_count] = m;
    memset(&b->use_results[b->use_count], 0, sizeof(b->use_results[b->use_count]));
    b->use_count++;
    return 0;
}

int batch_dead_use(struct batch *b, size_t i, const char *error)
{
    const struct batch_use_msg *m = &b->use_msgs[i];
    return batch_add_dead(b, m->payload, m->payload_len, m->key, m->key_len, m->partition,
                          m->offset, error);
}

int batch_refuse_order(struct batch *b, size_t i, const char *reason)
{
    if (b->refusal_count == b->refusal_cap) {
        size_t n = grown_cap(b->refusal_cap, b->refusal_count + 1);
        struct batch_refusal *r = realloc(b->refusals, n * sizeof(*r));
        if (!r)
            return -1;
        b->refusals = r;
        b->refusal_cap = n;
    }
    struct batch_refusal *r = &b->refusals[b->refusal_count++];
    r->index = i;
    snprintf(r->reason, sizeof(r->reason), "%s", reason);
    b->refused[i] = BATCH_REFUSED;
    return 0;
}

void batch_clear_refusals(struct batch *b)
{
    if (b->accepted_count > 0)
        memset(b->refused, 0, b->accepted_count);
    b->refusal_count = 0;
}

/* Only refused and parked orders are looked up, rarely: a linear search is enough. A
 * repeat keeps the first arrival. */
static const struct batch_origin *origin_of(const struct batch *b, const char *order_no)
{
    for (size_t i = 0; i < b->origin_count; i++)
        if (strcmp(b->origins[i].order_no, order_no) == 0)
            return &b->origins[i];
    return NULL;
}

int batch_dead_order(struct batch *b, size_t i, const char *error)
{
    const struct orderevent *ev = &b->accepted[i];
    char payload[512];
    int len = orderevent_encode(ev, payload, sizeof(payload));
    if (len < 0)
        return -1;
    const struct batch_origin *o = origin_of(b, ev->order_no);
    return batch_add_dead(b, payload, (size_t)len, NULL, 0, o ? o->partition : -1,
                          o ? o->offset : -1, error);
}

void batch_origin(const struct batch *b, const char *order_no, int32_t *partition, int64_t *offset)
{
    const struct batch_origin *o = origin_of(b, order_no);
    *partition = o ? o->partition : -1;
    *offset = o ? o->offset : -1;
}

int batch_note_offset(struct batch *b, int32_t partition, int64_t offset)
{
    for (size_t i = 0; i < b->offset_count; i++) {
        if (b->offsets[i].partition == partition) {
            if (offset > b->offsets[i].offset)
                b->offsets[i].offset = offset;
            return 0;
        }
    }
    if (b->offset_count == b->offset_cap) {
        size_t n = grown_cap(b->offset_cap, b->offset_count + 1);
        struct batch_offset *offsets = realloc(b->offsets, n * sizeof(*offsets));
        if (!offsets)
            return -1;
        b->offsets = offsets;
        b->offset_cap = n;
    }
    b->offsets[b->offset_count].partition = partition;
    b->offsets[b->offset_count].offset = offset;
    b->offset_count++;
    return 0;
}

int batch_order_cmp(const struct orderevent *a, const struct orderevent *b)
{
    if (a->activity_id != b->activity_id)
        return a->activity_id < b->activity_id ? -1 : 1;
    int bucket = strcmp(a->bucket_tag, b->bucket_tag);  /* reservation.c's calls go per bucket */
    if (bucket != 0)
        return bucket;
    if (a->coupon_id != b->coupon_id)
        return a->coupon_id < b->coupon_id ? -1 : 1;
    return strcmp(a->order_no, b->order_no);
}

static int order_qsort_cmp(const void *pa, const void *pb)
{
    return batch_order_cmp(pa, pb);
}

void batch_seal(struct batch *b)
{
    if (b->count == 0)
        return;
    qsort(b->orders, b->count, sizeof(*b->orders), order_qsort_cmp);
    size_t kept = 1;
    for (size_t i = 1; i < b->count; i++) {
        if (strcmp(b->orders[i].order_no, b->orders[kept - 1].order_no) == 0) {
            b->duplicates++;
            continue;
        }
        b->orders[kept++] = b->orders[i];
    }
    b->count = kept;
    for (size_t i = 0; i < b->count; i++)
        b->verdicts[i] = BATCH_PENDING;
}

size_t batch_run_end(const struct orderevent *orders, size_t count, size_t start)
{
    size_t end = start;
    while (end < count && orders[end].activity_id == orders[start].activity_id)
        end++;
    return end;
}

size_t batch_bucket_run_end(const struct orderevent *orders, size_t count, size_t start)
{
    size_t end = batch_run_end(orders, count, start);
    size_t i = start;
    while (i < end && strcmp(orders[i].bucket_tag, orders[start].bucket_tag) == 0)
        i++;
    return i;
}

size_t batch_coupon_run_end(const struct orderevent *orders, size_t count, size_t start)
{
    size_t end = start;
    while (end < count && orders[end].activity_id == orders[start].activity_id &&
           orders[end].coupon_id == orders[start].coupon_id)
        end++;
    return end;
}

void batch_collect_accepted(struct batch *b)
{
    b->accepted_count = 0;
    for (size_t i = 0; i < b->count; i++) {
        if (b->verdicts[i] != BATCH_ACCEPTED)
            continue;
        b->accepted[b->accepted_count] = b->orders[i];
        b->in_db[b->accepted_count] = 0;
        b->coupons[b->accepted_count] = (struct batch_coupon){ 0, 0 };
        b->refused[b->accepted_count] = 0;
        b->parked[b->accepted_count] = 0;
        b->accepted_count++;
    }
    b->refusal_count = 0;
}

int batch_is_empty(const struct batch *b)
{
    return b->count == 0 && b->use_count == 0 && b->dead_count == 0 && b->offset_count == 0;
}
