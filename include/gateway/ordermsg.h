#ifndef SK_ORDERMSG_H
#define SK_ORDERMSG_H

#include <stddef.h>

#include "common/orderevent.h"
#include "gateway/activity.h"

/* The order.created message of an order of a cached activity: ev as given, with the tag of
 * the user's bucket (bucket > 0 of a bucketed sale) so that the consumer finds the keys it
 * lives under. Every producer of orders sends it in this one shape: the request that
 * reserved it and a reaper that hands a stale reservation back to Kafka. Returns the
 * encoded length, or -1 when buf is too small. */
int ordermsg_encode(struct activity_cache *activities, struct orderevent *ev, int bucket, char *buf,
                    size_t len);

/* The biggest message ordermsg_encode writes. */
#define ORDERMSG_MAX (256 + BUCKET_TAG_LEN)

#endif
