#include "consumer/pipeline.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "consumer/reservation.h"
#include "consumer/consumer.h"
#include "consumer/consumermetrics.h"
#include "consumer/deadletter.h"
#include "consumer/kafkacons.h"
#include "consumer/persist.h"
#include "consumer/publish.h"
#include "consumer/retry.h"
#include "consumer/supersede.h"
#include "consumer/writer.h"

/* The retry of a write that failed: on the consumer's thread, the writer holding nothing. */
static int step_persist(struct consumer *c, char *err, size_t errlen)
{
    struct batch *b = &c->batch;
    if (b->accepted_count == 0 && b->use_count == 0)
        return 0;
    int64_t t0 = clock_mono_us();
    enum persist_result r = writer_persist(c->writer, b, &c->persisted, err, errlen);
    if (r == PERSIST_OK)
        consumermetrics_observe(CONSUMERMETRICS_INSERT_DURATION, clock_mono_us() - t0);
    return r == PERSIST_OK ? 0 : -1;
}

static void note_split(const struct consumer *c)
{
    const struct batch *b = &c->batch;
    const struct sqltx_stats *p = &c->persisted;
    if (p->transactions > 1)
        LOG_WARN("MySQL refused part of a batch of %zu orders and %zu coupon uses for good: "
                 "split into %zu transactions, %zu orders and %zu uses set aside",
                 b->accepted_count, b->use_count, p->transactions, p->orders_refused,
                 p->uses_refused);
}

static void note_rejections(const struct batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        if (b->verdicts[i] == BATCH_REJECTED)
            LOG_ORDER_INFO(b->orders[i].order_no, "user %" PRId64 " rejected: its reservation was "
                           "released before it could be persisted", b->orders[i].user_id);
}

static int out_of_memory(struct consumer *c, int32_t partition, int64_t offset)
{
    LOG_ERROR("out of memory dead-lettering partition %" PRId32 " offset %" PRId64 "; stopping",
              partition, offset);
    c->stop = 1;
    return -1;
}

/* The coupon.used and coupon.refunded events MySQL found inconsistent, or refused for good, become dead
 * letters: logged, kept out of MySQL, and never blocking the partition. Returns -1 when
 * one could not be kept (out of memory): the batch must then not commit its offsets. */
static int dead_uses(struct consumer *c)
{
    struct batch *b = &c->batch;
    for (size_t i = 0; i < b->use_count; i++) {
        const struct batch_use_result *r = &b->use_results[i];
        if (r->verdict != BATCH_USE_INCONSISTENT && r->verdict != BATCH_USE_REFUSED)
            continue;
        const struct redeemevent *ev = &b->uses[i];
        const struct batch_use_msg *m = &b->use_msgs[i];
        char error[BATCH_ERROR_LEN];
        if (r->verdict == BATCH_USE_REFUSED) {
            LOG_ERROR("%s of user coupon %" PRId64 " user %" PRId64 " order '%s' "
                      "(partition %" PRId32 " offset %" PRId64 ") dead-lettered: %s",
                      redeemevent_type(ev->kind), ev->user_coupon_id, ev->user_id, ev->order_ref,
                      m->partition, m->offset, r->reason);
            snprintf(error, sizeof(error), "%s", r->reason);
        } else {
            LOG_ERROR("%s of user coupon %" PRId64 " user %" PRId64 " order '%s' "
                      "(partition %" PRId32 " offset %" PRId64 ") is inconsistent with MySQL: %s",
                      redeemevent_type(ev->kind), ev->user_coupon_id, ev->user_id, ev->order_ref,
                      m->partition, m->offset, r->reason);
            snprintf(error, sizeof(error), "inconsistent: %.*s", (int)sizeof(error) - 16,
                     r->reason);
        }
        if (batch_dead_use(b, i, error) != 0)
            return out_of_memory(c, m->partition, m->offset);
    }
    return 0;
}

/* The orders MySQL refused for good become dead letters, logged once each; abandon.lua
 * ends them FAILED once the dead letters are acknowledged. */
static int dead_orders(struct consumer *c)
{
    struct batch *b = &c->batch;
    for (size_t i = 0; i < b->refusal_count; i++) {
        const struct batch_refusal *r = &b->refusals[i];
        const struct orderevent *ev = &b->accepted[r->index];
        LOG_ORDER_ERROR(ev->order_no, "user %" PRId64 " activity %" PRId64 ": dead-lettered and FAILED: %s",
                        ev->user_id, ev->activity_id, r->reason);
        if (batch_dead_order(b, r->index, r->reason) != 0)
            return out_of_memory(c, -1, -1);
    }
    return 0;
}

