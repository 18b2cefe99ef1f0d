#include "gateway/longpoll.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <event2/util.h>
#include <inttypes.h>
#include <stdbool.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "common/json.h"
#include "common/keys.h"
#include "common/log.h"
#include "gateway/clientip.h"
#include "gateway/finalsub.h"
#include "common/intmap.h"
#include "gateway/iplimit.h"
#include "gateway/metrics.h"
#include "gateway/reply.h"
#include "gateway/waiters.h"

#define STATUS_LEN 16

/* One held request. Owned by longpoll from longpoll_hold; freed by hold_release once its
 * client is answered or gone (http NULL) and no read of it is in flight (reads 0). */
struct hold {
    struct waiter w;                /* the registry's part, while waiting */
    struct longpoll *lp;
    struct evhttp_request *http;    /* NULL once answered or gone */
    struct event *timer;            /* the wait's deadline */
    struct event *watch;            /* the client's socket: a hang-up */
    enum longpoll_kind kind;
    int64_t user_id;
    int64_t activity_id;
    char orders_key[KEYS_LEN];
    char status[STATUS_LEN];        /* the last status known */
    unsigned reads;                 /* HGETs in flight */
    bool again;                     /* read once more when the one in flight answers */
    bool expired;                   /* the deadline passed: the next read answers */
    bool holds_channel;
    int64_t client;                 /* its key in longpoll.per_client while counted, else 0 */
    cJSON *orders;                  /* longpoll_order.orders, copied; owned */
};

struct longpoll {
    struct event_base *base;
    const struct config *cfg;
    struct redisconn *redis;
    struct finalsub *sub;
    struct waiters reg;
    /* Held requests per client address (iplimit_client, hashed under `key` so that nobody
     * outside can make two addresses share a count): one client cannot take the room
     * http.max-waiting gives everybody. */
    struct intmap per_client;
    uint8_t key[16];
    bool closed;
};

static struct hold *hold_of(struct waiter *w) { return (struct hold *)w; }

void longpoll_answer(struct evhttp_request *req, const struct longpoll_order *o, const char *status)
{
    cJSON *json = cJSON_CreateObject();
    cJSON_AddBoolToObject(json, "success", 1);
    if (o->kind == LONGPOLL_RESULT) {
        json_add_int(json, "userId", o->user_id);
        json_add_int(json, "activityId", o->activity_id);
        cJSON_AddStringToObject(json, "orderNo", o->order_no);
    } else {
        cJSON_AddStringToObject(json, "orderNo", o->order_no);
        json_add_int(json, "activityId", o->activity_id);
    }
    cJSON_AddStringToObject(json, "status", status);
    if (o->reason && strcmp(status, "FAILED") == 0)
        cJSON_AddStringToObject(json, "reason", o->reason);
    cJSON *orders = o->orders ? cJSON_Duplicate(o->orders, 1) : NULL;
    if (orders) {
        /* The order waited for is listed as it ended, the others as they were read. */
        const cJSON *item;
        cJSON_ArrayForEach(item, orders) {
            const cJSON *no = cJSON_GetObjectItemCaseSensitive(item, "orderNo");
            if (cJSON_IsString(no) && strcmp(no->valuestring, o->order_no) == 0)
                cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)item, "status", cJSON_CreateString(status));
        }
        cJSON_AddItemToObject(json, "orders", orders);
    }
    reply_json(req, 200, json);
}

bool longpoll_is_final(const char *status)
{
    /* CANCELLED: a SUCCESS order the shop cancelled since (ordercancel.lua), for good. */
    return strcmp(status, "SUCCESS") == 0 || strcmp(status, "FAILED") == 0 ||
           strcmp(status, "CANCELLED") == 0;
}

int longpoll_wait_param(struct evhttp_request *req, int *seconds, char *err, size_t errlen)
{
    *seconds = 0;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (!query || evhttp_parse_query_str(query, &q) != 0) {
        evhttp_clear_headers(&q);
        return 0;  /* the endpoint's own parsing judges a malformed query */
    }
    const char *v = NULL;
    int rc = 0;
    for (struct evkeyval *kv = q.tqh_first; kv; kv = kv->next.tqe_next)
        if (strcmp(kv->key, "wait") == 0) {
            if (v && strcmp(v, kv->value) != 0)
                rc = -1;
            v = kv->value;
        }
    if (v && rc == 0) {
        size_t len = strlen(v);
        rc = len == 0 || len > 2 || strspn(v, "0123456789") != len || atoi(v) > LONGPOLL_MAX_WAIT_S ? -1 : 0;
        if (rc == 0)
            *seconds = atoi(v);
    }
    if (rc != 0)
        snprintf(err, errlen, "wait must be a whole number of seconds from 0 to %d", LONGPOLL_MAX_WAIT_S);
    evhttp_clear_headers(&q);
    return rc;
}

