#ifndef SK_EXECUTE_H
#define SK_EXECUTE_H

#include <event2/http.h>

#include "gateway/gateway.h"

/* POST /seckill/execute?userId=&activityId= (form or JSON body also accepted): the hot
 * path. Parse and authenticate; answer what the local cache and token bucket can without
 * I/O; one execute.lua round trip reserves the stock; the order goes to Kafka through
 * delivery.h, and the reply follows the delivery report (seckill.order.reply-after-ack)
 * or the rollback of a failed one. */
void execute_request(struct gateway *gw, struct evhttp_request *req);
/* The execute requests' lists (gw->execute), before the first request. 0, or -1 (out of
 * memory). */
int execute_start(struct gateway *gw);
/* Shutdown, before Redis goes: the orders whose release waits to be sent again are
 * finished (their clients were answered by the drain), and none is retried from here. */
void execute_stop(struct gateway *gw);
/* Frees the finished orders kept for reuse and the lists (last at shutdown; NULL-safe). */
void execute_free(struct gateway *gw);

#endif
