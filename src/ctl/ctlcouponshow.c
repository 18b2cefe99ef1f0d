#include "ctl/ctlcouponshow.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlallotment.h"
#include "ctl/ctlargs.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "ctl/ctltable.h"
#include "store/couponsync.h"
#include "common/clock.h"
#include "common/couponterms.h"
#include "common/timeparse.h"

/* The terms in words, as an operator reads them: "10.00 off orders from 100.00". */
static void ctlcouponshow_terms_text(const struct coupon_terms *t, char *buf, size_t len)
{
    char amount[32], min[32], cap[32], rate[48];
    couponterms_format_cents(t->amount, amount, sizeof(amount));
    couponterms_format_cents(t->min_order, min, sizeof(min));
    couponterms_format_cents(t->max_discount, cap, sizeof(cap));
    ctlcoupon_rate_text(t->rate, rate, sizeof(rate));
    char from[48] = "";
    if (t->min_order > 0)
        snprintf(from, sizeof(from), " from %s", min);
    switch (t->type) {
    case COUPON_CASH:
        snprintf(buf, len, "%s off orders%s", amount, from);
        break;
    case COUPON_DISCOUNT:
        snprintf(buf, len, "pay %s of orders%s, at most %s off", rate, from,
                 t->max_discount > 0 ? cap : "unlimited");
        break;
    default:
        snprintf(buf, len, "a gift, nothing off%s%s", t->min_order > 0 ? ", orders" : "", from);
        break;
    }
}

int ctlcouponshow_run(struct ctlrun *ctl, int argc, char **argv)
{
    int64_t id;
    int rc = ctlargs_single_id(ctl, argc, argv, "coupon id", &id);
    if (rc != CTLRUN_OK)
        return rc;
    if (!ctldb_conn(ctl))
        return CTLRUN_FAIL;
    struct usercoupon tmpl;
    if (ctlcoupon_terms(ctl, id, &tmpl) != CTLRUN_OK)
        return CTLRUN_FAIL;
    int64_t now = clock_wall_ms();
    struct ctlallotment al;
    if ((rc = ctlallotment_read(ctl, id, now, false, &al)) != CTLRUN_OK)
        return rc;
    const struct ctlcoupon_row *cp = &al.coupon;
    struct ctlactivity_row *acts;
    size_t nacts;
    if ((rc = ctlactivity_list(ctl, id, false, &acts, &nacts)) != CTLRUN_OK)
        return rc;
    int64_t *holds = calloc(nacts + 1, sizeof(*holds));
    if (!holds) {
        free(acts);
        return ctlout_fail(ctl, "out of memory");
    }
    for (size_t i = 0; i < nacts && rc == CTLRUN_OK; i++) {
        struct ctlactivity_redis rd;
        rc = ctlactivity_read_redis(ctl, &acts[i], &rd);
        if (rc == CTLRUN_OK)
            holds[i] = ctlallotment_holds(&acts[i], now, &rd);
    }
    if (rc != CTLRUN_OK) {
        free(holds);
        free(acts);
        return rc;
    }

    char amount[32], min[32], cap[32], rate[48], start[40], end[40], terms[160];
    couponterms_format_cents(tmpl.terms.amount, amount, sizeof(amount));
    couponterms_format_cents(tmpl.terms.min_order, min, sizeof(min));
    couponterms_format_cents(tmpl.terms.max_discount, cap, sizeof(cap));
    ctlcoupon_rate_text(tmpl.terms.rate, rate, sizeof(rate));
    timeparse_format(cp->start_ms, start, sizeof(start));
    timeparse_format(cp->end_ms, end, sizeof(end));
    ctlcouponshow_terms_text(&tmpl.terms, terms, sizeof(terms));
    const char *validity = now < cp->start_ms ? "not yet valid" : now >= cp->end_ms ? "expired" : "valid";

    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", cp->name);
        cJSON_AddStringToObject(obj, "type", cp->type);
        cJSON_AddStringToObject(obj, "amount", amount);
        cJSON_AddStringToObject(obj, "rate", rate);
        cJSON_AddStringToObject(obj, "minOrder", min);
        cJSON_AddStringToObject(obj, "maxDiscount", cap);
        cJSON_AddStringToObject(obj, "start", start);
        cJSON_AddStringToObject(obj, "end", end);
        cJSON_AddStringToObject(obj, "status", cp->status);
        cJSON_AddStringToObject(obj, "validity", validity);
        if (cp->archived_ms > 0) {
            char at[40];
            timeparse_format(cp->archived_ms, at, sizeof(at));
            cJSON_AddStringToObject(obj, "archivedAt", at);
        } else {
            cJSON_AddNullToObject(obj, "archivedAt");
        }
        cJSON_AddNumberToObject(obj, "total", (double)cp->total);
        cJSON_AddNumberToObject(obj, "issued", (double)cp->issued);
        cJSON_AddNumberToObject(obj, "used", (double)cp->used);
        cJSON_AddNumberToObject(obj, "heldBySales", (double)al.count.held);
        cJSON_AddNumberToObject(obj, "remaining", (double)al.remaining);
        cJSON *arr = cJSON_AddArrayToObject(obj, "activities");
        for (size_t i = 0; i < nacts; i++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", (double)acts[i].id);
            cJSON_AddStringToObject(a, "name", acts[i].name);
            cJSON_AddStringToObject(a, "status", ctlactivity_status_at(&acts[i], now));
            cJSON_AddNumberToObject(a, "stock", (double)acts[i].stock);
            cJSON_AddNumberToObject(a, "sold", (double)acts[i].sold_count);
            cJSON_AddNumberToObject(a, "holds", (double)holds[i]);
            cJSON_AddItemToArray(arr, a);
        }
        free(holds);
        free(acts);
        return ctlout_json(ctl, obj);
    }

    printf("coupon     %" PRId64 " \"%s\"\n", id, cp->name);
    printf("type       %s: %s\n", cp->type, terms);
    printf("validity   %s .. %s (%s)\n", start, end, validity);
    printf("status     %s\n", cp->status);
    if (cp->archived_ms > 0) {
        char at[40];
        timeparse_format(cp->archived_ms, at, sizeof(at));
        printf("archived   %s: its user coupons are in MySQL only\n", at);
    }
    printf("counts     total %" PRId64 ", issued %" PRId64 ", used %" PRId64 "\n", cp->total, cp->issued,
           cp->used);
    printf("remaining  %" PRId64 " (total - issued - %" PRId64 " held by its sales)\n", al.remaining,
           al.count.held);
    if (nacts == 0) {
        printf("activities none\n");
    } else {
        static const char *const heads[] = { "activity", "name", "status", "stock", "sold", "holds" };
        struct ctltable t;
        ctltable_init(&t, 6, heads, "rllrrr");
        for (size_t i = 0; i < nacts && rc == CTLRUN_OK; i++) {
            char s_id[24], s_stock[24], s_sold[24], s_holds[24];
            snprintf(s_id, sizeof(s_id), "%" PRId64, acts[i].id);
            snprintf(s_stock, sizeof(s_stock), "%" PRId64, acts[i].stock);
            snprintf(s_sold, sizeof(s_sold), "%" PRId64, acts[i].sold_count);
            snprintf(s_holds, sizeof(s_holds), "%" PRId64, holds[i]);
            const char *cells[] = { s_id, acts[i].name, ctlactivity_status_at(&acts[i], now), s_stock,
                                    s_sold, s_holds };
            rc = ctltable_row(ctl, &t, cells);
        }
        printf("activities\n");
        ctltable_print(&t, stdout);
        ctltable_free(&t);
    }
    free(holds);
    free(acts);
    return rc;
}
