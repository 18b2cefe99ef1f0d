#ifndef SK_CTLBUCKETS_H
#define SK_CTLBUCKETS_H

#include <stddef.h>
#include <stdint.h>

#include "common/bucket.h"
#include "common/keys.h"
#include "ctl/ctlrun.h"

/* The buckets of one activity as seckillctl handles them (bucket.h): choosing their tags
 * at creation, their keys, and the stock in transit between them (rebalance.lua). Every
 * function prints its error and returns CTLRUN_FAIL, else CTLRUN_OK. */

/* count tags for a new activity id, bucket b >= 1 on a master no earlier bucket uses while
 * the cluster has masters left. */
int ctlbuckets_choose(struct ctlrun *ctl, int64_t id, int count, struct bucket_list *list);
/* The list recorded in MySQL (seckill_activity.bucket_tags). */
int ctlbuckets_parse(struct ctlrun *ctl, int64_t id, const char *recorded, struct bucket_list *list);
/* The keys of bucket b. */
int ctlbuckets_keys(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int b,
                    struct keys_set *k);
/* "host:port" of the master serving bucket b's keys now. */
int ctlbuckets_master(struct ctlrun *ctl, const struct keys_set *k, char *buf, size_t len);
/* Units taken out of a bucket ('out') that their destination has not received yet. */
int ctlbuckets_in_transit(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int64_t *units);
/* Delivers every transfer still recorded ('in' on its destination, 'done' on its source),
 * as a gateway's rebalance pass would; *units are those that arrived by this call. */
int ctlbuckets_finish(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int64_t *units);
/* Moves up to want unsold units of buckets 1.. into bucket 0 by whole transfers (out, in,
 * done), so that units can be taken back from bucket 0's stock key; *moved are those that
 * arrived. A transfer cut short is finished by any rebalance pass, as a gateway's is. */
int ctlbuckets_gather(struct ctlrun *ctl, int64_t id, const struct bucket_list *list, int64_t want,
                      int64_t *moved);

#endif
