#include "gateway/bans.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/intmap.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/parse.h"
#include "gateway/clientip.h"
#include "gateway/metrics.h"

/* The whole hash is read at least once in this many refresh ticks, even when its version
 * says nothing changed: a field written or removed by hand in Redis takes effect too. */
#define BANS_WHOLE_READ_TICKS 60
#define BANS_VERSION_LEN 64

struct bans_entry {
    int64_t id;
    struct banrecord r;
};

/* One list as read: the user bans sorted by user, so that a user's bans lie side by side
 * and the map finds the first; the address bans, checked one by one. */
struct bans_list {
    struct bans_entry *users;
    size_t nusers;
    struct intmap first;    /* user id -> index of the user's first ban in users */
    struct bans_entry *ranges;
    size_t nranges;
};

struct bans {
    const struct config *cfg;
    struct redisconn *redis;
    struct event *timer;
    struct bans_list list;
    char version[BANS_VERSION_LEN];  /* the version field of the list held, "" for none */
    bool read_once;
    bool reading;           /* a command is in flight */
    int ticks;              /* since the last whole read */
};

static void bans_list_free(struct bans_list *l)
{
    free(l->users);
    free(l->ranges);
    intmap_free(&l->first);
    memset(l, 0, sizeof(*l));
    intmap_init(&l->first);
}

static int bans_by_user(const void *a, const void *b)
{
    const struct bans_entry *x = a, *y = b;
    if (x->r.user_id != y->r.user_id)
        return x->r.user_id < y->r.user_id ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int bans_replace(struct bans *b, size_t n, const char *const *fields, const char *const *values,
                 int64_t now_ms)
{
    struct bans_list l;
    memset(&l, 0, sizeof(l));
    intmap_init(&l.first);
    l.users = malloc((n ? n : 1) * sizeof(*l.users));
    l.ranges = malloc((n ? n : 1) * sizeof(*l.ranges));
    if (!l.users || !l.ranges) {
        bans_list_free(&l);
        return -1;
    }
    size_t malformed = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(fields[i], BANRECORD_VERSION) == 0) {
            snprintf(b->version, sizeof(b->version), "%s", values[i]);
            continue;
        }
        struct bans_entry e;
        if (parse_id(fields[i], &e.id) != 0 || banrecord_decode(values[i], &e.r) != 0) {
            malformed++;
            continue;
        }
        if (e.r.end_ms <= now_ms)
            continue;  /* ended: seckillctl removes it from Redis at its next ban command */
        if (e.r.kind == BANRECORD_USER)
            l.users[l.nusers++] = e;
        else
            l.ranges[l.nranges++] = e;
    }
    qsort(l.users, l.nusers, sizeof(*l.users), bans_by_user);
    for (size_t i = 0; i < l.nusers; i++)
        if ((i == 0 || l.users[i - 1].r.user_id != l.users[i].r.user_id) &&
            intmap_put(&l.first, l.users[i].r.user_id, i) != 0) {
            bans_list_free(&l);
            return -1;
        }
    if (malformed)
        LOG_WARN("%zu malformed field(s) in %s ignored", malformed, KEYS_BANS);
    bans_list_free(&b->list);
    b->list = l;
    return (int)(l.nusers + l.nranges);
}

static void bans_consider(const struct bans_entry *e, int64_t activity_id, int64_t now_ms, bool *found,
                          struct bans_hit *hit)
{
    if (!banrecord_applies(&e->r, activity_id, now_ms) || (*found && e->r.end_ms <= hit->end_ms))
        return;
    *found = true;
    hit->id = e->id;
    hit->kind = e->r.kind;
    hit->every_sale = e->r.activity_id == 0;
    hit->end_ms = e->r.end_ms;
}

bool bans_find(const struct bans *b, int64_t user_id, const char *ip, int64_t activity_id, int64_t now_ms,
               struct bans_hit *hit)
{
    const struct bans_list *l = &b->list;
    bool found = false;
    uint64_t at;
    if (user_id > 0 && l->nusers && intmap_get(&l->first, user_id, &at))
        for (size_t i = (size_t)at; i < l->nusers && l->users[i].r.user_id == user_id; i++)
            bans_consider(&l->users[i], activity_id, now_ms, &found, hit);
    int family;
    uint8_t addr[16];
    if (ip && l->nranges && banrecord_address(ip, &family, addr) == 0)
        for (size_t i = 0; i < l->nranges; i++)
            if (banrecord_cidr_contains(&l->ranges[i].r.cidr, family, addr))
                bans_consider(&l->ranges[i], activity_id, now_ms, &found, hit);
    return found;
}

size_t bans_in_force(const struct bans *b, int64_t now_ms)
{
    size_t n = 0;
    for (size_t i = 0; b && i < b->list.nusers; i++)
        n += now_ms >= b->list.users[i].r.start_ms && now_ms < b->list.users[i].r.end_ms;
    for (size_t i = 0; b && i < b->list.nranges; i++)
        n += now_ms >= b->list.ranges[i].r.start_ms && now_ms < b->list.ranges[i].r.end_ms;
    return n;
}

