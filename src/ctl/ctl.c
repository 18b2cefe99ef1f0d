#include "ctl/ctl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/ctlactivity.h"
#include "ctl/ctlcoupon.h"
#include "ctl/ctlstats.h"
#include "ctl/ctlverify.h"
#include "store/db.h"
#include "common/log.h"
#include "common/luascript.h"
#include "common/parse.h"
#include "common/timeparse.h"

extern char **environ;

/* Admin commands may read whole hashes of a big sale: a slower answer than the gateway's
 * per-command deadline is expected, a dead server is not. */
#define CTL_REDIS_COMMAND_TIMEOUT_MS 30000

static int ctl_config_get(struct ctl *ctl, int argc, char **argv);
static int ctl_config_check(struct ctl *ctl, int argc, char **argv);

static const struct ctl_command ctl_commands[] = {
    { "config get", ctl_config_get, "KEY" },
    { "config check", ctl_config_check, "" },
    { "coupon create", ctlcoupon_create,
      "--name N --type CASH|DISCOUNT|GIFT [--amount 10.00] [--rate 0.85] [--min-order 100.00] "
      "[--max-discount 50.00] --total N --start T --end T" },
    { "coupon grant", ctlcoupon_grant, "--coupon ID --user UID [--ref REF]" },
    { "coupon show", ctlcoupon_show, "ID" },
    { "coupon warmup", ctlcoupon_warmup, "ID" },
    { "activity create", ctlactivity_create,
      "--coupon ID --stock N --start T --end T [--name N]" },
    { "activity warmup", ctlactivity_warmup, "ID" },
    { "activity cancel", ctlactivity_cancel, "ID" },
    { "activity show", ctlactivity_show, "ID" },
    { "verify", ctlverify_run, "ACTIVITY_ID" },
    { "stats", ctlstats_run, "" },
};

#define CTL_NCOMMANDS (sizeof(ctl_commands) / sizeof(ctl_commands[0]))

/* ---- messages ----------------------------------------------------------------------- */

static void ctl_vmessage(struct ctl *ctl, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof(line), fmt, ap);
    if (ctl && ctl->command)
        fprintf(stderr, "seckillctl: %s: %s\n", ctl->command, line);
    else
        fprintf(stderr, "seckillctl: %s\n", line);
}

int ctl_usage_error(struct ctl *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctl_vmessage(ctl, fmt, ap);
    va_end(ap);
    return CTL_USAGE;
}

int ctl_fail(struct ctl *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctl_vmessage(ctl, fmt, ap);
    va_end(ap);
    return CTL_FAIL;
}

void ctl_note(struct ctl *ctl, const char *fmt, ...)
{
    (void)ctl;
    va_list ap;
    va_start(ap, fmt);
    ctl_vmessage(NULL, fmt, ap);
    va_end(ap);
}

int ctl_print_json(struct ctl *ctl, void *cjson_obj)
{
    cJSON *obj = cjson_obj;
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    if (!text)
        return ctl_fail(ctl, "out of memory building JSON");
    puts(text);
    cJSON_free(text);
    return CTL_OK;
}

void ctl_format_cents(int64_t cents, char *buf, size_t len)
{
    const char *sign = cents < 0 ? "-" : "";
    uint64_t v = cents < 0 ? (uint64_t)0 - (uint64_t)cents : (uint64_t)cents;
    snprintf(buf, len, "%s%" PRIu64 ".%02" PRIu64, sign, v / 100, v % 100);
}

int64_t ctl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- options and values ----------------------------------------------------------------- */

static struct ctl_opt *ctl_find_opt(struct ctl_opt *opts, size_t nopts, const char *name,
                                    size_t nlen)
{
    for (size_t k = 0; k < nopts; k++)
        if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, name, nlen) == 0)
            return &opts[k];
    return NULL;
}

