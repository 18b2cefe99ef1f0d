#include "store/outbox.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int outbox_add(struct outbox *o, const struct outbox_event *ev)
{
    if (o->count == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        struct outbox_event *grown = realloc(o->events, cap * sizeof(*grown));
        if (!grown)
            return -1;
        o->events = grown;
        o->cap = cap;
    }
    o->events[o->count++] = *ev;
    return 0;
}

void outbox_reset(struct outbox *o)
{
    o->count = 0;
}

void outbox_free(struct outbox *o)
{
    free(o->events);
    sqltext_free(&o->lines);
    memset(o, 0, sizeof(*o));
}

const char *outbox_type_name(enum outbox_type type)
{
    switch (type) {
    case OUTBOX_ORDER_SUCCEEDED:
        return "order.succeeded";
    case OUTBOX_ORDER_FAILED:
        return "order.failed";
    case OUTBOX_COUPON_USED:
        return "coupon.used";
    case OUTBOX_COUPON_REFUNDED:
        return "coupon.refunded";
    case OUTBOX_COUPON_REVOKED:
        return "coupon.revoked";
    case OUTBOX_ORDER_CANCELLED:
        return "order.cancelled";
    }
    return "unknown";
}

static int fitted(int n, size_t len)
{
    return n < 0 || (size_t)n >= len ? -1 : n;
}

int outbox_event_id(const struct outbox_event *ev, char *buf, size_t len)
{
    const char *type = outbox_type_name(ev->type);
    if (ev->type == OUTBOX_COUPON_REVOKED)
        return fitted(snprintf(buf, len, "%s:%" PRId64, type, ev->user_coupon_id), len);
    if (ev->type == OUTBOX_COUPON_USED || ev->type == OUTBOX_COUPON_REFUNDED)
        return fitted(snprintf(buf, len, "%s:%" PRId64 ":%" PRId64, type, ev->user_coupon_id,
                               ev->at_ms), len);
    return fitted(snprintf(buf, len, "%s:%s", type, ev->order_no), len);
}

/* An id of 0 is none: JSON null. */
static int id_or_null(char *buf, size_t len, int64_t id)
{
    return id ? snprintf(buf, len, "%" PRId64, id) : snprintf(buf, len, "null");
}

/* The shop's reason as a JSON string's content: seckillctl takes no control character in
 * it (ctlargs_name), so quotes and backslashes are all there is to escape. */
static void escaped(char *out, size_t len, const char *text)
{
    size_t n = 0;
    for (const char *p = text ? text : ""; *p && n + 2 < len; p++) {
        if (*p == '"' || *p == '\\')
            out[n++] = '\\';
        out[n++] = *p;
    }
    out[n] = '\0';
}

/* Order numbers, references and reasons hold only [A-Za-z0-9_.:-] (orderno,
 * usercoupon_valid_ref, the reasons of outcomes.c), so they are JSON strings as they are. */
