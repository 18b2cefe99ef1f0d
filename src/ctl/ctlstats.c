#include "ctl/ctlstats.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctlredis.h"
#include "ctl/ctltable.h"
#include "ctl/ctlutf8.h"
#include "common/clock.h"

/* Names are cut in the text tables so that one long name does not push every row wide;
 * --json has them whole. */
#define CTLSTATS_NAME_CHARS 32

static void ctlstats_name(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s", name);
    ctlutf8_truncate(buf, CTLSTATS_NAME_CHARS);
}

static int ctlstats_coupons(struct ctlrun *ctl, int64_t now, cJSON *json)
{
    MYSQL_RES *res = ctldb_query(ctl, "SELECT id FROM coupon ORDER BY id");
    if (!res)
        return CTLRUN_FAIL;
    static const char *const heads[] = { "coupon", "name", "type", "status", "total", "issued", "used",
                                         "remaining" };
    struct ctltable t;
    ctltable_init(&t, 8, heads, "rlllrrrr");
    cJSON *arr = json ? cJSON_AddArrayToObject(json, "coupons") : NULL;
    int rc = CTLRUN_OK;
    MYSQL_ROW r;
    while (rc == CTLRUN_OK && (r = mysql_fetch_row(res))) {
        struct ctlallotment al;
        /* The same count a grant would find, only without its locks. */
        rc = ctlallotment_read(ctl, ctldb_int(r[0]), now, false, &al);
        if (rc != CTLRUN_OK)
            break;
        const struct ctlcoupon_row *cp = &al.coupon;
        if (arr) {
            cJSON *c = cJSON_CreateObject();
            cJSON_AddNumberToObject(c, "id", (double)cp->id);
            cJSON_AddStringToObject(c, "name", cp->name);
            cJSON_AddStringToObject(c, "type", cp->type);
            cJSON_AddStringToObject(c, "status", now >= cp->end_ms && strcmp(cp->status, "ACTIVE") == 0
                                                     ? "EXPIRED" : cp->status);
            cJSON_AddNumberToObject(c, "total", (double)cp->total);
            cJSON_AddNumberToObject(c, "issued", (double)cp->issued);
            cJSON_AddNumberToObject(c, "used", (double)cp->used);
            cJSON_AddNumberToObject(c, "heldBySales", (double)al.count.held);
            cJSON_AddNumberToObject(c, "remaining", (double)al.remaining);
            cJSON_AddItemToArray(arr, c);
            continue;
        }
        char id[24], name[CTLCOUPON_NAME_BYTES], total[24], issued[24], used[24], left[24];
        snprintf(id, sizeof(id), "%" PRId64, cp->id);
        ctlstats_name(cp->name, name, sizeof(name));
        snprintf(total, sizeof(total), "%" PRId64, cp->total);
        snprintf(issued, sizeof(issued), "%" PRId64, cp->issued);
        snprintf(used, sizeof(used), "%" PRId64, cp->used);
        snprintf(left, sizeof(left), "%" PRId64, al.remaining);
        /* A coupon past its validity is expired whatever its status column says. */
        const char *status = now >= cp->end_ms && strcmp(cp->status, "ACTIVE") == 0 ? "EXPIRED" : cp->status;
        const char *cells[] = { id, name, cp->type, status, total, issued, used, left };
        rc = ctltable_row(ctl, &t, cells);
    }
    mysql_free_result(res);
    if (rc == CTLRUN_OK && !json) {
        ctltable_print(&t, stdout);
    }
    ctltable_free(&t);
    return rc;
}

static int ctlstats_activities(struct ctlrun *ctl, int64_t now, cJSON *json)
{
    struct ctlactivity_row *rows;
    size_t n;
    if (ctlactivity_list(ctl, 0, false, &rows, &n) != CTLRUN_OK)
        return CTLRUN_FAIL;
    static const char *const heads[] = { "activity", "name", "coupon", "status", "stock", "sold",
                                         "left", "live", "returned" };
    struct ctltable t;
    ctltable_init(&t, 9, heads, "rlrlrrrrr");
    cJSON *arr = json ? cJSON_AddArrayToObject(json, "activities") : NULL;
    int rc = CTLRUN_OK;
    for (size_t i = 0; i < n && rc == CTLRUN_OK; i++) {
        const struct ctlactivity_row *a = &rows[i];
        struct ctlactivity_redis rd;
        if ((rc = ctlactivity_read_redis(ctl, a, &rd)) != CTLRUN_OK)
            break;
        /* Live: stock taken in Redis whose order is not final yet. */
        int64_t live = rd.reservations + rd.queued + rd.claimed;
        const char *status = ctlactivity_status_at(a, now);
        if (arr) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "id", (double)a->id);
            cJSON_AddStringToObject(o, "name", a->name);
            cJSON_AddNumberToObject(o, "couponId", (double)a->coupon_id);
            cJSON_AddStringToObject(o, "status", status);
            cJSON_AddNumberToObject(o, "stock", (double)a->stock);
            cJSON_AddNumberToObject(o, "sold", (double)a->sold_count);
            cJSON_AddBoolToObject(o, "warmed", rd.warmed);
            if (rd.has_stock)
                cJSON_AddNumberToObject(o, "stockLeft", (double)rd.stock_left);
            else
                cJSON_AddNullToObject(o, "stockLeft");
            cJSON_AddNumberToObject(o, "live", (double)live);
            cJSON_AddNumberToObject(o, "returned", (double)rd.returned);
            cJSON_AddNumberToObject(o, "holds", (double)ctlallotment_holds(a, now, &rd));
            cJSON_AddItemToArray(arr, o);
            continue;
        }
        char id[24], name[CTLACTIVITY_NAME_BYTES], coupon[24], stock[24], sold[24], left[24],
            s_live[24], returned[24];
        snprintf(id, sizeof(id), "%" PRId64, a->id);
        ctlstats_name(a->name, name, sizeof(name));
        snprintf(coupon, sizeof(coupon), "%" PRId64, a->coupon_id);
        snprintf(stock, sizeof(stock), "%" PRId64, a->stock);
        snprintf(sold, sizeof(sold), "%" PRId64, a->sold_count);
        snprintf(left, sizeof(left), "%" PRId64, rd.stock_left);
        snprintf(s_live, sizeof(s_live), "%" PRId64, live);
        snprintf(returned, sizeof(returned), "%" PRId64, rd.returned);
        const char *cells[] = { id, name, coupon, status, stock, sold, rd.has_stock ? left : NULL,
                                s_live, returned };
        rc = ctltable_row(ctl, &t, cells);
    }
    free(rows);
    if (rc == CTLRUN_OK && !json)
        ctltable_print(&t, stdout);
    ctltable_free(&t);
    return rc;
}

int ctlstats_run(struct ctlrun *ctl, int argc, char **argv)
{
    int rc = ctlargs_parse(ctl, argc, argv, NULL, 0, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    if (!ctldb_conn(ctl) || !ctlredis_conn(ctl))
        return CTLRUN_FAIL;
    int64_t now = clock_wall_ms();
    cJSON *json = ctl->json ? cJSON_CreateObject() : NULL;
    if (ctl->json && !json)
        return ctlout_fail(ctl, "out of memory");
    rc = ctlstats_coupons(ctl, now, json);
    if (rc == CTLRUN_OK && !json)
        putchar('\n');
    if (rc == CTLRUN_OK)
        rc = ctlstats_activities(ctl, now, json);
    if (rc != CTLRUN_OK) {
        cJSON_Delete(json);
        return rc;
    }
    return json ? ctlout_json(ctl, json) : CTLRUN_OK;
}