int ctl_parse_opts(struct ctl *ctl, int argc, char **argv, struct ctl_opt *opts, size_t nopts,
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
            struct ctl_opt *o = ctl_find_opt(opts, nopts, a, nlen);
            if (!o)
                return ctl_usage_error(ctl, "unknown option '%.*s'", (int)nlen, a);
            if (o->value)
                return ctl_usage_error(ctl, "%s given twice", o->name);
            if (eq) {
                o->value = eq + 1;
            } else {
                if (i + 1 >= argc)
                    return ctl_usage_error(ctl, "%s needs a value", o->name);
                o->value = argv[++i];
            }
            continue;
        }
        if (n >= max_pos)
            return ctl_usage_error(ctl, "unexpected argument '%s'", a);
        pos[n++] = a;
    }
    for (size_t k = 0; k < nopts; k++)
        if (opts[k].required && !opts[k].value)
            return ctl_usage_error(ctl, "%s is required", opts[k].name);
    if (n < min_pos)
        return ctl_usage_error(ctl, "missing argument (usage: seckillctl %s %s)", ctl->command,
                               ctl->usage ? ctl->usage : "");
    if (npos)
        *npos = n;
    return CTL_OK;
}

int ctl_parse_single_id(struct ctl *ctl, int argc, char **argv, const char *what, int64_t *id)
{
    const char *pos[1];
    int rc = ctl_parse_opts(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    return rc != CTL_OK ? rc : ctl_parse_id(ctl, what, pos[0], id);
}

int ctl_parse_id(struct ctl *ctl, const char *what, const char *s, int64_t *out)
{
    if (parse_id(s, out) != 0)
        return ctl_usage_error(ctl, "%s '%s': not a positive integer id", what, s);
    return CTL_OK;
}

int ctl_parse_count(struct ctl *ctl, const char *what, const char *s, int64_t min, int64_t max,
                    int64_t *out)
{
    int64_t v = 0;
    if ((strcmp(s, "0") != 0 && parse_id(s, &v) != 0) || v < min || v > max)
        return ctl_usage_error(ctl, "%s '%s': must be a whole number from %" PRId64 " to %" PRId64,
                               what, s, min, max);
    *out = v;
    return CTL_OK;
}

int ctl_parse_time(struct ctl *ctl, const char *what, const char *s, int64_t now_ms,
                   int64_t *out_ms)
{
    if (timeparse_parse(s, now_ms, out_ms) != 0)
        return ctl_usage_error(ctl,
                               "%s '%s': not a time (ISO-8601 like 2026-12-01T20:00:00, "
                               "optionally with Z or +08:00; now; +10m, +2h, +1d)",
                               what, s);
    return CTL_OK;
}

/* Length of the UTF-8 sequence starting at p, or 0 when it is not well-formed
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t ctl_utf8_seq(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if ((p[0] & 0xE0) == 0xC0) {
        n = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        n = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

int ctl_parse_name(struct ctl *ctl, const char *what, const char *s)
{
    size_t chars = 0;
    bool blank = true;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = ctl_utf8_seq(p);
        if (n == 0)
            return ctl_usage_error(ctl, "%s: not valid UTF-8", what);
        if (n == 1 && (*p < 0x20 || *p == 0x7F))
            return ctl_usage_error(ctl, "%s: control characters are not allowed", what);
        if (*p != ' ')
            blank = false;
        p += n;
        chars++;
    }
    if (blank)
        return ctl_usage_error(ctl, "%s: must not be empty", what);
    if (chars > 128)
        return ctl_usage_error(ctl, "%s: %zu characters, at most 128 allowed", what, chars);
    return CTL_OK;
}

void ctl_utf8_truncate(char *s, size_t max_chars)
{
    size_t chars = 0;
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        if (chars == max_chars) {
            *p = '\0';
            return;
        }
        size_t n = ctl_utf8_seq(p);
        p += n ? n : 1;
        chars++;
    }
}

/* ---- MySQL ----------------------------------------------------------------------------- */

MYSQL *ctl_db(struct ctl *ctl)
{
    if (ctl->db)
        return ctl->db;
    char err[512];
    ctl->db = db_connect_timeout(&ctl->cfg, 300, err, sizeof(err));
    if (!ctl->db)
        ctl_fail(ctl, "%s", err);
    return ctl->db;
}

int ctl_db_exec(struct ctl *ctl, const char *sql)
{
    MYSQL *db = ctl_db(ctl);
    if (!db)
        return CTL_FAIL;
    char err[512];
    if (db_exec(db, sql, err, sizeof(err)) != 0)
        return ctl_fail(ctl, "mysql: %s", err);
    return CTL_OK;
}

static MYSQL_RES *ctl_db_result(struct ctl *ctl, const char *sql, bool stream)
{
    MYSQL *db = ctl_db(ctl);
    if (!db)
        return NULL;
    if (mysql_query(db, sql) != 0) {
        ctl_fail(ctl, "mysql: %s", mysql_error(db));
        return NULL;
    }
    MYSQL_RES *res = stream ? mysql_use_result(db) : mysql_store_result(db);
    if (!res)
        ctl_fail(ctl, "mysql: %s", mysql_errno(db) ? mysql_error(db) : "query returned no result");
    return res;
}

MYSQL_RES *ctl_db_query(struct ctl *ctl, const char *sql)
{
    return ctl_db_result(ctl, sql, false);
}

MYSQL_RES *ctl_db_stream(struct ctl *ctl, const char *sql)
{
    return ctl_db_result(ctl, sql, true);
}

int64_t ctl_db_int(const char *s)
{
    if (!s)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s)
        return 0;
    return (int64_t)v;
}

