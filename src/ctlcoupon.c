#include "ctlcoupon.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"
#include "timeparse.h"

/* DECIMAL(15,2) holds at most 13 digits of yuan. */
#define CTLCOUPON_MAX_CENTS 999999999999999LL
/* INT UNSIGNED columns. */
#define CTLCOUPON_MAX_COUNT 4294967295LL
/* DECIMAL(5,4): the rate is kept in ten-thousandths. */
#define CTLCOUPON_RATE_ONE 10000

static int ctlcoupon_money(struct ctl *ctl, const char *what, const char *s, int64_t *cents)
{
    if (parse_cents(s, cents) != 0 || *cents > CTLCOUPON_MAX_CENTS)
        return ctl_usage_error(ctl,
                               "%s '%s': not an amount in yuan (non-negative, at most 2 decimals, "
                               "like 10.00)",
                               what, s);
    return CTL_OK;
}

/* "0.85" -> 8500: a share of the price paid, in (0, 1], at most 4 decimals. */
static int ctlcoupon_rate(struct ctl *ctl, const char *s, int64_t *out)
{
    const char *p = s;
    int64_t v = 0;
    int whole_digits = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (++whole_digits > 1)
            goto bad;
        v = *p - '0';
    }
    if (whole_digits == 0)
        goto bad;
    v *= CTLCOUPON_RATE_ONE;
    if (*p == '.') {
        p++;
        int64_t scale = CTLCOUPON_RATE_ONE / 10;
        int decimals = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            if (++decimals > 4)
                goto bad;
            v += (*p - '0') * scale;
            scale /= 10;
        }
        if (decimals == 0)
            goto bad;
    }
    if (*p != '\0' || v <= 0 || v > CTLCOUPON_RATE_ONE)
        goto bad;
    *out = v;
    return CTL_OK;
bad:
    return ctl_usage_error(ctl,
                           "--rate '%s': must be a share of the price paid in (0, 1] with at "
                           "most 4 decimals, like 0.85",
                           s);
}

int ctlcoupon_create(struct ctl *ctl, int argc, char **argv)
{
    enum { NAME, TYPE, AMOUNT, RATE, MIN_ORDER, MAX_DISCOUNT, TOTAL, START, END, NOPTS };
    struct ctl_opt opts[NOPTS] = {
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
    int rc = ctl_parse_opts(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;

    if ((rc = ctl_parse_name(ctl, "--name", opts[NAME].value)) != CTL_OK)
        return rc;

    static const char *const types[] = { "CASH", "DISCOUNT", "GIFT" };
    const char *type = NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcasecmp(opts[TYPE].value, types[i]) == 0)
            type = types[i];
    if (!type)
        return ctl_usage_error(ctl, "--type '%s': must be CASH, DISCOUNT or GIFT",
                               opts[TYPE].value);

    int64_t amount = 0, rate = CTLCOUPON_RATE_ONE, min_order = 0, max_discount = 0;
    if (opts[AMOUNT].value && (rc = ctlcoupon_money(ctl, "--amount", opts[AMOUNT].value, &amount)) != CTL_OK)
        return rc;
    if (opts[MIN_ORDER].value &&
        (rc = ctlcoupon_money(ctl, "--min-order", opts[MIN_ORDER].value, &min_order)) != CTL_OK)
        return rc;
    if (opts[MAX_DISCOUNT].value &&
        (rc = ctlcoupon_money(ctl, "--max-discount", opts[MAX_DISCOUNT].value, &max_discount)) != CTL_OK)
        return rc;
    if (opts[RATE].value && (rc = ctlcoupon_rate(ctl, opts[RATE].value, &rate)) != CTL_OK)
        return rc;

    /* Options that mean nothing for a type are refused rather than stored and ignored:
     * they are most likely a mistake about the type. */
    if (strcmp(type, "CASH") == 0) {
        if (!opts[AMOUNT].value || amount <= 0)
            return ctl_usage_error(ctl, "a CASH coupon needs --amount greater than 0");
        if (opts[RATE].value)
            return ctl_usage_error(ctl, "--rate applies only to DISCOUNT coupons");
        if (opts[MAX_DISCOUNT].value)
            return ctl_usage_error(ctl, "--max-discount applies only to DISCOUNT coupons");
    } else if (strcmp(type, "DISCOUNT") == 0) {
        if (!opts[RATE].value)
            return ctl_usage_error(ctl, "a DISCOUNT coupon needs --rate (share paid, like 0.85)");
        if (opts[AMOUNT].value)
            return ctl_usage_error(ctl, "--amount applies only to CASH coupons");
    } else {
        if (opts[AMOUNT].value || opts[RATE].value || opts[MAX_DISCOUNT].value)
            return ctl_usage_error(ctl, "a GIFT coupon takes no --amount, --rate or --max-discount");
    }

    int64_t total;
    if ((rc = ctl_parse_count(ctl, "--total", opts[TOTAL].value, 1, CTLCOUPON_MAX_COUNT, &total)) != CTL_OK)
        return rc;
    int64_t now = ctl_now_ms(), start_ms, end_ms;
    if ((rc = ctl_parse_time(ctl, "--start", opts[START].value, now, &start_ms)) != CTL_OK ||
        (rc = ctl_parse_time(ctl, "--end", opts[END].value, now, &end_ms)) != CTL_OK)
        return rc;
    if (end_ms <= start_ms)
        return ctl_usage_error(ctl, "--end must be after --start");

    char s_amount[32], s_min[32], s_max[32], s_rate[48], s_start[32], s_end[32];
    ctl_format_cents(amount, s_amount, sizeof(s_amount));
    ctl_format_cents(min_order, s_min, sizeof(s_min));
    ctl_format_cents(max_discount, s_max, sizeof(s_max));
    snprintf(s_rate, sizeof(s_rate), "%" PRId64 ".%04" PRId64, rate / CTLCOUPON_RATE_ONE,
             rate % CTLCOUPON_RATE_ONE);
    timeparse_format_sql(start_ms, s_start, sizeof(s_start));
    timeparse_format_sql(end_ms, s_end, sizeof(s_end));

    char *name = ctl_db_quote(ctl, opts[NAME].value);
    if (!name)
        return CTL_FAIL;
    size_t sqllen = strlen(name) + 512;
    char *sql = malloc(sqllen);
    if (!sql) {
        free(name);
        return ctl_fail(ctl, "out of memory");
    }
    snprintf(sql, sqllen,
             "INSERT INTO coupon (name, type, amount, rate, min_order, max_discount, total_count, "
             "start_time, end_time, status) VALUES (%s, '%s', %s, %s, %s, %s, %" PRId64
             ", '%s', '%s', 'ACTIVE')",
             name, type, s_amount, s_rate, s_min, s_max, total, s_start, s_end);
    free(name);
    rc = ctl_db_exec(ctl, sql);
    free(sql);
    if (rc != CTL_OK)
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
        return ctl_print_json(ctl, obj);
    }
    printf("%" PRId64 "\n", id);
    return CTL_OK;
}
