#ifndef SK_CTLREFUSED_H
#define SK_CTLREFUSED_H

#include <stdint.h>

#include "ctl/ctlrun.h"

struct cJSON;

/* A sale's refusals by reason as the gateways counted them (gateway/refusals.h): the
 * fields 'refused:<STATUS>' of its activity hash, bucket 0's. They stay when the sale is
 * archived (the hash is its record then). */

#define CTLREFUSED_MAX 32

struct ctlrefused_reason {
    char status[32];
    int64_t count;
};

struct ctlrefused {
    int n;
    struct ctlrefused_reason reason[CTLREFUSED_MAX];  /* most first */
    int64_t total;
};

/* Reads them; a sale never refused has n = 0. */
int ctlrefused_read(struct ctlrun *ctl, int64_t activity_id, struct ctlrefused *out);
/* {"OUT_OF_STOCK": n, ...} added to obj as "refused". */
void ctlrefused_json(const struct ctlrefused *r, struct cJSON *obj);
/* "refused    12,345: OUT_OF_STOCK 12,000, DUPLICATE 345" (nothing when n = 0). */
void ctlrefused_print(const struct ctlrefused *r);

#endif
