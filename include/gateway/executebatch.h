#ifndef SK_EXECUTEBATCH_H
#define SK_EXECUTEBATCH_H

#include <arpa/inet.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "gateway/activity.h"
#include "gateway/purchasetoken.h"
#include "gateway/redisconn.h"

/* Execute requests coalesced per pass of the event loop: the requests of one activity (one
 * bucket of it, for a bucketed activity) that
 * arrive in one pass go to Redis as one execute.lua call (up to seckill.execute-batch-max
 * each), which answers every one of them as if it had been sent alone (docs/protocol.md,
 * "Coalesced execute calls"). Nothing waits for a batch to fill: the flush runs at the end
 * of the pass in which the first request arrived, so under light load a call carries one
 * request and under a storm dozens, and each request still costs exactly one round trip.
 *
 * Why the end of the pass: libevent 2.1 has no before-sleep hook. Within one pass it runs
 * the active callbacks of one priority queue in order until the queue is empty, so an
 * event made active from inside a callback (event_active) joins the tail of the queue
 * being run and runs in this same pass, after every I/O callback that epoll reported
 * with it and before the loop sleeps again. A zero timeout would instead wait for the
 * next pass (one more epoll_wait), and a lower-priority event is only run when no
 * higher-priority one is active, so it starves while connections keep reading. */

struct executebatch_item;

/* The verdict of one request: its element of the script's answer (an array {status,...}),
 * or NULL when the call failed (Redis down, a deadline missed, an error reply). */
typedef void (*executebatch_verdict_cb)(struct executebatch_item *item, const redisReply *verdict);

/* One request's part of a call, embedded in the request's context and owned by it; the
 * batch holds it from executebatch_add until its verdict callback, which runs exactly
 * once and after which the batch does not touch it again. */
struct executebatch_item {
    struct executebatch_item *next;
    int64_t activity_id;
    int bucket;             /* the user's bucket (activity_user_keys); calls are per bucket */
    const char *user;       /* decimal user id, kept alive by the owner */
    const char *order_no;   /* the order number offered to the script */
    int64_t accepted_ms;
    char ip[INET6_ADDRSTRLEN];
    char nonce[PURCHASETOKEN_NONCE_LEN];
    executebatch_verdict_cb verdict;
    /* Set by the batch before the verdict: redis.wait-replicas > 0 and fewer replicas
     * acknowledged the call's writes, so an OK reservation must be rolled back, never
     * produced. */
    bool unreplicated;
    /* Set once the call carrying it went to Redis: a NULL verdict after that means its
     * fate is unknown (the script may still run), before it that it never ran. */
    bool sent;
};

struct executebatch;

struct executebatch *executebatch_new(struct event_base *base, const struct config *cfg,
                                      struct redisconn *redis, struct activity_cache *activities);
/* Requests still queued get their verdict callback (NULL) first. */
void executebatch_free(struct executebatch *b);

/* Queues item for this pass's call of its activity. The verdict comes later, from the
 * flush or the Redis callback; only when there is no memory for another activity's
 * group does it come (NULL) before this returns. */
void executebatch_add(struct executebatch *b, struct executebatch_item *item);

#endif
