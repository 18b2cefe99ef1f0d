#ifndef SK_ADMINHTTP_H
#define SK_ADMINHTTP_H

#include <event2/event.h>
#include <stddef.h>

#include "ctl/ctlrun.h"

/* The admin API's HTTP side (seckill-admin): its listener on admin.host:admin.port, the
 * bearer check, the routes of adminroutes, and the JSON answers. Each request runs its
 * seckillctl command to the end before the next is read: the commands block on MySQL
 * and Redis, which is why they run in a process of their own and never in the gateway
 * (docs/admin-openapi.yaml, docs/administration.md). */

struct adminhttp;

/* Listens on ctl->cfg's admin address; ctl (its config and connections) is the caller's
 * and outlives the server. NULL with err set when the port cannot be bound. */
struct adminhttp *adminhttp_new(struct event_base *base, struct ctlrun *ctl, char *err, size_t errlen);
void adminhttp_free(struct adminhttp *h);

#endif
