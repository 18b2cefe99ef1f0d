#ifndef SK_ADMINHTTP_H
#define SK_ADMINHTTP_H

#include <event2/event.h>
#include <stddef.h>

#include "common/config.h"

/* The admin API's HTTP side (seckill-admin): its listener on admin.host:admin.port with
 * the gateway's connection limits (httpconns.h), the bearer check, the routes of
 * adminroutes, and the JSON answers. The loop reads requests and answers; each request's
 * seckillctl command runs on one of admin.workers threads (adminpool.h), so a long one
 * delays no other. The commands block on MySQL and Redis, which is why they run in a
 * process of their own and never in the gateway (docs/admin-openapi.yaml,
 * docs/administration.md). */

struct adminhttp;

/* Listens on cfg's admin address; cfg is the caller's and outlives the server. NULL with
 * err set when the port cannot be bound or the workers cannot start. */
struct adminhttp *adminhttp_new(struct event_base *base, const struct config *cfg, char *err, size_t errlen);
/* SIGTERM: closes the listening socket; requests already read still run and get answers. */
void adminhttp_stop_accepting(struct adminhttp *h);
/* Requests whose command has not been answered yet. */
size_t adminhttp_pending(const struct adminhttp *h);
/* Waits for the commands still running or queued and answers them, then closes every
 * connection. */
void adminhttp_free(struct adminhttp *h);

#endif
