#include "consumer/autoarchive.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/keys.h"
#include "common/log.h"
#include "consumer/backend.h"
#include "consumer/consumer.h"
#include "store/archive.h"

/* Candidates read per pass: more than AUTOARCHIVE_PER_PASS, so that sales refused lately
 * do not hide the ones after them. */
#define AUTOARCHIVE_CANDIDATES 64
#define AUTOARCHIVE_SKIP_MAX 64
/* The lock outlives a pass (a sale of a million orders is read in a few seconds). */
#define AUTOARCHIVE_LOCK_MS "120000"

struct autoarchive_skip {
    size_t n;
    struct {
        int64_t id;
        int64_t until_ms;   /* monotonic */
    } item[AUTOARCHIVE_SKIP_MAX];
};

void autoarchive_free(struct consumer *c)
{
    free(c->archive_skip);
    c->archive_skip = NULL;
}

static bool autoarchive_skipped(struct autoarchive_skip *s, int64_t id, int64_t now)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->item[i].id != id)
            continue;
        if (now < s->item[i].until_ms)
            return true;
        s->item[i] = s->item[--s->n];
        return false;
    }
    return false;
}

static void autoarchive_skip(struct autoarchive_skip *s, int64_t id, int64_t now)
{
    size_t i = 0;
    while (i < s->n && s->item[i].id != id)
        i++;
    if (i == s->n) {
        if (s->n == AUTOARCHIVE_SKIP_MAX)
            i = 0;   /* the oldest entry is the one to forget: it is retried soonest */
        else
            s->n++;
    }
    s->item[i].id = id;
    s->item[i].until_ms = now + AUTOARCHIVE_RETRY_MS;
}

static redisReply *autoarchive_cmd(struct consumer *c, int argc, const char **argv)
{
    char err[256];
    redisReply *r = redisroute_argv(c->redis, argc, argv, NULL, 1, err, sizeof(err));
    if (!r) {
        LOG_WARN("archive: redis %s: %s", argv[0], err);
        backend_redis_drop(c);
    }
    return r;
}

/* SET NX PX: true when this consumer holds the lock now. With renew, a lock this consumer
 * holds already gets its TTL again (GET then PEXPIRE is not atomic: should the lock pass to
 * another consumer in between, both work for a while, which every step here allows). */
static bool autoarchive_lock(struct consumer *c, const char *key, const char *me, const char *ttl_ms,
                             bool renew)
{
    const char *set[] = { "SET", key, me, "NX", "PX", ttl_ms };
    redisReply *r = autoarchive_cmd(c, 6, set);
    bool held = r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    if (held || !renew || !c->redis)
        return held;
    const char *get[] = { "GET", key };
    r = autoarchive_cmd(c, 2, get);
    held = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, me) == 0;
    if (r)
        freeReplyObject(r);
    if (!held || !c->redis)
        return false;
    const char *pexpire[] = { "PEXPIRE", key, ttl_ms };
    if ((r = autoarchive_cmd(c, 3, pexpire)))
        freeReplyObject(r);
    return true;
}

/* Frees the lock if it is still ours. GET then DEL is not atomic, but the lock's TTL is far
 * longer than the two commands: it cannot have passed to another consumer between them. */
static void autoarchive_unlock(struct consumer *c, const char *key, const char *me)
{
    if (!c->redis)
        return;
    const char *get[] = { "GET", key };
    redisReply *r = autoarchive_cmd(c, 2, get);
    bool ours = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, me) == 0;
    if (r)
        freeReplyObject(r);
    if (!ours)
        return;
    const char *del[] = { "DEL", key };
    if ((r = autoarchive_cmd(c, 2, del)))
        freeReplyObject(r);
}

static void autoarchive_me(char *me, size_t len)
{
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    snprintf(me, len, "%s:%ld", host, (long)getpid());
}