static void account(struct consumer *c)
{
    const struct batch *b = &c->batch;
    const struct consumer_times *t = &c->times;
    size_t claim_parked = 0;
    for (size_t i = 0; i < b->count; i++)
        claim_parked += b->verdicts[i] == BATCH_PARKED;
    size_t rejected = b->count - b->accepted_count - claim_parked;
    size_t persisted = b->accepted_count - c->persisted.conflicts - c->persisted.orders_refused -
                       (b->parked_count - claim_parked);
    size_t uses = c->persisted.uses_applied + c->persisted.uses_repeated;
    c->total.batches++;
    c->total.persisted += persisted;
    c->total.added += c->persisted.orders_added;
    c->total.rejected += rejected;
    c->total.dead += b->dead_count;
    c->total.refused += c->persisted.orders_refused + c->persisted.uses_refused;
    c->total.conflicts += c->persisted.conflicts;
    c->total.uses += uses;
    consumermetrics_add(CONSUMERMETRICS_BATCHES, 1);
    consumermetrics_add(CONSUMERMETRICS_ORDERS_PERSISTED, c->persisted.orders_added);
    consumermetrics_add(CONSUMERMETRICS_ORDERS_REJECTED, rejected);
    consumermetrics_add(CONSUMERMETRICS_DEAD_LETTERS, b->dead_count);
    consumermetrics_add(CONSUMERMETRICS_MYSQL_REFUSED,
                        c->persisted.orders_refused + c->persisted.uses_refused);
    consumermetrics_add(CONSUMERMETRICS_COUPON_USES, c->persisted.uses_applied);
    consumermetrics_observe(CONSUMERMETRICS_BATCH_SIZE, (int64_t)b->count);
    consumermetrics_observe(CONSUMERMETRICS_BATCH_DURATION, clock_mono_us() - t->started_us);
    LOG_DEBUG("batch: %zu messages, %zu orders persisted (%" PRIu64 " new), %zu rejected, "
              "%zu coupon uses (%zu new), %zu dead-lettered, %zu repeated, %" PRId64 " ms: "
              "fill %" PRId64 " ms, dead %" PRId64 " ms, claim %" PRId64 " ms, persist %" PRId64
              " ms, publish %" PRId64 " ms, finalize %" PRId64 " ms, abandon %" PRId64
              " ms, commit %" PRId64 " ms",
              b->messages, persisted, c->persisted.orders_added, rejected, uses,
              c->persisted.uses_applied, b->dead_count, b->duplicates,
              (clock_mono_us() - t->started_us) / 1000, t->fill, t->dead, t->claim, t->persist, t->publish,
              t->finalize, t->abandon, t->commit);
}

/* Up to the write: seal, dead letters, claim. */
static int front(struct consumer *c)
{
    struct batch *b = &c->batch;
    struct consumer_times *t = &c->times;
    t->started_us = clock_mono_us();
    batch_seal(b);
    if (retry_step(c, "dead-letter", deadletter_send, CONSUMERMETRICS_RETRY_DEAD_LETTER,
                   &t->dead) != 0 ||
        retry_step(c, "claim", reservation_claim, CONSUMERMETRICS_RETRY_CLAIM, &t->claim) != 0)
        return -1;
    note_rejections(b);
    batch_collect_accepted(b);
    return 0;
}

/* After the write: Redis, dead letters, offsets. */
static int back(struct consumer *c)
{
    struct batch *b = &c->batch;
    struct consumer_times *t = &c->times;
    note_split(c);
    size_t dead_before = b->dead_count;
    if (dead_orders(c) != 0 || dead_uses(c) != 0 ||
        retry_step(c, "publish coupons", publish_coupons, CONSUMERMETRICS_RETRY_PUBLISH,
                   &t->publish) != 0 ||
        retry_step(c, "finalize", reservation_finalize, CONSUMERMETRICS_RETRY_FINALIZE,
                   &t->finalize) != 0)
        return -1;
    if (b->dead_count > dead_before &&
        retry_step(c, "dead-letter", deadletter_send, CONSUMERMETRICS_RETRY_DEAD_LETTER,
                   &t->dead) != 0)
        return -1;
    if (retry_step(c, "abandon", reservation_abandon, CONSUMERMETRICS_RETRY_ABANDON, &t->abandon) != 0 ||
        retry_step(c, "supersede", supersede_orders, CONSUMERMETRICS_RETRY_ABANDON, &t->abandon) != 0)
        return -1;
    kafkacons_set_paused(c, 0);
    int64_t t0 = clock_mono_ms();
    kafkacons_commit(c);
    t->commit = clock_mono_ms() - t0;
    parking_finish(&c->parking, b->serial);
    consumermetrics_set(CONSUMERMETRICS_PARKED, c->parking.count);
    account(c);
    return 0;
}

/* c->batch and its times change places with the writer's. */
static void swap_batches(struct consumer *c)
{
    struct batch b = c->batch;
    c->batch = c->writing;
    c->writing = b;
    struct consumer_times t = c->times;
    c->times = c->writing_times;
    c->writing_times = t;
}

/* Takes the written batch back into c->batch (the one just claimed goes to the writer's
 * place) and retries its write on this thread until it is in MySQL. */
static int take_written(struct consumer *c)
{
    /* Blocking, as a write on this thread would: polling Kafka meanwhile would only stash
     * messages past the batch size. */
    char err[512];
    int64_t took_us = 0;
    enum persist_result r = writer_take(c->writer, &c->persisted, &took_us, err, sizeof(err));
    swap_batches(c);
    c->times.persist = took_us / 1000;
    if (r == PERSIST_OK) {
        if (c->batch.accepted_count > 0 || c->batch.use_count > 0)
            consumermetrics_observe(CONSUMERMETRICS_INSERT_DURATION, took_us);
        return 0;
    }
    LOG_WARN("persist failed: %s; retrying", err);
    consumermetrics_add(CONSUMERMETRICS_RETRY_PERSIST, 1);
    return retry_step(c, "persist", step_persist, CONSUMERMETRICS_RETRY_PERSIST, &c->times.persist);
}

int pipeline_turn(struct consumer *c)
{
    bool fresh = !batch_is_empty(&c->batch);
    if (fresh && front(c) != 0)
        return -1;
    if (!writer_holds(c->writer)) {
        if (fresh) {
            swap_batches(c);
            writer_start(c->writer, &c->writing);
        }
        return 0;
    }
    if (take_written(c) != 0)
        return -1;
    /* The write of the batch just claimed overlaps the Redis half of the one written. */
    if (fresh)
        writer_start(c->writer, &c->writing);
    return back(c);
}