static void hold_release(struct hold *h)
{
    if (h->http || h->reads)
        return;
    event_free(h->timer);
    event_free(h->watch);
    cJSON_Delete(h->orders);
    free(h);
}

/* The request leaves the registry, its channel and its events, whatever ends it. */
static void hold_detach(struct hold *h)
{
    struct longpoll *lp = h->lp;
    waiters_remove(&lp->reg, &h->w);
    uint64_t held;
    if (h->client && intmap_get(&lp->per_client, h->client, &held)) {
        if (held > 1)
            intmap_put(&lp->per_client, h->client, held - 1);
        else
            intmap_remove(&lp->per_client, h->client);
    }
    h->client = 0;
    if (h->holds_channel) {
        finalsub_release(lp->sub, h->w.tag);
        h->holds_channel = false;
    }
    event_del(h->timer);
    event_del(h->watch);
}

static void hold_answer(struct hold *h, const char *status, bool closing)
{
    struct evhttp_request *req = h->http;
    if (!req)
        return;
    hold_detach(h);
    h->http = NULL;
    if (closing)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    struct longpoll_order o = { h->kind, h->user_id, h->activity_id, h->w.order_no, NULL, NULL, NULL, NULL,
                                h->orders };
    longpoll_answer(req, &o, status);
}

static void send_read(struct hold *h);

static void on_read(redisReply *reply, void *privdata)
{
    struct hold *h = privdata;
    h->reads--;
    if (h->http) {
        const char *status = reply && reply->type == REDIS_REPLY_STRING ? reply->str : NULL;
        if (status && strlen(status) < STATUS_LEN)
            snprintf(h->status, sizeof(h->status), "%s", status);
        if (longpoll_is_final(h->status)) {
            metrics_inc(METRIC_LONGPOLL_WAKEUPS);
            hold_answer(h, h->status, false);
        } else if (h->expired) {
            hold_answer(h, h->status, false);
        } else if (h->again) {
            send_read(h);
        }
    }
    hold_release(h);
}

/* Reads the order's status; one read at a time, a request during one repeats it after. */
static void send_read(struct hold *h)
{
    if (h->reads) {
        h->again = true;
        return;
    }
    h->again = false;
    const char *argv[] = { "HGET", h->orders_key, h->w.order_no };
    if (redisconn_command_argv(h->lp->redis, 3, argv, NULL, on_read, h) == 0)
        h->reads++;
    else if (h->expired)
        hold_answer(h, h->status, false);  /* Redis is away: what we know */
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hold *h = arg;
    metrics_inc(METRIC_LONGPOLL_EXPIRED);
    h->expired = true;
    if (!h->reads)
        send_read(h);
    hold_release(h);
}

/* The client's socket became readable while it waits for its answer: either it hung up
 * (end of file or an error) or it pipelined its next request (left to evhttp, unwatched). */
static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct hold *h = arg;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))) {
        if (n > 0)
            event_del(h->watch);
        return;
    }
    struct evhttp_request *req = h->http;
    struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
    hold_detach(h);
    h->http = NULL;
    metrics_inc(METRIC_LONGPOLL_GONE);
    /* Nobody to answer: evhttp frees the request with its connection. */
    if (evcon)
        evhttp_connection_free(evcon);
    else if (req)
        reply_drop(req);
    hold_release(h);
}

static void on_final(void *arg, const char *tag, const char *status, const char *order_no)
{
    (void)tag;
    struct longpoll *lp = arg;
    uint64_t id;
    int64_t activity_id;
    if (orderno_parse(order_no, &id, &activity_id) != 0)
        return;
    struct waiter *w;
    while ((w = waiters_find(&lp->reg, id)) != NULL) {
        metrics_inc(METRIC_LONGPOLL_WAKEUPS);
        hold_answer(hold_of(w), status, false);
        hold_release(hold_of(w));
    }
}

/* The channel of tag is (again) subscribed: news published before are lost, so every
 * request waiting on it reads its status once more. */
static void on_subscribed(void *arg, const char *tag)
{
    struct longpoll *lp = arg;
    struct waiter *next;
    for (struct waiter *w = waiters_next(&lp->reg, NULL); w; w = next) {
        next = waiters_next(&lp->reg, w);
        if (strcmp(w->tag, tag) == 0) {
            send_read(hold_of(w));
            hold_release(hold_of(w));
        }
    }
}

struct longpoll *longpoll_new(struct event_base *base, const struct config *cfg, struct redisconn *redis)
{
    struct longpoll *lp = calloc(1, sizeof(*lp));
    if (!lp)
        return NULL;
    lp->base = base;
    lp->cfg = cfg;
    lp->redis = redis;
    waiters_init(&lp->reg, (size_t)cfg->http_max_waiting);
    intmap_init(&lp->per_client);
    evutil_secure_rng_get_bytes(lp->key, sizeof(lp->key));
    lp->sub = finalsub_new(base, cfg, redis, on_final, on_subscribed, lp);
    if (!lp->sub) {
        free(lp);
        return NULL;
    }
    return lp;
}

