#include "gateway/delivery.h"

#include <string.h>

#include "common/clock.h"

void delivery_init(struct delivery *d, const struct delivery_ops *ops, struct evhttp_request *http)
{
    memset(d, 0, sizeof(*d));
    d->ops = ops;
    d->http = http;
}

void delivery_accept(struct delivery *d)
{
    if (!d->http || d->held)
        return;
    d->ops->accepted(d);
    d->http = NULL;
}

static void on_report(struct kafkaprod_ticket *ticket, rd_kafka_resp_err_t err)
{
    struct delivery *d = (struct delivery *)ticket;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        d->ops->failed(d, err, false);
        return;
    }
    if (d->ops->acked)
        d->ops->acked(d);
    delivery_accept(d);
    d->ops->finish(d);
}

void delivery_send(struct delivery *d, struct kafkaprod *kp, bool reply_after_ack, const char *key,
                   const void *payload, int len)
{
    d->ticket.done = on_report;
    d->produced_us = clock_mono_us();
    rd_kafka_resp_err_t err = len < 0 ? RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                                      : kafkaprod_produce(kp, key, key ? strlen(key) : 0, payload,
                                                          (size_t)len, &d->ticket);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        d->ops->failed(d, err, true);
        return;
    }
    /* From here the delivery report owns d. */
    if (!reply_after_ack)
        delivery_accept(d);
}
