#ifndef SK_ORDEREVENT_H
#define SK_ORDEREVENT_H

#include <stddef.h>
#include <stdint.h>

#include "common/bucket.h"
#include "common/orderno.h"

/* The order.created message on Kafka, as JSON:
 *   {"orderNo":"...","userId":1,"activityId":2,"couponId":3,"createdAt":1733000000000}
 * plus "bucketTag":"2.1.5" for an order of bucket b >= 1 of a bucketed activity (bucket.h):
 * the consumer finds the order's keys under that tag. Without it (every order of an
 * unbucketed activity, and events written before buckets) the order is bucket 0's.
 * Plus "userSlot":s for an order in slot s >= 2 of its user (holder.h: a sale with a
 * per-user limit above one); without it the order is in slot 1.
 * Key = userId. Decoding is strict: a message that is not exactly this goes to the
 * dead-letter topic instead of MySQL. */

struct orderevent {
    char order_no[ORDERNO_LEN];
    int64_t user_id;
    int64_t activity_id;
    int64_t coupon_id;
    int64_t created_ms;
    char bucket_tag[BUCKET_TAG_LEN];  /* "" for bucket 0 */
    int slot;                         /* 1..HOLDER_MAX_SLOT; 0 is written as 1 */
};

/* Returns the encoded length, or -1 when buf is too small. */
int orderevent_encode(const struct orderevent *ev, char *buf, size_t len);
/* The order's holder (holder.h): its user, and its slot when above 1. Returns the length,
 * or -1 when buf is too small. */
int orderevent_holder(const struct orderevent *ev, char *buf, size_t len);
int orderevent_decode(const char *data, size_t len, struct orderevent *ev, char *err, size_t errlen);

#endif