int ctl_db_ints(struct ctl *ctl, const char *sql, int64_t *out, size_t n)
{
    MYSQL_RES *res = ctl_db_query(ctl, sql);
    if (!res)
        return CTL_FAIL;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (!row || mysql_num_fields(res) < n) {
        mysql_free_result(res);
        return ctl_fail(ctl, "mysql: query returned no row");
    }
    for (size_t i = 0; i < n; i++)
        out[i] = ctl_db_int(row[i]);
    mysql_free_result(res);
    return CTL_OK;
}

char *ctl_db_quote(struct ctl *ctl, const char *s)
{
    MYSQL *db = ctl_db(ctl);
    if (!db)
        return NULL;
    size_t len = strlen(s);
    char *out = malloc(2 * len + 3);
    if (!out) {
        ctl_fail(ctl, "out of memory");
        return NULL;
    }
    out[0] = '\'';
    unsigned long n = mysql_real_escape_string(db, out + 1, s, (unsigned long)len);
    out[n + 1] = '\'';
    out[n + 2] = '\0';
    return out;
}

/* ---- Redis ----------------------------------------------------------------------------- */

static struct timeval ctl_tv(int64_t ms)
{
    struct timeval tv = { .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
    return tv;
}

redisContext *ctl_redis(struct ctl *ctl)
{
    if (ctl->redis)
        return ctl->redis;
    redisContext *c = redisConnectWithTimeout(ctl->cfg.redis_host, (int)ctl->cfg.redis_port,
                                              ctl_tv(ctl->cfg.redis_timeout_ms));
    if (!c || c->err) {
        ctl_fail(ctl, "redis %s:%" PRId64 ": %s", ctl->cfg.redis_host, ctl->cfg.redis_port,
                 c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    int64_t timeout = ctl->cfg.redis_timeout_ms > CTL_REDIS_COMMAND_TIMEOUT_MS
                          ? ctl->cfg.redis_timeout_ms
                          : CTL_REDIS_COMMAND_TIMEOUT_MS;
    if (redisSetTimeout(c, ctl_tv(timeout)) != REDIS_OK) {
        ctl_fail(ctl, "redis: cannot set the command timeout");
        redisFree(c);
        return NULL;
    }
    ctl->redis = c;
    return c;
}

redisReply *ctl_redis_argv(struct ctl *ctl, int argc, const char **argv)
{
    redisContext *c = ctl_redis(ctl);
    if (!c)
        return NULL;
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) {
        ctl_fail(ctl, "redis %s: %s", argv[0], c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        ctl_fail(ctl, "redis %s: %s", argv[0], r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int ctl_redis_int(const redisReply *r, int64_t *out)
{
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = (int64_t)r->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING || r->len == 0)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(r->str, &end, 10);
    if (errno != 0 || *end != '\0' || !(r->str[0] == '-' || (r->str[0] >= '0' && r->str[0] <= '9')))
        return -1;
    *out = (int64_t)v;
    return 0;
}

redisReply *ctl_redis_multi(struct ctl *ctl, const struct ctl_redis_cmd *cmds, size_t n)
{
    redisContext *c = ctl_redis(ctl);
    if (!c)
        return NULL;
    const char *multi[] = { "MULTI" }, *exec[] = { "EXEC" };
    int ok = redisAppendCommandArgv(c, 1, multi, NULL) == REDIS_OK;
    for (size_t i = 0; ok && i < n; i++)
        ok = redisAppendCommandArgv(c, cmds[i].argc, (const char **)cmds[i].argv, NULL) == REDIS_OK;
    ok = ok && redisAppendCommandArgv(c, 1, exec, NULL) == REDIS_OK;
    if (!ok) {
        ctl_fail(ctl, "redis: %s", c->errstr[0] ? c->errstr : "out of memory");
        return NULL;
    }
    /* Read every reply, even after an error, so the connection stays in step. */
    redisReply *result = NULL;
    char problem[256] = "";
    for (size_t i = 0; i < n + 2; i++) {
        void *v = NULL;
        if (redisGetReply(c, &v) != REDIS_OK) {
            if (result)
                freeReplyObject(result);
            ctl_fail(ctl, "redis: %s", c->errstr[0] ? c->errstr : "no reply");
            return NULL;
        }
        redisReply *r = v;
        if (r->type == REDIS_REPLY_ERROR && !problem[0])
            snprintf(problem, sizeof(problem), "%s", r->str);
        if (i == n + 1)
            result = r;
        else
            freeReplyObject(r);
    }
    if (!result || result->type != REDIS_REPLY_ARRAY || result->elements != n) {
        ctl_fail(ctl, "redis: transaction failed%s%s", problem[0] ? ": " : "", problem);
        if (result)
            freeReplyObject(result);
        return NULL;
    }
    return result;
}

redisReply *ctl_redis_script(struct ctl *ctl, enum luascript_id id, int nkeys,
                             const char *const *keys, int nargs, const char *const *args)
{
    redisContext *c = ctl_redis(ctl);
    if (!c)
        return NULL;
    if (!ctl->scripts) {
        struct luascript_set *set = malloc(sizeof(*set));
        char err[512];
        if (!set) {
            ctl_fail(ctl, "out of memory");
            return NULL;
        }
        if (luascript_load_all(set, ctl->cfg.lua_dir, err, sizeof(err)) != 0) {
            free(set);
            ctl_fail(ctl, "%s", err);
            return NULL;
        }
        ctl->scripts = set;
    }
    const struct luascript *s = &ctl->scripts->scripts[id];
    redisReply *r = luascript_call_sync(c, s, nkeys, keys, nargs, args);
    if (!r) {
        ctl_fail(ctl, "redis %s.lua: %s", s->name, c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        ctl_fail(ctl, "redis %s.lua: %s", s->name, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* ---- tables ----------------------------------------------------------------------------- */

void ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *heads, const char *align)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    t->heads = heads;
    t->align = align;
}

int ctl_table_row(struct ctl *ctl, struct ctl_table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, ncap * t->ncols * sizeof(*grown));
        if (!grown)
            return ctl_fail(ctl, "out of memory");
        t->cells = grown;
        t->cap = ncap;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = strdup(cells[i] ? cells[i] : "-");
        if (!row[i]) {
            while (i > 0)
                free(row[--i]);
            return ctl_fail(ctl, "out of memory");
        }
    }
    t->nrows++;
    return CTL_OK;
}

/* Terminal columns of a UTF-8 string: a character is one column, except the East Asian
 * wide ones (CJK, Hangul, full-width forms), which take two; coupon names are often
 * Chinese. A small table instead of wcwidth(), which would need a UTF-8 locale. */
static size_t ctl_utf8_width(const char *s)
{
    static const uint32_t wide[][2] = {
        { 0x1100, 0x115F }, { 0x2E80, 0x303E }, { 0x3041, 0x33FF }, { 0x3400, 0x4DBF },
        { 0x4E00, 0x9FFF }, { 0xA000, 0xA4CF }, { 0xAC00, 0xD7A3 }, { 0xF900, 0xFAFF },
        { 0xFE30, 0xFE4F }, { 0xFF00, 0xFF60 }, { 0xFFE0, 0xFFE6 }, { 0x20000, 0x3FFFD },
    };
    size_t cols = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = ctl_utf8_seq(p);
        if (n == 0) {           /* not UTF-8: one column a byte */
            cols++;
            p++;
            continue;
        }
        uint32_t cp = n == 1 ? p[0] : (uint32_t)(p[0] & (0xFF >> (n + 1)));
        for (size_t i = 1; i < n; i++)
            cp = (cp << 6) | (p[i] & 0x3F);
        size_t w = 1;
        for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
            if (cp >= wide[i][0] && cp <= wide[i][1])
                w = 2;
        cols += w;
        p += n;
    }
    return cols;
}

static void ctl_table_cell(FILE *out, const char *s, size_t width, char align, bool last)
{
    size_t pad = width - ctl_utf8_width(s);
    if (align == 'r')
        fprintf(out, "%*s%s", (int)pad, "", s);
    else if (last)
        fputs(s, out);
    else
        fprintf(out, "%s%*s", s, (int)pad, "");
}

void ctl_table_print(const struct ctl_table *t, FILE *out)
{
    size_t width[32] = { 0 };
    size_t ncols = t->ncols < 32 ? t->ncols : 32;
    for (size_t c = 0; c < ncols; c++) {
        width[c] = ctl_utf8_width(t->heads[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t w = ctl_utf8_width(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t c = 0; c < ncols; c++) {
        if (c)
            fputs("  ", out);
        ctl_table_cell(out, t->heads[c], width[c], t->align[c], c + 1 == ncols);
    }
    fputc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < ncols; c++) {
            if (c)
                fputs("  ", out);
            ctl_table_cell(out, t->cells[r * t->ncols + c], width[c], t->align[c], c + 1 == ncols);
        }
        fputc('\n', out);
    }
}

void ctl_table_free(struct ctl_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* ---- config commands ------------------------------------------------------------------ */

static int ctl_config_get(struct ctl *ctl, int argc, char **argv)
{
    const char *pos[1];
    int rc = ctl_parse_opts(ctl, argc, argv, NULL, 0, pos, 1, 1, NULL);
    if (rc != CTL_OK)
        return rc;
    char value[4096];
    if (config_format(&ctl->cfg, pos[0], value, sizeof(value)) != 0)
        return ctl_usage_error(ctl, "%s: unknown configuration key", pos[0]);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddStringToObject(obj, "key", pos[0]);
        cJSON_AddStringToObject(obj, "value", value);
        return ctl_print_json(ctl, obj);
    }
    puts(value);
    return CTL_OK;
}

static int ctl_config_check(struct ctl *ctl, int argc, char **argv)
{
    int rc = ctl_parse_opts(ctl, argc, argv, NULL, 0, NULL, 0, 0, NULL);
    if (rc != CTL_OK)
        return rc;
    /* config_from_args has validated the values; the Lua scripts are the one setting
     * whose mistake would otherwise only show when the gateway starts. */
    struct luascript_set scripts;
    char err[512];
    if (luascript_load_all(&scripts, ctl->cfg.lua_dir, err, sizeof(err)) != 0)
        return ctl_fail(ctl, "%s", err);
    luascript_free_all(&scripts);
    if (ctl->json) {
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddBoolToObject(obj, "ok", 1);
        return ctl_print_json(ctl, obj);
    }
    puts("ok");
    return CTL_OK;
}

/* ---- main ------------------------------------------------------------------------------ */

static void ctl_usage(FILE *out)
{
    fprintf(out, "usage: seckillctl [-c FILE] [--set key=value] [--json] COMMAND ...\n\ncommands:\n");
    for (size_t i = 0; i < CTL_NCOMMANDS; i++)
        fprintf(out, "  %s%s%s\n", ctl_commands[i].name, ctl_commands[i].usage[0] ? " " : "",
                ctl_commands[i].usage);
    fprintf(out,
            "\nT is ISO-8601 (2026-12-01T20:00:00, optional .sss, Z or +08:00; local time\n"
            "without an offset), now, or relative: +30s, +10m, +2h, +1d (also -N).\n"
            "Exit status: 0 done, 1 operation or check failed, 2 bad command line.\n");
}

/* How many words of argv (from index 1) name the command, or 0 when it matches none. */
static int ctl_match(const struct ctl_command *cmd, int argc, char **argv)
{
    const char *p = cmd->name;
    int i = 1;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (i >= argc || strlen(argv[i]) != n || strncmp(argv[i], p, n) != 0)
            return 0;
        i++;
        p += n;
        if (*p == ' ')
            p++;
    }
    return i - 1;
}

/* The first argument that is not -c FILE / --set K=V: the command word, or NULL. */
static const char *ctl_first_word(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0 ||
            strcmp(argv[i], "--set") == 0) {
            i++;
            continue;
        }
        return argv[i];
    }
    return NULL;
}

static bool ctl_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    log_set_name("seckillctl");
    struct ctl ctl;
    memset(&ctl, 0, sizeof(ctl));

    /* --json is global and may come anywhere. */
    int out = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            ctl.json = true;
        else
            argv[out++] = argv[i];
    }
    argc = out;
    argv[argc] = NULL;