void longpoll_free(struct longpoll *lp)
{
    if (!lp)
        return;
    if (waiters_count(&lp->reg))
        LOG_ERROR("%zu held requests still open at exit", waiters_count(&lp->reg));
    finalsub_free(lp->sub);
    waiters_free(&lp->reg);
    intmap_free(&lp->per_client);
    free(lp);
}

static struct hold *hold_new(struct longpoll *lp, struct evhttp_request *req, const struct longpoll_order *o)
{
    struct hold *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->lp = lp;
    h->kind = o->kind;
    h->user_id = o->user_id;
    h->activity_id = o->activity_id;
    int64_t activity_id;
    if (strlen(o->order_no) >= sizeof(h->w.order_no) || strlen(o->tag) >= sizeof(h->w.tag) ||
        strlen(o->orders_key) >= sizeof(h->orders_key) || strlen(o->status) >= sizeof(h->status) ||
        orderno_parse(o->order_no, &h->w.order_id, &activity_id) != 0) {
        free(h);
        return NULL;
    }
    snprintf(h->w.order_no, sizeof(h->w.order_no), "%s", o->order_no);
    snprintf(h->w.tag, sizeof(h->w.tag), "%s", o->tag);
    snprintf(h->orders_key, sizeof(h->orders_key), "%s", o->orders_key);
    snprintf(h->status, sizeof(h->status), "%s", o->status);
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    h->timer = evtimer_new(lp->base, on_deadline, h);
    h->watch = fd >= 0 ? event_new(lp->base, fd, EV_READ, on_watch, h) : NULL;
    if (!h->timer || !h->watch) {
        if (h->timer)
            event_free(h->timer);
        if (h->watch)
            event_free(h->watch);
        free(h);
        return NULL;
    }
    return h;
}

void longpoll_hold(struct longpoll *lp, struct evhttp_request *req, const struct longpoll_order *o,
                   int wait_s)
{
    if (wait_s <= 0 || longpoll_is_final(o->status) || !lp || lp->closed || lp->reg.max == 0) {
        longpoll_answer(req, o, o->status);
        return;
    }
    if (waiters_full(&lp->reg)) {
        metrics_inc(METRIC_LONGPOLL_REFUSED);
        char msg[160];
        snprintf(msg, sizeof(msg), "too many requests waiting (http.max-waiting = %zu); retry later or "
                 "without wait", lp->reg.max);
        reply_error(req, REPLY_UNAVAILABLE, msg, 1, NULL, NULL);
        return;
    }
    char ip[64];
    uint8_t addr[16];
    clientip_of(lp->cfg, req, ip, sizeof(ip));
    iplimit_client(ip, addr);
    /* Never 0, the map's empty key. */
    int64_t client = (int64_t)(iplimit_siphash(lp->key, addr, sizeof(addr)) | 1);
    uint64_t held = 0;
    intmap_get(&lp->per_client, client, &held);
    if (held >= (uint64_t)lp->cfg->http_max_waiting_per_client) {
        metrics_inc(METRIC_LONGPOLL_REFUSED);
        char msg[160];
        snprintf(msg, sizeof(msg), "too many requests waiting from this address (http.max-waiting-per-client "
                 "= %" PRId64
                 "); retry later or without wait", lp->cfg->http_max_waiting_per_client);
        reply_error(req, REPLY_RATE_LIMITED, msg, 1, NULL, NULL);
        return;
    }
    struct hold *h = hold_new(lp, req, o);
    bool added = h && waiters_add(&lp->reg, &h->w) == 0;
    if (!added || intmap_put(&lp->per_client, client, held + 1) != 0) {
        if (h) {
            waiters_remove(&lp->reg, &h->w);
            event_free(h->timer);
            event_free(h->watch);
            free(h);
        }
        reply_error(req, REPLY_UNAVAILABLE, "cannot hold this request now, please retry", 1, NULL, NULL);
        return;
    }
    h->http = req;
    h->client = client;
    h->orders = o->orders ? cJSON_Duplicate(o->orders, 1) : NULL;
    struct timeval tv = { wait_s, 0 };
    evtimer_add(h->timer, &tv);
    event_add(h->watch, NULL);
    /* Registered and subscribed first, read after: a publish in between is not lost. */
    int on = finalsub_hold(lp->sub, h->w.tag);
    h->holds_channel = on >= 0;
    if (on == 1)
        send_read(h);
}

size_t longpoll_close(struct longpoll *lp)
{
    size_t n = 0;
    lp->closed = true;
    struct waiter *w;
    while ((w = waiters_next(&lp->reg, NULL)) != NULL) {
        struct hold *h = hold_of(w);
        hold_answer(h, h->status, true);
        hold_release(h);
        n++;
    }
    return n;
}

size_t longpoll_waiting(const struct longpoll *lp) { return lp ? waiters_count(&lp->reg) : 0; }
