#ifndef SK_OUTBOX_H
#define SK_OUTBOX_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "common/orderno.h"
#include "common/usercoupon.h"
#include "store/sqltext.h"

/* The outcome events (docs/events.md): the final outcomes a transaction writes to MySQL (the
 * consumer's, or seckillctl's revocations and cancels) are written, in the same
 * transaction, as one row of the outbox table
 * outcome_outbox (all of them in one text: a row per event would double what MySQL
 * writes for an order), which the relay (relay.c) publishes to kafka.outcome-topic and
 * then deletes. So an outcome committed is an event published, at least once, under an id
 * that names the outcome (a repeat has the same id and the reader drops it); an outcome
 * rolled back never was one.
 *
 * Ownership: events is the list's, freed by outbox_free. */

enum outbox_type {
    OUTBOX_ORDER_SUCCEEDED,   /* a seckill_order row: the order issued its user coupon */
    OUTBOX_ORDER_FAILED,      /* a seckill_order_failed row, with its reason */
    OUTBOX_COUPON_USED,       /* a user coupon redeemed at checkout */
    OUTBOX_COUPON_REFUNDED,   /* its checkout refunded: the user coupon is UNUSED again */
    OUTBOX_COUPON_REVOKED,    /* taken back by the shop (coupon revoke, order cancel) */
    OUTBOX_ORDER_CANCELLED,   /* a SUCCESS order cancelled by the shop (order cancel) */
};

#define OUTBOX_REASON_LEN 16
/* "coupon.used:" + a user coupon id + ":" + a time: far below; order numbers are shorter
 * than a reference. */
#define OUTBOX_EVENT_ID_LEN 96
/* The longest payload (an order.cancelled whose reason is 128 characters of 4 bytes, each
 * maybe escaped) is below 1,400. */
#define OUTBOX_PAYLOAD_LEN 1536

struct outbox_event {
    enum outbox_type type;
    int64_t at_ms;                 /* when the outcome was decided */
    int64_t user_id;
    int64_t activity_id;           /* orders */
    int64_t coupon_id;             /* 0: none (a sale without a coupon) */
    int64_t user_coupon_id;        /* 0: none */
    int64_t accepted_ms;           /* orders: when the gateway accepted it */
    int64_t discount, payable;     /* coupon.used: cents */
    char order_no[ORDERNO_LEN];    /* orders */
    char order_ref[USERCOUPON_REF_LEN];    /* coupon.used, coupon.refunded: the checkout order */
    char reason[OUTBOX_REASON_LEN];        /* order.failed */
    const char *note;              /* coupon.revoked, order.cancelled: the shop's reason */
};

struct outbox {
    struct outbox_event *events;
    size_t count;
    size_t cap;
    struct sqltext lines;   /* outbox_write's scratch */
};

/* Appends a copy of ev. Returns 0, or -1 out of memory. */
int outbox_add(struct outbox *o, const struct outbox_event *ev);
void outbox_reset(struct outbox *o);
void outbox_free(struct outbox *o);

/* The event's type as published: "order.succeeded", "order.failed", "order.cancelled",
 * "coupon.used", "coupon.refunded", "coupon.revoked". */
const char *outbox_type_name(enum outbox_type type);
/* The id naming the outcome, the same however often it is written:
 * "order.succeeded:<orderNo>", "order.failed:<orderNo>", "coupon.used:<userCouponId>:<usedAt>",
 * "coupon.refunded:<userCouponId>:<refundedAt>" (a user coupon refunded and used again is
 * another use, at another time), "coupon.revoked:<userCouponId>",
 * "order.cancelled:<orderNo>". Returns its
 * length, or -1 when len is too small. */
int outbox_event_id(const struct outbox_event *ev, char *buf, size_t len);
/* The JSON published (docs/events.md). Returns its length, or -1 when len is too small. */
int outbox_payload(const struct outbox_event *ev, char *buf, size_t len);

/* The text of one outbox row for events [0, count), into lines (emptied first): a line
 * "<userId>\t<payload>\n" each, the message key then its value. Returns 0, or -1 out of
 * memory or for an event that has no payload. */
int outbox_lines(struct sqltext *lines, const struct outbox_event *events, size_t count);

/* Events per outbox row, at most: a row of them stays far below max_allowed_packet. */
#define OUTBOX_ROW_EVENTS 5000

/* Writes the list's events on db, inside the caller's transaction, as rows of at most
 * OUTBOX_ROW_EVENTS (event_count, and events: their outbox_lines), and empties the list.
 * Returns 0, or -1 with err set. */
int outbox_write(MYSQL *db, struct outbox *o, char *err, size_t errlen);

#endif
