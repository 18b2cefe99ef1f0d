#ifndef SK_REDISCONN_H
#define SK_REDISCONN_H

#include <event2/event.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "common/config.h"
#include "common/luascript.h"

/* The gateway's one asynchronous Redis connection on the libevent loop.
 *
 * - Commands pipeline on one context; replies come back in order.
 * - Every command carries a deadline (redis.timeout-ms). When the oldest one passes it,
 *   the connection is dropped: every pending callback runs at once with reply == NULL,
 *   so no request waits on a frozen Redis. hiredis 0.14 has no timeout of its own.
 * - While disconnected, commands fail at once (the caller answers 503) and a reconnect
 *   is tried on a timer with exponential backoff.
 * - Scripts go out as EVALSHA; a NOSCRIPT answer sends SCRIPT LOAD and the same command
 *   again, which queues behind the load and succeeds.
 *
 * Callbacks run exactly once, with reply == NULL on any failure; the reply is owned by
 * hiredis and valid only during the callback. */

typedef void (*redisconn_cb)(redisReply *reply, void *privdata);
typedef void (*redisconn_connect_cb)(void *arg);

struct redisconn;

struct redisconn *redisconn_new(struct event_base *base, const struct config *cfg,
                                const struct luascript_set *scripts);
void redisconn_free(struct redisconn *rc);

/* Called on the loop after every successful (re)connect. */
void redisconn_on_connect(struct redisconn *rc, redisconn_connect_cb cb, void *arg);

bool redisconn_ready(const struct redisconn *rc);
unsigned long redisconn_pending(const struct redisconn *rc);
unsigned long redisconn_reconnects(const struct redisconn *rc);

/* argv: the keys, then the arguments. Returns 0 when sent (cb will run), -1 when Redis
 * is not connected (cb will not run). */
int redisconn_eval(struct redisconn *rc, enum luascript_id script, int nkeys, int nargs,
                   const char *const *argv, const size_t *argvlen, redisconn_cb cb, void *privdata);
int redisconn_command_argv(struct redisconn *rc, int argc, const char *const *argv,
                           const size_t *argvlen, redisconn_cb cb, void *privdata);

#endif
