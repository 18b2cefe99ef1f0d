#include "ctl/ctlargs.h"

#include <inttypes.h>
#include <string.h>

#include "ctl/ctlcoupon.h"
#include "ctl/ctlout.h"
#include "ctl/ctlutf8.h"
#include "common/orderno.h"
#include "common/parse.h"
#include "common/timeparse.h"

/* DECIMAL(15,2) holds at most 13 digits of yuan. */
#define CTLARGS_MAX_CENTS 999999999999999LL

static struct ctlargs_opt *ctlargs_find(struct ctlargs_opt *opts, size_t nopts, const char *name,
                                        size_t nlen)
{
    for (size_t k = 0; k < nopts; k++)
        if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, name, nlen) == 0)
            return &opts[k];
    return NULL;
}

int ctlargs_parse(struct ctlrun *ctl, int argc, char **argv, struct ctlargs_opt *opts, size_t nopts,
                  const char **pos, int min_pos, int max_pos, int *npos)
{
    int n = 0;
    bool only_positional = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && strcmp(a, "--") == 0) {
            only_positional = true;
            continue;
        }
        /* "-5" is a (bad) value, not an option: let the value parser say what is wrong. */
        bool looks_like_option = a[0] == '-' && a[1] != '\0' && !(a[1] >= '0' && a[1] <= '9');
        if (!only_positional && looks_like_option) {
            const char *eq = strchr(a, '=');
            size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
            struct ctlargs_opt *o = ctlargs_find(opts, nopts, a, nlen);
            if (!o)
                return ctlout_usage_error(ctl, "unknown option '%.*s'", (int)nlen, a);
            if (o->value)
                return ctlout_usage_error(ctl, "%s given twice", o->name);
            if (eq) {
                o->value = eq + 1;
            } else {
                if (i + 1 >= argc)
                    return ctlout_usage_error(ctl, "%s needs a value", o->name);
                o->value = argv[++i];
            }
            continue;
        }
        if (n >= max_pos)
            return ctlout_usage_error(ctl, "unexpected argument '%s'", a);
        pos[n++] = a;
    }
    for (size_t k = 0; k < nopts; k++)
        if (opts[k].required && !opts[k].value)
            return ctlout_usage_error(ctl, "%s is required", opts[k].name);
    if (n < min_pos)
        return ctlout_usage_error(ctl, "missing argument (usage: seckillctl %s %s)", ctl->command,
                                  ctl->usage ? ctl->usage : "");
    if (npos)
        *npos = n;
    return CTLRUN_OK;
}

int ctlargs_single_id(struct ctlrun *ctl, int argc, char **argv, const char *what, int64_t *id)
{
    const char *pos[1];
    int rc = ctlargs_parse(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    return rc != CTLRUN_OK ? rc : ctlargs_id(ctl, what, pos[0], id);
}

int ctlargs_id(struct ctlrun *ctl, const char *what, const char *s, int64_t *out)
{
    if (parse_id(s, out) != 0)
        return ctlout_usage_error(ctl, "%s '%s': not a positive integer id", what, s);
    return CTLRUN_OK;
}

int ctlargs_count(struct ctlrun *ctl, const char *what, const char *s, int64_t min, int64_t max,
                  int64_t *out)
{
    int64_t v = 0;
    if ((strcmp(s, "0") != 0 && parse_id(s, &v) != 0) || v < min || v > max)
        return ctlout_usage_error(ctl, "%s '%s': must be a whole number from %" PRId64 " to %" PRId64,
                                  what, s, min, max);
    *out = v;
    return CTLRUN_OK;
}

int ctlargs_time(struct ctlrun *ctl, const char *what, const char *s, int64_t now_ms, int64_t *out_ms)
{
    if (timeparse_parse(s, now_ms, out_ms) != 0)
        return ctlout_usage_error(ctl,
                                  "%s '%s': not a time (ISO-8601 like 2026-12-01T20:00:00, "
                                  "optionally with Z or +08:00; now; +10m, +2h, +1d)",
                                  what, s);
    return CTLRUN_OK;
}

int ctlargs_window(struct ctlrun *ctl, const char *start, const char *end, int64_t now_ms,
                   int64_t *start_ms, int64_t *end_ms)
{
    int64_t s_ms;
    int rc = ctlargs_time(ctl, "--start", start, now_ms, &s_ms);
    if (rc != CTLRUN_OK)
        return rc;
    /* "+1h" after a date means an hour of sale: counted from now it would end before a
     * start later than an hour from now (the example of docs/administration.md failed that way). */
    rc = ctlargs_time(ctl, "--end", end, timeparse_is_absolute(start) ? s_ms : now_ms, end_ms);
    if (rc != CTLRUN_OK)
        return rc;
    *start_ms = s_ms;
    return CTLRUN_OK;
}

int ctlargs_name(struct ctlrun *ctl, const char *what, const char *s)
{
    size_t chars = 0;
    bool blank = true;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = ctlutf8_seq(p);
        if (n == 0)
            return ctlout_usage_error(ctl, "%s: not valid UTF-8", what);
        if (n == 1 && (*p < 0x20 || *p == 0x7F))
            return ctlout_usage_error(ctl, "%s: control characters are not allowed", what);
        if (*p != ' ')
            blank = false;
        p += n;
        chars++;
    }
    if (blank)
        return ctlout_usage_error(ctl, "%s: must not be empty", what);
    if (chars > 128)
        return ctlout_usage_error(ctl, "%s: %zu characters, at most 128 allowed", what, chars);
    return CTLRUN_OK;
}

int ctlargs_amount(struct ctlrun *ctl, const char *what, const char *s, int64_t *cents)
{
    if (parse_cents(s, cents) != 0 || *cents > CTLARGS_MAX_CENTS)
        return ctlout_usage_error(ctl,
                                  "%s '%s': not an amount in yuan (non-negative, at most 2 decimals, "
                                  "like 10.00)",
                                  what, s);
    return CTLRUN_OK;
}

int ctlargs_rate(struct ctlrun *ctl, const char *s, int64_t *out)
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
    return CTLRUN_OK;
bad:
    return ctlout_usage_error(ctl,
                              "--rate '%s': must be a share of the price paid in (0, 1] with at "
                              "most 4 decimals, like 0.85",
                              s);
}

int ctlargs_reasoned(struct ctlrun *ctl, int argc, char **argv, const char **arg, const char **reason)
{
    enum { REASON, NOPTS };
    struct ctlargs_opt opts[NOPTS] = { [REASON] = { "--reason", false, NULL } };
    const char *pos[1];
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, pos, 1, 1, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    *arg = pos[0];
    *reason = opts[REASON].value ? opts[REASON].value : "";
    return opts[REASON].value ? ctlargs_name(ctl, "--reason", *reason) : CTLRUN_OK;
}

int ctlargs_order_no(struct ctlrun *ctl, const char *s, char *no, uint64_t *id, int64_t *activity_id)
{
    if (strlen(s) >= ORDERNO_LEN || orderno_parse(s, id, activity_id) != 0)
        return ctlout_usage_error(ctl, "order number '%s': expected <digits>-<activityId>", s);
    memcpy(no, s, strlen(s) + 1);
    return CTLRUN_OK;
}
