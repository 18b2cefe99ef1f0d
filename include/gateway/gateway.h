#ifndef SK_GATEWAY_H
#define SK_GATEWAY_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/activity.h"
#include "common/config.h"
#include "gateway/kafkaprod.h"
#include "common/luascript.h"
#include "gateway/queuedmarks.h"
#include "common/orderno.h"
#include "gateway/redisconn.h"
#include "gateway/tokenbucket.h"

struct adminfwd;
struct archive;
struct bans;
struct execute;
struct iplimit;
struct longpoll;
struct pending_set;
struct rebalance;
struct salestats;

/* The gateway's parts, wired together by seckillserver.c and handed to every handler. Owned by
 * seckillserver.c's main; lives as long as the loop. */
struct gateway {
    struct event_base *base;
    const struct config *cfg;
    struct luascript_set scripts;
    struct redisconn *redis;
    struct kafkaprod *kafka;
    struct activity_cache *activities;
    struct queuedmarks *marks;
    struct executebatch *batch;   /* execute requests coalesced per loop pass */
    struct pending_set *pending;  /* requests waiting on Redis or Kafka: deadline, shutdown */
    struct pending_set *delivery_cut;  /* executes: where a slow delivery is rolled back */
    struct tokenbucket bucket;
    struct iplimit *iplimit;  /* the local per-IP limit in front of `bucket`; NULL when off */
    struct bans *bans;        /* the manual bans, checked before anything else (bans.h) */
    struct orderno_gen orderno;
    struct nodelease *lease;  /* the order-number node id, leased in Redis */
    struct salestats *sales;  /* per-sale gauges of /metrics */
    struct refusals *refusals;  /* per-sale refusal counts (refusals.h) */
    struct rebalance *rebalance;  /* stock moves between the buckets of bucketed sales */
    struct longpoll *longpoll;    /* GET ...?wait=N requests held until their order is final */
    struct archive *archive;      /* archived sales read lately (archive.h) */
    struct adminfwd *admin;       /* reads forwarded to seckill-admin (adminfwd.h) */
    bool draining;            /* SIGTERM: finish what is in flight, accept nothing new */
    unsigned long in_flight;  /* requests waiting on Kafka or Redis writes */
    uint64_t token_nonce;     /* purchase-token nonces, seeded at random at start */
    struct execute *execute;        /* the execute requests' own lists (execute.c) */
    bool orders_stopped;            /* shutdown: a release without a verdict is not sent again */
};

#endif
