#include "admin/adminroutes.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivityarchive.h"
#include "ctl/ctlcouponarchive.h"
#include "ctl/ctlactivitycancel.h"
#include "ctl/ctlactivitycreate.h"
#include "ctl/ctlactivityupdate.h"
#include "ctl/ctllist.h"
#include "ctl/ctlactivityshow.h"
#include "ctl/ctlactivitywarmup.h"
#include "ctl/ctlbanadd.h"
#include "ctl/ctlbanlist.h"
#include "ctl/ctlbanremove.h"
#include "ctl/ctlbansync.h"
#include "ctl/ctlcouponcreate.h"
#include "ctl/ctlcoupongrant.h"
#include "ctl/ctlcouponrevoke.h"
#include "ctl/ctlcouponshow.h"
#include "ctl/ctlcouponstatus.h"
#include "ctl/ctlcouponwarmup.h"
#include "ctl/ctlorder.h"
#include "ctl/ctlordercancel.h"
#include "ctl/ctlstats.h"
#include "ctl/ctlverify.h"

const struct adminroutes_route adminroutes_table[] = {
    { "GET", "/admin/orders", "order list", ctllist_orders_run, NULL, 200,
      { { "activityId", "--activity" }, { "status", "--status" }, { "userId", "--user" },
        { "after", "--after" }, { "limit", "--limit" }, { "format", "--format" }, { NULL, NULL } } },
    { "GET", "/admin/coupons", "coupon list", ctllist_coupons_run, NULL, 200,
      { { "status", "--status" }, { "after", "--after" }, { "limit", "--limit" }, { "format", "--format" },
        { NULL, NULL } } },
    { "GET", "/admin/activities", "activity list", ctllist_activities_run, NULL, 200,
      { { "couponId", "--coupon" }, { "status", "--status" }, { "after", "--after" }, { "limit", "--limit" },
        { "format", "--format" }, { NULL, NULL } } },
    { "GET", "/admin/audit", "audit list", ctllist_audit_run, NULL, 200,
      { { "before", "--before" }, { "limit", "--limit" }, { "format", "--format" }, { NULL, NULL } } },
    { "GET", "/admin/stats", "stats", ctlstats_run, NULL, 200, { { NULL, NULL } } },
    { "POST", "/admin/coupons", "coupon create", ctlcouponcreate_run, NULL, 201,
      { { "name", "--name" }, { "type", "--type" }, { "amount", "--amount" }, { "rate", "--rate" },
        { "minOrder", "--min-order" }, { "maxDiscount", "--max-discount" }, { "total", "--total" },
        { "start", "--start" }, { "end", "--end" }, { NULL, NULL } } },
    { "GET", "/admin/coupons/{id}", "coupon show", ctlcouponshow_run, NULL, 200, { { NULL, NULL } } },
    { "POST", "/admin/coupons/{id}/grant", "coupon grant", ctlcoupongrant_run, "--coupon", 200,
      { { "userId", "--user" }, { "ref", "--ref" }, { NULL, NULL } } },
    { "POST", "/admin/user-coupons/{id}/revoke", "coupon revoke", ctlcouponrevoke_run, NULL, 200,
      { { "reason", "--reason" }, { NULL, NULL } } },
    { "POST", "/admin/coupons/{id}/warmup", "coupon warmup", ctlcouponwarmup_run, NULL, 200,
      { { NULL, NULL } } },
    { "POST", "/admin/coupons/{id}/deactivate", "coupon deactivate", ctlcouponstatus_deactivate, NULL, 200,
      { { NULL, NULL } } },
    { "POST", "/admin/coupons/{id}/activate", "coupon activate", ctlcouponstatus_activate, NULL, 200,
      { { NULL, NULL } } },
    { "POST", "/admin/coupons/{id}/archive", "coupon archive", ctlcouponarchive_run, NULL, 200,
      { { NULL, NULL } } },
    { "POST", "/admin/activities", "activity create", ctlactivitycreate_run, NULL, 201,
      { { "couponId", "--coupon" }, { "stock", "--stock" }, { "start", "--start" }, { "end", "--end" },
        { "name", "--name" }, { "perUser", "--per-user" }, { "buckets", "--buckets" }, { NULL, NULL } } },
    { "GET", "/admin/activities/{id}", "activity show", ctlactivityshow_run, NULL, 200, { { NULL, NULL } } },
    { "PATCH", "/admin/activities/{id}", "activity update", ctlactivityupdate_run, NULL, 200,
      { { "name", "--name" }, { "start", "--start" }, { "end", "--end" }, { "stock", "--stock" },
        { "perUser", "--per-user" }, { NULL, NULL } } },
    { "POST", "/admin/activities/{id}/cancel", "activity cancel", ctlactivitycancel_run, NULL, 200,
      { { NULL, NULL } } },
    { "POST", "/admin/activities/{id}/warmup", "activity warmup", ctlactivitywarmup_run, NULL, 200,
      { { NULL, NULL } } },
    { "POST", "/admin/activities/{id}/archive", "activity archive", ctlactivityarchive_run, NULL, 200,
      { { NULL, NULL } } },
    { "GET", "/admin/activities/{id}/verify", "verify", ctlverify_run, NULL, 200, { { NULL, NULL } } },
    { "GET", "/admin/activities/{id}/orders", "order find", ctlorder_find_run, "--activity", 200,
      { { "userId", "--user" }, { NULL, NULL } } },
    { "GET", "/admin/orders/{id}", "order show", ctlorder_show_run, NULL, 200, { { NULL, NULL } } },
    { "POST", "/admin/orders/{id}/cancel", "order cancel", ctlordercancel_run, NULL, 200,
      { { "reason", "--reason" }, { NULL, NULL } } },
    { "GET", "/admin/bans", "ban list", ctlbanlist_run, NULL, 200,
      { { "activityId", "--activity" }, { "all", "--all" }, { NULL, NULL } } },
    { "POST", "/admin/bans", "ban add", ctlbanadd_run, NULL, 201,
      { { "userId", "--user" }, { "ip", "--ip" }, { "activityId", "--activity" }, { "for", "--for" },
        { "until", "--until" }, { "reason", "--reason" }, { NULL, NULL } } },
    { "DELETE", "/admin/bans/{id}", "ban remove", ctlbanremove_run, NULL, 200, { { NULL, NULL } } },
    { "POST", "/admin/bans/sync", "ban sync", ctlbansync_run, NULL, 200, { { NULL, NULL } } },
};