    const char *first = ctl_first_word(argc, argv);
    if (!first || strcmp(first, "help") == 0 || (first[0] == '-' && ctl_wants_help(argc, argv))) {
        ctl_usage(first ? stdout : stderr);
        return first ? CTL_OK : CTL_USAGE;
    }

    config_init(&ctl.cfg);
    char err[CONFIG_ERR_LEN];
    argc = config_from_args(&ctl.cfg, argc, argv, environ, err, sizeof(err));
    if (argc < 0) {
        fprintf(stderr, "seckillctl: %s\n", err);
        config_free(&ctl.cfg);
        /* A config that does not load is what `config check` exists to report. */
        return strcmp(first, "config") == 0 ? CTL_FAIL : CTL_USAGE;
    }
    enum log_level level;
    if (log_parse_level(ctl.cfg.log_level, &level) == 0)
        log_set_level(level);

    const struct ctl_command *cmd = NULL;
    int words = 0;
    for (size_t i = 0; i < CTL_NCOMMANDS && !cmd; i++) {
        words = ctl_match(&ctl_commands[i], argc, argv);
        if (words > 0)
            cmd = &ctl_commands[i];
    }
    int rc;
    if (!cmd) {
        char known[256] = "";
        for (size_t i = 0; i < CTL_NCOMMANDS; i++) {
            size_t n = strcspn(ctl_commands[i].name, " ");
            if (strlen(argv[1]) == n && strncmp(argv[1], ctl_commands[i].name, n) == 0 &&
                ctl_commands[i].name[n] == ' ') {
                size_t used = strlen(known);
                snprintf(known + used, sizeof(known) - used, "%s%s", used ? ", " : "",
                         ctl_commands[i].name + n + 1);
            }
        }
        if (known[0] && argc > 2)
            rc = ctl_usage_error(NULL, "%s: unknown command '%s' (one of: %s)", argv[1], argv[2], known);
        else if (known[0])
            rc = ctl_usage_error(NULL, "%s: missing command (one of: %s)", argv[1], known);
        else
            rc = ctl_usage_error(NULL, "unknown command '%s' (try: seckillctl help)", argv[1]);
    } else if (ctl_wants_help(argc, argv)) {
        printf("usage: seckillctl %s %s\n", cmd->name, cmd->usage);
        rc = CTL_OK;
    } else {
        ctl.command = cmd->name;
        ctl.usage = cmd->usage;
        rc = cmd->handler(&ctl, argc - 1 - words, argv + 1 + words);
    }

    if (fflush(stdout) != 0 && rc == CTL_OK)
        rc = CTL_FAIL;
    if (ctl.redis)
        redisFree(ctl.redis);
    if (ctl.db)
        mysql_close(ctl.db);
    if (ctl.scripts) {
        luascript_free_all(ctl.scripts);
        free(ctl.scripts);
    }
    mysql_library_end();
    config_free(&ctl.cfg);
    return rc;
}