int autoarchive_run(struct consumer *c)
{
    int64_t after = c->cfg.consumer_archive_after_ms;
    if (after == 0)
        return 0;
    char err[512];
    if (backend_redis(c, err, sizeof(err)) != 0 || backend_db(c, err, sizeof(err)) != 0) {
        LOG_WARN("archive: %s", err);
        return -1;
    }
    if (!c->archive_skip && !(c->archive_skip = calloc(1, sizeof(*c->archive_skip))))
        return -1;
    int64_t ids[AUTOARCHIVE_CANDIDATES];
    int n = archive_due(c->db, clock_wall_ms(), after, ids, AUTOARCHIVE_CANDIDATES, err, sizeof(err));
    if (n < 0) {
        LOG_WARN("archive: %s", err);
        backend_db_drop(c);
        return -1;
    }
    int64_t mono = clock_mono_ms();
    int due = 0;
    for (int i = 0; i < n; i++)
        if (!autoarchive_skipped(c->archive_skip, ids[i], mono))
            ids[due++] = ids[i];
    if (due == 0)
        return 0;
    char me[96];
    autoarchive_me(me, sizeof(me));
    if (!autoarchive_lock(c, KEYS_ARCHIVE_LOCK, me, AUTOARCHIVE_LOCK_MS, false))
        return 0;   /* another consumer archives now */
    int archived = 0;
    for (int i = 0, tried = 0; i < due && tried < AUTOARCHIVE_PER_PASS && c->redis && c->db; i++, tried++) {
        struct archive_result res;
        int rc = archive_activity(c->db, c->redis, &c->scripts, &c->cfg, ids[i], clock_wall_ms(), &res, err,
                                  sizeof(err));
        if (rc == ARCHIVE_DONE) {
            archived++;
            LOG_INFO("archive: activity %" PRId64 " archived: %" PRId64 " SUCCESS and %" PRId64 " FAILED "
                     "orders in MySQL, %" PRId64 " Redis keys removed", ids[i], res.orders, res.failed,
                     res.keys_removed);
        } else if (rc == ARCHIVE_REFUSED || rc == ARCHIVE_MISSING) {
            LOG_WARN("archive: activity %" PRId64 " not archived: %s (tried again in %d min)", ids[i], err,
                     AUTOARCHIVE_RETRY_MS / 60000);
            autoarchive_skip(c->archive_skip, ids[i], mono);
        } else {
            /* MySQL or Redis away: the connections are dropped and the next pass resumes. */
            LOG_WARN("archive: activity %" PRId64 ": %s", ids[i], err);
            backend_redis_drop(c);
            backend_db_drop(c);
            break;
        }
    }
    autoarchive_unlock(c, KEYS_ARCHIVE_LOCK, me);
    return archived;
}

/* The coupons' walk runs in the consumer's loop, between batches: each pass gives it this
 * long, a few pages, and the walk goes on at the next pass. */
#define AUTOARCHIVE_COUPON_BUDGET_MS 50
/* Renewed at every pass of the consumer walking; a consumer gone frees it within this. */
#define AUTOARCHIVE_COUPON_LOCK_MS "30000"

int autoarchive_coupons(struct consumer *c, bool look)
{
    int64_t after = c->cfg.consumer_coupon_archive_after_ms;
    struct couponarchive_walk *w = &c->coupon_walk;
    if (after == 0 || (!look && w->coupon_id == 0))
        return 0;
    char err[512];
    if (backend_redis(c, err, sizeof(err)) != 0 || backend_db(c, err, sizeof(err)) != 0) {
        LOG_WARN("coupon archive: %s", err);
        return -1;
    }
    if (w->coupon_id == 0) {
        int64_t id;
        int found = couponarchive_due(c->db, clock_wall_ms(), after, &id, err, sizeof(err));
        if (found < 0) {
            LOG_WARN("coupon archive: %s", err);
            backend_db_drop(c);
            return -1;
        }
        if (found == 0)
            return 0;
        couponarchive_begin(w, id);
    }
    char me[96];
    autoarchive_me(me, sizeof(me));
    if (!autoarchive_lock(c, KEYS_COUPON_ARCHIVE_LOCK, me, AUTOARCHIVE_COUPON_LOCK_MS, true)) {
        couponarchive_begin(w, 0);   /* another consumer walks; looked at again next pass */
        return 0;
    }
    int64_t start = clock_mono_ms();
    int rc;
    do
        rc = couponarchive_step(c->db, c->redis, w, clock_wall_ms(), err, sizeof(err));
    while (rc == COUPONARCHIVE_MORE && clock_mono_ms() - start < AUTOARCHIVE_COUPON_BUDGET_MS);
    if (rc == COUPONARCHIVE_ERROR) {
        LOG_WARN("coupon archive: coupon %" PRId64 ": %s (goes on at the next pass)", w->coupon_id, err);
        if (mysql_errno(c->db) != 0)
            backend_db_drop(c);
        return -1;
    }
    if (rc == COUPONARCHIVE_DONE) {
        LOG_INFO("coupon archive: coupon %" PRId64 ": the records of %" PRId64 " user coupons left Redis (%"
                 PRId64 " fields)", w->coupon_id, w->user_coupons, w->fields);
        couponarchive_begin(w, 0);
        autoarchive_unlock(c, KEYS_COUPON_ARCHIVE_LOCK, me);
        return 1;
    }
    return 0;
}
