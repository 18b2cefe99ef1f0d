#include "consumer/intake.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/orderevent.h"
#include "common/redeemevent.h"
#include "consumer/consumer.h"
#include "consumer/pipeline.h"
#include "consumer/writer.h"

/* Errors that belong to one message at one offset: it is skipped and dead-lettered. The
 * others (broker down, offset out of range, unknown topic) say nothing about a message,
 * and committing past them could skip orders. */
static int is_message_error(rd_kafka_resp_err_t err)
{
    return err == RD_KAFKA_RESP_ERR__BAD_MSG || err == RD_KAFKA_RESP_ERR__BAD_COMPRESSION ||
           err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           err == RD_KAFKA_RESP_ERR_INVALID_MSG;
}

static int keep_dead(struct consumer *c, const rd_kafka_message_t *msg, const char *error)
{
    LOG_WARN("dead-lettering partition %" PRId32 " offset %" PRId64 ": %s", msg->partition,
             msg->offset, error);
    return batch_add_dead(&c->batch, msg->payload, msg->len, msg->key, msg->key_len,
                          msg->partition, msg->offset, error);
}

/* Keeps what msg means for the batch: an order, a dead letter, or nothing (an error
 * that is not about one message). Returns 1 when it counts towards the batch size. */
static int take(struct consumer *c, const rd_kafka_message_t *msg)
{
    char error[160];
    int rc;
    if (msg->err) {
        if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            return 0;
        if (!msg->rkt || msg->offset < 0 || !is_message_error(msg->err)) {
            LOG_WARN("kafka: %s%s%s", rd_kafka_message_errstr(msg),
                     msg->rkt ? " on " : "", msg->rkt ? rd_kafka_topic_name(msg->rkt) : "");
            return 0;
        }
        snprintf(error, sizeof(error), "kafka: %s", rd_kafka_message_errstr(msg));
        rc = keep_dead(c, msg, error);
    } else if (msg->payload && redeemevent_is(msg->payload, msg->len)) {
        struct redeemevent ev;
        if (redeemevent_decode(msg->payload, msg->len, &ev, error, sizeof(error)) != 0)
            rc = keep_dead(c, msg, error);
        else
            rc = batch_add_use(&c->batch, &ev, msg->payload, msg->len, msg->key, msg->key_len,
                               msg->partition, msg->offset);
    } else {
        struct orderevent ev;
        if (orderevent_decode(msg->payload, msg->len, &ev, error, sizeof(error)) != 0)
            rc = keep_dead(c, msg, error);
        else if (ev.created_ms > PERSIST_MAX_ACCEPTED_MS)
            rc = keep_dead(c, msg, "createdAt: beyond the range of DATETIME");
        else
            rc = batch_add_order(&c->batch, &ev, msg->partition, msg->offset);
    }
    if (rc != 0 || batch_note_offset(&c->batch, msg->partition, msg->offset) != 0) {
        /* Nothing later may be taken, or its offset would commit past this message:
         * finish what is kept, stop, and let this one replay. */
        LOG_ERROR("out of memory at partition %" PRId32 " offset %" PRId64 "; stopping",
                  msg->partition, msg->offset);
        c->stop = 1;
        return 0;
    }
    c->batch.messages++;
    return 1;
}

void intake_fill(struct consumer *c)
{
    struct batch *b = &c->batch;
    size_t limit = (size_t)c->cfg.consumer_batch_size;
    int64_t first_ms = 0;
    for (size_t i = 0; i < c->stash_count; i++) {
        /* Once stopping, the rest is left uncommitted: it is fetched again. */
        if (!c->stop)
            take(c, c->stash[i]);
        rd_kafka_message_destroy(c->stash[i]);
    }
    c->stash_count = 0;
    if (b->messages > 0)
        first_ms = clock_mono_ms();
    memset(&c->times, 0, sizeof(c->times));
    /* While the writer holds a batch, the fill ends as soon as that write is over: its
     * batch waits for the rest of its steps, and this one is claimed with what came. */
    bool writing = writer_holds(c->writer);
    while (!c->stop && b->messages < limit) {
        if (writing && writer_finished(c->writer))
            break;
        int64_t wait = writing ? PIPELINE_WAIT_MS : CONSUMER_SLICE_MS;
        if (b->messages > 0) {
            int64_t left = first_ms + c->cfg.consumer_batch_timeout_ms - clock_mono_ms();
            if (left <= 0)
                break;
            if (left < wait)
                wait = left;
        }
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(c->rk, (int)wait);
        if (!msg) {
            if (b->messages == 0 && !writing)
                return;  /* idle: let the caller do its periodic work */
            continue;
        }
        if (take(c, msg) && b->messages == 1)
            first_ms = clock_mono_ms();
        rd_kafka_message_destroy(msg);
    }
    if (b->messages > 0)
        c->times.fill = clock_mono_ms() - first_ms;
}
