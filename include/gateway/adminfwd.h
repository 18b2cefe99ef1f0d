#ifndef SK_ADMINFWD_H
#define SK_ADMINFWD_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"

struct cJSON;

/* GET requests the gateway forwards to seckill-admin, for the answers only MySQL holds
 * (the orders of archived sales, archive.h): the gateway never talks to MySQL itself.
 * libevent's HTTP client on the loop, one connection per request, `Authorization:
 * Bearer <admin.token>`, to admin.host:admin.port (a wildcard admin.host means this
 * machine's loopback), resolved once at start-up so that no lookup blocks the loop.
 *
 * At most ADMINFWD_MAX_IN_FLIGHT at once (seckill-admin answers one request at a time:
 * more would only queue there); each is given up after http.request-timeout-ms, by which
 * time pending.h has answered its client 503. */

#define ADMINFWD_MAX_IN_FLIGHT 32

/* code: the admin's HTTP status, or 0 when it gave none (unreachable, too slow, a broken
 * answer, shutdown); body: its JSON object or NULL, valid during the call. */
typedef void (*adminfwd_cb)(void *arg, int code, const struct cJSON *body);

struct adminfwd;

/* NULL with err set when admin.host cannot be resolved. With admin.port off it is made
 * but forwards nothing (adminfwd_enabled false). */
struct adminfwd *adminfwd_new(struct event_base *base, const struct config *cfg, char *err, size_t errlen);
/* Shutdown: gives up every forward in flight (its cb gets 0) and refuses new ones. */
void adminfwd_close(struct adminfwd *f);
/* After adminfwd_close. */
void adminfwd_free(struct adminfwd *f);

bool adminfwd_enabled(const struct adminfwd *f);
/* Sends GET target (path and query, already escaped). Returns 0 when sent (cb runs once,
 * later), -1 when refused now (admin.port off, ADMINFWD_MAX_IN_FLIGHT reached, closed,
 * out of memory): cb is not called. */
int adminfwd_get(struct adminfwd *f, const char *target, adminfwd_cb cb, void *arg);
size_t adminfwd_in_flight(const struct adminfwd *f);

#endif