const size_t adminroutes_count = sizeof(adminroutes_table) / sizeof(adminroutes_table[0]);

/* Whether path matches pattern, segment by segment; the "{id}" segment is copied out. */
static bool path_matches(const char *pattern, const char *path, char *id, size_t idlen)
{
    id[0] = '\0';
    while (*pattern && *path) {
        if (*pattern != '/' || *path != '/')
            return false;
        pattern++;
        path++;
        size_t pn = strcspn(pattern, "/"), n = strcspn(path, "/");
        if (pn == 4 && strncmp(pattern, "{id}", 4) == 0) {
            if (n == 0)
                return false;
            snprintf(id, idlen, "%.*s", (int)n, path);
        } else if (pn != n || strncmp(pattern, path, n) != 0) {
            return false;
        }
        pattern += pn;
        path += n;
    }
    return *pattern == '\0' && *path == '\0';
}

/* A path a route names literally ("/admin/bans/sync") is that route's alone: a route whose
 * "{id}" would take the same segment (DELETE /admin/bans/{id}) does not serve it, nor
 * appear in its Allow. */
static bool named_literally(const char *path)
{
    char none[8];
    for (size_t i = 0; i < adminroutes_count; i++)
        if (!strstr(adminroutes_table[i].path, "{id}") &&
            path_matches(adminroutes_table[i].path, path, none, sizeof(none)))
            return true;
    return false;
}

