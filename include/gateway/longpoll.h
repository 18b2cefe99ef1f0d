#ifndef SK_LONGPOLL_H
#define SK_LONGPOLL_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/redisconn.h"

/* Long polling of an order's status: GET /seckill/result and /seckill/orders/{orderNo}
 * with wait=N (1..LONGPOLL_MAX_WAIT_S seconds). readapi reads the order first; when it is
 * not final it hands the request here, and it is answered (200, the same body as without
 * wait) as soon as the order is SUCCESS or FAILED, or with its status read at the deadline.
 *
 * - Woken by finalsub (SPUBLISH of the scripts that end orders). To lose no news, a
 *   request is registered and its channel subscribed first, and the status read again
 *   only then (and again after every resubscribe of the channel).
 * - Not cut by http.request-timeout-ms (the request leaves pending.h when it is held)
 *   nor by evhttp's idle timeout (it does not run while a request awaits its answer).
 * - At most http.max-waiting held (waiters.h); beyond, 503 UNAVAILABLE with Retry-After.
 *   http.max-waiting = 0 turns long polling off: wait is checked, then ignored.
 * - A client that hangs up while held is noticed (a read watch on its socket: evhttp
 *   does not look), its connection closed and its hold freed, once.
 * - longpoll_close (shutdown) answers every held request with its last known status and
 *   Connection: close, and any held after at once.
 *
 * Ownership: each held request's context is longpoll's, freed once it is answered (or its
 * client gone) and no Redis read of it is in flight. longpoll_free after redisconn_free
 * (which runs the last read callbacks). */

#define LONGPOLL_MAX_WAIT_S 30

enum longpoll_kind {
    LONGPOLL_RESULT,  /* GET /seckill/result: the body names the user */
    LONGPOLL_ORDER,   /* GET /seckill/orders/{orderNo} */
};

/* What readapi found; the strings are copied. */
struct longpoll_order {
    enum longpoll_kind kind;
    int64_t user_id;          /* LONGPOLL_RESULT */
    int64_t activity_id;
    const char *order_no;
    const char *status;       /* as read */
    const char *orders_key;   /* the hash holding its status */
    const char *tag;          /* its bucket's hash tag: the channel */
    const char *reason;       /* FAILED: why, when known (NULL when not) */
    /* LONGPOLL_RESULT of a sale of perUser > 1: every order of the user as read, an array
     * of {orderNo, status[, reason]}; NULL otherwise. */
    const struct cJSON *orders;
};

struct longpoll;

/* NULL when out of memory. */
struct longpoll *longpoll_new(struct event_base *base, const struct config *cfg, struct redisconn *redis);
void longpoll_free(struct longpoll *lp);

/* The value of the query's wait: 0 when absent. Returns 0, or -1 with err set. */
int longpoll_wait_param(struct evhttp_request *req, int *seconds, char *err, size_t errlen);
bool longpoll_is_final(const char *status);
/* The answer with the order's status, held or not: the one shape of both endpoints. */
void longpoll_answer(struct evhttp_request *req, const struct longpoll_order *o, const char *status);

/* Answers now when o is final, wait_s is 0 or long polling is off or closed; otherwise
 * holds req (or refuses it, 503, at http.max-waiting). Either way req is answered here. */
void longpoll_hold(struct longpoll *lp, struct evhttp_request *req, const struct longpoll_order *o,
                   int wait_s);

/* Shutdown: answers every held request; returns how many. */
size_t longpoll_close(struct longpoll *lp);

/* Held now (the /metrics gauge). */
size_t longpoll_waiting(const struct longpoll *lp);

#endif