int outbox_payload(const struct outbox_event *ev, char *buf, size_t len)
{
    char id[OUTBOX_EVENT_ID_LEN], coupon[24], user_coupon[24], note[2 * 4 * 128 + 1];
    if (outbox_event_id(ev, id, sizeof(id)) < 0)
        return -1;
    id_or_null(coupon, sizeof(coupon), ev->coupon_id);
    id_or_null(user_coupon, sizeof(user_coupon), ev->user_coupon_id);
    const char *type = outbox_type_name(ev->type);
    int n;
    switch (ev->type) {
    case OUTBOX_ORDER_SUCCEEDED:
        n = snprintf(buf, len, "{\"eventId\":\"%s\",\"type\":\"%s\",\"at\":%" PRId64
                     ",\"orderNo\":\"%s\",\"userId\":%" PRId64 ",\"activityId\":%" PRId64
                     ",\"couponId\":%s,\"userCouponId\":%s,\"acceptedAt\":%" PRId64 "}",
                     id, type, ev->at_ms, ev->order_no, ev->user_id, ev->activity_id, coupon,
                     user_coupon, ev->accepted_ms);
        break;
    case OUTBOX_ORDER_FAILED:
        n = snprintf(buf, len, "{\"eventId\":\"%s\",\"type\":\"%s\",\"at\":%" PRId64
                     ",\"orderNo\":\"%s\",\"userId\":%" PRId64 ",\"activityId\":%" PRId64
                     ",\"reason\":\"%s\",\"acceptedAt\":%" PRId64 "}",
                     id, type, ev->at_ms, ev->order_no, ev->user_id, ev->activity_id,
                     ev->reason, ev->accepted_ms);
        break;
    case OUTBOX_COUPON_USED:
        n = snprintf(buf, len, "{\"eventId\":\"%s\",\"type\":\"%s\",\"at\":%" PRId64
                     ",\"userCouponId\":%s,\"userId\":%" PRId64 ",\"couponId\":%s"
                     ",\"orderRef\":\"%s\",\"discount\":%" PRId64 ",\"payable\":%" PRId64 "}",
                     id, type, ev->at_ms, user_coupon, ev->user_id, coupon, ev->order_ref,
                     ev->discount, ev->payable);
        break;
    case OUTBOX_COUPON_REVOKED:
        escaped(note, sizeof(note), ev->note);
        n = snprintf(buf, len, "{\"eventId\":\"%s\",\"type\":\"%s\",\"at\":%" PRId64
                     ",\"userCouponId\":%s,\"userId\":%" PRId64 ",\"couponId\":%s"
                     ",\"reason\":\"%s\"}",
                     id, type, ev->at_ms, user_coupon, ev->user_id, coupon, note);
        break;
    case OUTBOX_ORDER_CANCELLED:
        escaped(note, sizeof(note), ev->note);
        n = snprintf(buf, len, "{\"eventId\":\"%s\",\"type\":\"%s\",\"at\":%" PRId64
                     ",\"orderNo\":\"%s\",\"userId\":%" PRId64 ",\"activityId\":%" PRId64
                     ",\"couponId\":%s,\"userCouponId\":%s,\"reason\":\"%s\"}",
                     id, type, ev->at_ms, ev->order_no, ev->user_id, ev->activity_id, coupon,
                     user_coupon, note);
        break;
    case OUTBOX_COUPON_REFUNDED:
        n = snprintf(buf, len, "{\"eventId\":\"%s\",\"type\":\"%s\",\"at\":%" PRId64
                     ",\"userCouponId\":%s,\"userId\":%" PRId64 ",\"couponId\":%s"
                     ",\"orderRef\":\"%s\"}",
                     id, type, ev->at_ms, user_coupon, ev->user_id, coupon, ev->order_ref);
        break;
    default:
        return -1;
    }
    return fitted(n, len);
}

/* One row by a prepared statement: the text goes as it is, neither escaped nor parsed as
 * SQL, which for a batch's few hundred kilobytes costs MariaDB a third of the write. */
static int write_row(MYSQL *db, const struct sqltext *lines, size_t count, char *err, size_t errlen)
{
    static const char sql[] = "INSERT INTO outcome_outbox (event_count, events) VALUES (?, ?)";
    MYSQL_STMT *stmt = mysql_stmt_init(db);
    if (!stmt) {
        snprintf(err, errlen, "insert outcome_outbox: out of memory");
        return -1;
    }
    unsigned long long n = count;
    unsigned long len = (unsigned long)lines->len;
    MYSQL_BIND bind[2];
    memset(bind, 0, sizeof(bind));
    bind[0].buffer_type = MYSQL_TYPE_LONGLONG;
    bind[0].buffer = &n;
    bind[0].is_unsigned = 1;
    bind[1].buffer_type = MYSQL_TYPE_BLOB;
    bind[1].buffer = lines->data;
    bind[1].buffer_length = len;
    bind[1].length = &len;
    int rc = 0;
    if (mysql_stmt_prepare(stmt, sql, sizeof(sql) - 1) != 0 || mysql_stmt_bind_param(stmt, bind) != 0 ||
        mysql_stmt_execute(stmt) != 0) {
        snprintf(err, errlen, "insert outcome_outbox: %s", mysql_stmt_error(stmt));
        rc = -1;
    }
    mysql_stmt_close(stmt);
    return rc;
}

int outbox_lines(struct sqltext *lines, const struct outbox_event *events, size_t count)
{
    sqltext_reset(lines);
    char payload[OUTBOX_PAYLOAD_LEN];
    for (size_t i = 0; i < count; i++) {
        if (outbox_payload(&events[i], payload, sizeof(payload)) < 0)
            return -1;
        sqltext_printf(lines, "%" PRId64 "\t%s\n", events[i].user_id, payload);
    }
    return lines->failed || !lines->data ? -1 : 0;
}

int outbox_write(MYSQL *db, struct outbox *o, char *err, size_t errlen)
{
    for (size_t start = 0; start < o->count; start += OUTBOX_ROW_EVENTS) {
        size_t n = o->count - start < OUTBOX_ROW_EVENTS ? o->count - start : OUTBOX_ROW_EVENTS;
        if (outbox_lines(&o->lines, o->events + start, n) != 0) {
            snprintf(err, errlen, "insert outcome_outbox: out of memory");
            return -1;
        }
        if (write_row(db, &o->lines, n, err, errlen) != 0)
            return -1;
    }
    outbox_reset(o);
    return 0;
}
