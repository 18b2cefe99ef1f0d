#include "gateway/tokenapi.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"
#include "gateway/archive.h"
#include "gateway/auth.h"
#include "gateway/bans.h"
#include "gateway/httpparams.h"
#include "gateway/pending.h"
#include "gateway/purchasetoken.h"
#include "gateway/reply.h"

/* A token asked for a sale the cache does not hold, waiting on archive.h's lookup: an
 * archived sale is refused as it was before the archive. Freed by the lookup's callback;
 * pending.h answers it first at the deadline or shutdown (and clears `http`). */
struct token_wait {
    struct evhttp_request *http;
    struct pending p;
};

static void refuse_archived(struct evhttp_request *req, const struct archive_sale *sale)
{
    if (sale->cancelled)
        reply_error(req, REPLY_CANCELLED, "the sale was cancelled", 0, NULL, NULL);
    else
        reply_error(req, REPLY_ENDED, "the sale has ended", 0, NULL, NULL);
}

static void on_archive(void *arg, const struct archive_sale *sale, bool ok)
{
    struct token_wait *w = arg;
    if (!ok)
        reply_error(w->http, REPLY_UNAVAILABLE, "stock service unavailable, please retry", 1, NULL, NULL);
    else if (sale)
        refuse_archived(w->http, sale);
    else
        reply_error(w->http, REPLY_NOT_FOUND, "no such activity", 0, NULL, NULL);
    pending_end(&w->p);
    free(w);
}

/* Not in the cache: archived (refused as ever), or no such activity. */
static void unknown_activity(struct gateway *gw, struct evhttp_request *req, int64_t activity_id)
{
    const struct archive_sale *sale = archive_find(gw->archive, activity_id);
    if (sale) {
        refuse_archived(req, sale);
        return;
    }
    struct token_wait *w = calloc(1, sizeof(*w));
    if (!w) {
        reply_error(req, REPLY_UNAVAILABLE, "out of memory", 1, NULL, NULL);
        return;
    }
    w->http = req;
    pending_start(gw->pending, &w->p, &w->http, NULL);
    if (archive_lookup(gw->archive, activity_id, on_archive, w) != 0) {
        reply_error(w->http, REPLY_UNAVAILABLE, "stock service unavailable, please retry", 1, NULL, NULL);
        pending_end(&w->p);
        free(w);
    }
}

void tokenapi_issue(struct gateway *gw, struct evhttp_request *req)
{
    struct httpparams params;
    char err[160];
    int64_t user_id, activity_id;
    enum reply_status status = REPLY_INVALID;
    int bad = httpparams_parse(req, &params, err, sizeof(err)) != 0 ||
              httpparams_get_id(&params, "activityId", gw->cfg->http_long_ids, &activity_id, err,
                                sizeof(err)) != 0 ||
              auth_user(gw->cfg, req, &params, &user_id, &status, err, sizeof(err)) != 0;
    httpparams_free(&params);
    if (bad) {
        reply_error(req, status, err, 0, NULL, NULL);
        return;
    }
    if (!gw->cfg->require_token) {
        reply_error(req, REPLY_NOT_FOUND, "purchase tokens are off (seckill.require-token)", 0, NULL, NULL);
        return;
    }
    const char *banned;
    int64_t retry_after;
    if (bans_refused(gw->bans, req, user_id, activity_id, &banned, &retry_after)) {
        reply_error(req, REPLY_BLOCKED, banned, retry_after, NULL, NULL);
        return;
    }
    struct activity *a = activity_cache_find(gw->activities, activity_id);
    if (!a || !a->loaded) {
        unknown_activity(gw, req, activity_id);
        return;
    }
    int64_t now_ms = clock_wall_ms();
    switch (activity_status_at(a, now_ms)) {
    case ACTIVITY_PENDING:
        reply_error(req, REPLY_NOT_STARTED, NULL, 0, NULL, NULL);
        return;
    case ACTIVITY_ENDED:
        reply_error(req, REPLY_ENDED, NULL, 0, NULL, NULL);
        return;
    case ACTIVITY_CANCELLED:
        reply_error(req, REPLY_CANCELLED, NULL, 0, NULL, NULL);
        return;
    case ACTIVITY_ACTIVE:
        break;
    }
    /* The expiry is a whole second, rounded up: a token lives at least token-ttl-seconds
     * (and less than one more), never a fraction of a second when the ttl is 1. The
     * script keeps a spent nonce one second longer than the ttl for that reason. */
    int64_t expires = (now_ms + gw->cfg->token_ttl_seconds * 1000 + 999) / 1000;
    char token[PURCHASETOKEN_LEN];
    gw->token_nonce += 0x9E3779B97F4A7C15ULL;  /* Weyl sequence from a random start: never repeats */
    if (purchasetoken_issue(gw->cfg->token_secret, activity_id, user_id, expires, gw->token_nonce, token,
                            sizeof(token)) < 0) {
        reply_error(req, REPLY_UNAVAILABLE, "could not issue a token", 1, NULL, NULL);
        return;
    }
    char body[256];
    int n = snprintf(body, sizeof(body),
                     "{\"success\":true,\"token\":\"%s\","
                     "\"activityId\":%" PRId64 ",\"expiresIn\":%" PRId64 "}", token, activity_id,
                     gw->cfg->token_ttl_seconds);
    reply_send(req, 200, body, (size_t)n);
}
