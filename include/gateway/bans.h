#ifndef SK_BANS_H
#define SK_BANS_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/banrecord.h"
#include "common/config.h"
#include "gateway/redisconn.h"

/* The manual bans (seckillctl ban, docs/protection.md) this gateway enforces: the hash
 * KEYS_BANS (banrecord.h) held in memory and read again every seckill.activity-refresh-ms
 * (the whole hash only when its version field changed, and every 60th refresh anyway, a
 * minute by default, for a hand edit in Redis). A request is checked before any Redis
 * call: a user in O(1) (a hash map from user to that user's bans), an address against
 * each banned range, a few. Redis away: the last list read stays in force. A ban that has
 * ended is ignored at once, whether or not Redis still holds it. */

struct bans;

/* base and redis NULL: no timer and no Redis (the unit tests feed bans_replace). */
struct bans *bans_new(struct event_base *base, const struct config *cfg, struct redisconn *redis);
void bans_free(struct bans *b);
/* Reads the hash now instead of at the next tick (after a reconnect). */
void bans_refresh(struct bans *b);

/* Replaces the bans in force with n records: fields[i] the ban id, values[i] its text
 * (banrecord.h); records malformed or ended by now_ms are left out, and the version field
 * becomes the list's version. Returns the number kept, or -1 out of memory (the old list
 * stays). */
int bans_replace(struct bans *b, size_t n, const char *const *fields, const char *const *values,
                 int64_t now_ms);
/* Bans in force at now_ms, as of the last read (the gauge seckill_bans_in_force). */
size_t bans_in_force(const struct bans *b, int64_t now_ms);

/* The ban that keeps a request out. */
struct bans_hit {
    int64_t id;
    enum banrecord_kind kind;
    bool every_sale;        /* activity 0 */
    int64_t end_ms;
};
/* Whether user_id (0: none) or the client address ip (clientip.h's text, NULL: none) is
 * banned from activity_id at now_ms; *hit is the ban that ends last. */
bool bans_find(const struct bans *b, int64_t user_id, const char *ip, int64_t activity_id, int64_t now_ms,
               struct bans_hit *hit);
/* bans_find for an HTTP request (its client address as http.trust-forwarded-for says; b
 * NULL: none), counted in seckill_bans_refused_total: message and retry_after (whole seconds to the
 * ban's end, 1 to BANS_RETRY_AFTER_MAX) are the 429 BLOCKED answer's. */
#define BANS_RETRY_AFTER_MAX 3600
bool bans_refused(const struct bans *b, struct evhttp_request *req, int64_t user_id, int64_t activity_id,
                  const char **message, int64_t *retry_after);

#endif
