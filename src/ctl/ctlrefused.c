#include "ctl/ctlrefused.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/keys.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"

#define FIELD_PREFIX "refused:"

/* Most first; equal counts by name, so that every read lists them alike. */
static int by_count(const void *a, const void *b)
{
    const struct ctlrefused_reason *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->status, y->status);
}

int ctlrefused_read(struct ctlrun *ctl, int64_t activity_id, struct ctlrefused *out)
{
    memset(out, 0, sizeof(*out));
    struct keys_set k;
    if (keys_set_build(&k, &ctl->cfg, activity_id) != 0)
        return ctlout_fail(ctl, "activity %" PRId64 ": key names too long", activity_id);
    /* The activity hash is a few dozen fields whatever the size of the sale. */
    const char *argv[] = { "HGETALL", k.name[KEYS_ACTIVITY] };
    redisReply *r = ctlredis_argv(ctl, 2, argv);
    if (!r)
        return CTLRUN_FAIL;
    size_t plen = strlen(FIELD_PREFIX);
    size_t fields = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    for (size_t i = 0; i + 1 < fields && out->n < CTLREFUSED_MAX; i += 2) {
        const redisReply *f = r->element[i];
        int64_t count;
        if (f->type != REDIS_REPLY_STRING || f->len <= plen || strncmp(f->str, FIELD_PREFIX, plen) != 0 ||
            ctlredis_int(r->element[i + 1], &count) != 0 || count <= 0)
            continue;
        struct ctlrefused_reason *one = &out->reason[out->n++];
        snprintf(one->status, sizeof(one->status), "%s", f->str + plen);
        one->count = count;
        out->total += count;
    }
    freeReplyObject(r);
    qsort(out->reason, (size_t)out->n, sizeof(out->reason[0]), by_count);
    return CTLRUN_OK;
}

void ctlrefused_json(const struct ctlrefused *r, cJSON *obj)
{
    cJSON *refused = cJSON_AddObjectToObject(obj, "refused");
    for (int i = 0; refused && i < r->n; i++)
        cJSON_AddNumberToObject(refused, r->reason[i].status, (double)r->reason[i].count);
}

void ctlrefused_print(const struct ctlrefused *r)
{
    if (r->n == 0)
        return;
    printf("refused    %" PRId64 ":", r->total);
    for (int i = 0; i < r->n; i++)
        printf("%s %s %" PRId64, i ? "," : "", r->reason[i].status, r->reason[i].count);
    printf("\n");
}