static bool method_serves(const char *route_method, const char *method)
{
    return strcmp(route_method, method) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

enum adminroutes_match adminroutes_find(const char *method, const char *path,
                                        const struct adminroutes_route **route, char *id, size_t idlen,
                                        char *allow, size_t allowlen)
{
    allow[0] = '\0';
    bool path_known = false, literal = named_literally(path);
    for (size_t i = 0; i < adminroutes_count; i++) {
        const struct adminroutes_route *r = &adminroutes_table[i];
        if ((literal && strstr(r->path, "{id}")) || !path_matches(r->path, path, id, idlen))
            continue;
        if (method_serves(r->method, method)) {
            *route = r;
            return ADMINROUTES_FOUND;
        }
        path_known = true;
        size_t used = strlen(allow);
        snprintf(allow + used, allowlen - used, "%s%s", used ? ", " : "",
                 strcmp(r->method, "GET") == 0 ? "GET, HEAD" : r->method);
    }
    id[0] = '\0';
    return path_known ? ADMINROUTES_WRONG_METHOD : ADMINROUTES_NO_PATH;
}

static const struct adminroutes_field *field_of(const struct adminroutes_route *route, const char *name)
{
    for (const struct adminroutes_field *f = route->fields; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

/* A field's value as the command line would carry it. Numbers are written back the
 * shortest way that reads as the same double: 0.85 stays "0.85", 10 is "10". */
static int value_text(const cJSON *v, char *out, size_t outlen)
{
    if (cJSON_IsString(v)) {
        int n = snprintf(out, outlen, "%s", v->valuestring);
        return n < 0 || (size_t)n >= outlen ? -1 : 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return -1;
    double d = v->valuedouble;
    if (d == floor(d) && fabs(d) < 9007199254740992.0)
        snprintf(out, outlen, "%.0f", d);
    else
        snprintf(out, outlen, "%.15g", d);
    return 0;
}

/* The options whose values are text (names, references, times, choices): the contract
 * types them as strings, and a JSON number given for one is refused rather than taken as
 * its digits. Ids, counts and amounts take either. */
static bool takes_text(const char *option)
{
    static const char *const text[] = { "--name", "--ref", "--reason", "--ip", "--type", "--status",
                                        "--format", "--start", "--end", "--until", "--for" };
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        if (strcmp(option, text[i]) == 0)
            return true;
    return false;
}

static char *joined(const char *option, const char *value)
{
    size_t n = strlen(option) + 1 + strlen(value) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", option, value);
    return s;
}

void adminroutes_free_argv(char **argv, int argc)
{
    if (!argv)
        return;
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
}

int adminroutes_argv(const struct adminroutes_route *route, const char *id, const cJSON *body,
                     char ***argv_out, int *argc_out, char *err, size_t errlen)
{
    if (body && !cJSON_IsObject(body)) {
        snprintf(err, errlen, "the body must be a JSON object");
        return -1;
    }
    int max = ADMINROUTES_MAX_FIELDS + 2;
    char **argv = calloc((size_t)max + 1, sizeof(*argv));
    int argc = 0;
    if (!argv) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (id[0]) {
        argv[argc] = route->id_option ? joined(route->id_option, id) : strdup(id);
        if (!argv[argc++])
            goto oom;
    }
    const cJSON *item = NULL;
    cJSON_ArrayForEach(item, body)
    {
        const struct adminroutes_field *f = field_of(route, item->string);
        if (!f) {
            char known[256] = "";
            for (const struct adminroutes_field *k = route->fields; k->name; k++) {
                size_t used = strlen(known);
                snprintf(known + used, sizeof(known) - used, "%s%s", used ? ", " : "", k->name);
            }
            if (known[0])
                snprintf(err, errlen, "unknown field '%s' (%s takes: %s)", item->string, route->command,
                         known);
            else
                snprintf(err, errlen, "unknown field '%s' (%s takes no body fields)", item->string,
                         route->command);
            goto refuse;
        }
        char value[1024];
        if (cJSON_IsNumber(item) && takes_text(f->option)) {
            snprintf(err, errlen, "%s: must be a string", f->name);
            goto refuse;
        }
        if (value_text(item, value, sizeof(value)) != 0) {
            snprintf(err, errlen, "%s: must be a string or a number (at most %zu bytes)", f->name,
                     sizeof(value) - 1);
            goto refuse;
        }
        if (argc >= max) {
            snprintf(err, errlen, "too many fields");
            goto refuse;
        }
        /* "--name=value": a value that starts with '-' stays the option's value. */
        argv[argc] = joined(f->option, value);
        if (!argv[argc++])
            goto oom;
    }
    *argv_out = argv;
    *argc_out = argc;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
refuse:
    adminroutes_free_argv(argv, argc);
    return -1;
}

void adminroutes_words(const struct adminroutes_route *route, const char *message, char *out, size_t outlen)
{
    size_t o = 0;
    const char *p = message;
    while (*p && o + 1 < outlen) {
        const char *word = NULL;
        size_t n = 0;
        if (p[0] == '-' && p[1] == '-') {
            for (const struct adminroutes_field *f = route->fields; f->name && !word; f++) {
                size_t on = strlen(f->option);
                if (strncmp(p, f->option, on) == 0 && p[on] != '-' && !(p[on] >= 'a' && p[on] <= 'z')) {
                    word = f->name;
                    n = on;
                }
            }
            if (!word && route->id_option && strncmp(p, route->id_option, strlen(route->id_option)) == 0) {
                word = "the path's id";
                n = strlen(route->id_option);
            }
        }
        if (word) {
            int w = snprintf(out + o, outlen - o, "%s", word);
            o = w < 0 || (size_t)w >= outlen - o ? outlen - 1 : o + (size_t)w;
            p += n;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}