bool bans_refused(const struct bans *b, struct evhttp_request *req, int64_t user_id, int64_t activity_id,
                  const char **message, int64_t *retry_after)
{
    if (!b || (b->list.nusers == 0 && b->list.nranges == 0))
        return false;  /* the usual case: no ban at all costs nothing */
    char ip[INET6_ADDRSTRLEN + 8];
    if (b->list.nranges)
        clientip_of(b->cfg, req, ip, sizeof(ip));
    int64_t now = clock_wall_ms();
    struct bans_hit hit;
    if (!bans_find(b, user_id, b->list.nranges ? ip : NULL, activity_id, now, &hit))
        return false;
    metrics_inc(METRIC_BANS_REFUSED);
    static const char *const messages[2][2] = {
        { "your account is banned from this sale", "your account is banned from every sale" },
        { "your address is banned from this sale", "your address is banned from every sale" },
    };
    *message = messages[hit.kind == BANRECORD_USER ? 0 : 1][hit.every_sale ? 1 : 0];
    /* Whole seconds to the end; a long ban says come back in an hour, so that a client
     * that obeys Retry-After learns within the hour of a ban lifted early. */
    int64_t seconds = (hit.end_ms - now + 999) / 1000;
    *retry_after = seconds < 1 ? 1 : seconds > BANS_RETRY_AFTER_MAX ? BANS_RETRY_AFTER_MAX : seconds;
    return true;
}

static void bans_read(struct bans *b, bool whole);

static void on_read_all(redisReply *reply, void *privdata)
{
    struct bans *b = privdata;
    b->reading = false;
    if (!reply || reply->type != REDIS_REPLY_ARRAY)
        return;  /* the list held stays in force; the next tick tries again */
    size_t n = reply->elements / 2;
    const char **fields = malloc((n ? n : 1) * sizeof(*fields));
    const char **values = malloc((n ? n : 1) * sizeof(*values));
    size_t kept = 0;
    for (size_t i = 0; fields && values && i < n; i++) {
        const redisReply *f = reply->element[2 * i], *v = reply->element[2 * i + 1];
        if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING) {
            fields[kept] = f->str;
            values[kept++] = v->str;
        }
    }
    char before[BANS_VERSION_LEN];
    snprintf(before, sizeof(before), "%s", b->version);
    b->version[0] = '\0';  /* a hash without the field has none */
    int held = fields && values ? bans_replace(b, kept, fields, values, clock_wall_ms()) : -1;
    free(fields);
    free(values);
    if (held < 0) {
        snprintf(b->version, sizeof(b->version), "%s", before);
        LOG_WARN("out of memory reading %s; the bans read before stay in force", KEYS_BANS);
        return;
    }
    if (!b->read_once || strcmp(before, b->version) != 0)
        LOG_INFO("%d manual ban(s) in force from %s", held, KEYS_BANS);
    b->read_once = true;
    b->ticks = 0;
}

static void on_version(redisReply *reply, void *privdata)
{
    struct bans *b = privdata;
    b->reading = false;
    if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_NIL))
        return;
    const char *version = reply->type == REDIS_REPLY_STRING ? reply->str : "";
    if (strcmp(version, b->version) != 0)
        bans_read(b, true);
}

static void bans_read(struct bans *b, bool whole)
{
    if (!b->redis || b->reading || !redisconn_ready(b->redis))
        return;
    whole = whole || !b->read_once || b->ticks >= BANS_WHOLE_READ_TICKS;
    const char *all[] = { "HGETALL", KEYS_BANS };
    const char *version[] = { "HGET", KEYS_BANS, BANRECORD_VERSION };
    int rc = whole ? redisconn_command_argv(b->redis, 2, all, NULL, on_read_all, b)
                   : redisconn_command_argv(b->redis, 3, version, NULL, on_version, b);
    if (rc == 0)
        b->reading = true;
}

void bans_refresh(struct bans *b) { bans_read(b, true); }

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct bans *b = arg;
    b->ticks++;
    bans_read(b, false);
}

struct bans *bans_new(struct event_base *base, const struct config *cfg, struct redisconn *redis)
{
    struct bans *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->cfg = cfg;
    b->redis = redis;
    intmap_init(&b->list.first);
    if (base) {
        b->timer = event_new(base, -1, EV_PERSIST, on_timer, b);
        struct timeval tv = clock_timeval_ms(cfg->activity_refresh_ms);
        if (!b->timer || event_add(b->timer, &tv) != 0) {
            bans_free(b);
            return NULL;
        }
    }
    return b;
}

void bans_free(struct bans *b)
{
    if (!b)
        return;
    if (b->timer)
        event_free(b->timer);
    bans_list_free(&b->list);
    free(b);
}
