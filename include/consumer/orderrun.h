#ifndef SK_ORDERRUN_H
#define SK_ORDERRUN_H

#include <stddef.h>
#include <stdint.h>

#include "common/orderevent.h"
#include "consumer/batch.h"

/* Orders sharing activity and coupon, sorted by order number: a slice of the batch's
 * accepted orders, with the slices of their results (written by orderrows_write). */
struct orderrun {
    const struct orderevent *orders;
    unsigned char *in_db;           /* parallel to orders */
    struct batch_coupon *coupons;   /* parallel to orders */
    size_t count;
    int64_t activity_id;
    int64_t coupon_id;              /* resolved: never 0 unless the activity has none */
};

#endif
