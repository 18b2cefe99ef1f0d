#include "ctl/ctlcouponcreate.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl/ctlargs.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "common/clock.h"
#include "common/couponterms.h"
#include "common/timeparse.h"

/* INT UNSIGNED columns. */
#define CTLCOUPONCREATE_MAX_COUNT 4294967295LL

int ctlcouponcreate_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { NAME, TYPE, AMOUNT, RATE, MIN_ORDER, MAX_DISCOUNT, TOTAL, START, END, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [NAME] = { "--name", true, NULL },
        [TYPE] = { "--type", true, NULL },
        [AMOUNT] = { "--amount", false, NULL },
        [RATE] = { "--rate", false, NULL },
        [MIN_ORDER] = { "--min-order", false, NULL },
        [MAX_DISCOUNT] = { "--max-discount", false, NULL },
        [TOTAL] = { "--total", true, NULL },
        [START] = { "--start", true, NULL },
        [END] = { "--end", true, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;

    if ((rc = ctlargs_name(ctl, "--name", opts[NAME].value)) != CTLRUN_OK)
        return rc;

    static const char *const types[] = { "CASH", "DISCOUNT", "GIFT" };
    const char *type = NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcasecmp(opts[TYPE].value, types[i]) == 0)
            type = types[i];
    if (!type)
        return ctlout_usage_error(ctl, "--type '%s': must be CASH, DISCOUNT or GIFT",
                                  opts[TYPE].value);

    int64_t amount = 0, rate = CTLCOUPON_RATE_ONE, min_order = 0, max_discount = 0;
    if (opts[AMOUNT].value &&
        (rc = ctlargs_amount(ctl, "--amount", opts[AMOUNT].value, &amount)) != CTLRUN_OK)
        return rc;
    if (opts[MIN_ORDER].value &&
        (rc = ctlargs_amount(ctl, "--min-order", opts[MIN_ORDER].value, &min_order)) != CTLRUN_OK)
        return rc;
    if (opts[MAX_DISCOUNT].value &&
        (rc = ctlargs_amount(ctl, "--max-discount", opts[MAX_DISCOUNT].value, &max_discount)) != CTLRUN_OK)
        return rc;
    if (opts[RATE].value && (rc = ctlargs_rate(ctl, opts[RATE].value, &rate)) != CTLRUN_OK)
        return rc;

    /* Options that mean nothing for a type are refused rather than stored and ignored:
     * they are most likely a mistake about the type. */
    if (strcmp(type, "CASH") == 0) {
        if (!opts[AMOUNT].value || amount <= 0)
            return ctlout_usage_error(ctl, "a CASH coupon needs --amount greater than 0");
        if (opts[RATE].value)
            return ctlout_usage_error(ctl, "--rate applies only to DISCOUNT coupons");
        if (opts[MAX_DISCOUNT].value)
            return ctlout_usage_error(ctl, "--max-discount applies only to DISCOUNT coupons");
    } else if (strcmp(type, "DISCOUNT") == 0) {
        if (!opts[RATE].value)
            return ctlout_usage_error(ctl, "a DISCOUNT coupon needs --rate (share paid, like 0.85)");
        if (opts[AMOUNT].value)
            return ctlout_usage_error(ctl, "--amount applies only to CASH coupons");
    } else {
        if (opts[AMOUNT].value || opts[RATE].value || opts[MAX_DISCOUNT].value)
            return ctlout_usage_error(ctl, "a GIFT coupon takes no --amount, --rate or --max-discount");
    }

    int64_t total;
    if ((rc = ctlargs_count(ctl, "--total", opts[TOTAL].value, 1, CTLCOUPONCREATE_MAX_COUNT,
                            &total)) != CTLRUN_OK)
        return rc;
    int64_t now = clock_wall_ms(), start_ms, end_ms;
    if ((rc = ctlargs_window(ctl, opts[START].value, opts[END].value, now, &start_ms, &end_ms)) !=
        CTLRUN_OK)
        return rc;
    if (end_ms <= start_ms)
        return ctlout_usage_error(ctl, "--end must be after --start");
    if (end_ms <= now)
        return ctlout_usage_error(ctl, "--end '%s' is in the past: the coupon would be expired at once",
                                  opts[END].value);

    char s_amount[32], s_min[32], s_max[32], s_rate[48], s_start[32], s_end[32];
    couponterms_format_cents(amount, s_amount, sizeof(s_amount));
    couponterms_format_cents(min_order, s_min, sizeof(s_min));
    couponterms_format_cents(max_discount, s_max, sizeof(s_max));
    ctlcoupon_rate_text(rate, s_rate, sizeof(s_rate));
    timeparse_format_sql(start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(end_ms, s_end, sizeof(s_end));

    char *name = ctldb_quote(ctl, opts[NAME].value);
    if (!name)
        return CTLRUN_FAIL;
    size_t sqllen = strlen(name) + 512;
    char *sql = malloc(sqllen);
    if (!sql) {
        free(name);
        return ctlout_fail(ctl, "out of memory");
    }
    snprintf(sql, sqllen,
             "INSERT INTO coupon (name, type, amount, rate, min_order, max_discount, total_count, "
             "start_time, end_time, status) VALUES (%s, '%s', %s, %s, %s, %s, %" PRId64
             ", '%s', '%s', 'ACTIVE')",
             name, type, s_amount, s_rate, s_min, s_max, total, s_start, s_end);
    free(name);
    rc = ctldb_exec(ctl, sql);
    free(sql);
    if (rc != CTLRUN_OK)
        return rc;
    int64_t id = (int64_t)mysql_insert_id(ctl->db);

    if (ctl->json) {
        char iso_start[40], iso_end[40];
        timeparse_format(start_ms, iso_start, sizeof(iso_start));
        timeparse_format(end_ms, iso_end, sizeof(iso_end));
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddNumberToObject(obj, "id", (double)id);
        cJSON_AddStringToObject(obj, "name", opts[NAME].value);
        cJSON_AddStringToObject(obj, "type", type);
        cJSON_AddStringToObject(obj, "amount", s_amount);
        cJSON_AddStringToObject(obj, "rate", s_rate);
        cJSON_AddStringToObject(obj, "minOrder", s_min);
        cJSON_AddStringToObject(obj, "maxDiscount", s_max);
        cJSON_AddNumberToObject(obj, "total", (double)total);
        cJSON_AddStringToObject(obj, "start", iso_start);
        cJSON_AddStringToObject(obj, "end", iso_end);
        cJSON_AddStringToObject(obj, "status", "ACTIVE");
        return ctlout_json(ctl, obj);
    }
    printf("%" PRId64 "\n", id);
    return CTLRUN_OK;
}
