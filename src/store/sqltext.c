#include "store/sqltext.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sqltext_free(struct sqltext *s)
{
    free(s->data);
    memset(s, 0, sizeof(*s));
}

static int reserve(struct sqltext *s, size_t extra)
{
    if (s->failed)
        return -1;
    if (s->len + extra + 1 <= s->cap)
        return 0;
    size_t n = s->cap ? s->cap : 4096;
    while (n < s->len + extra + 1)
        n *= 2;
    char *p = realloc(s->data, n);
    if (!p) {
        s->failed = 1;
        return -1;
    }
    s->data = p;
    s->cap = n;
    return 0;
}

void sqltext_printf(struct sqltext *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(s, (size_t)n) != 0) {
        s->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

/* Order numbers are validated digits and a dash already; escaping anyway keeps this
 * module safe whatever a later caller passes. */
void sqltext_quoted(struct sqltext *s, MYSQL *db, const char *str)
{
    size_t len = strlen(str);
    if (reserve(s, len * 2 + 2) != 0)
        return;
    s->data[s->len++] = '\'';
    s->len += mysql_real_escape_string(db, s->data + s->len, str, (unsigned long)len);
    s->data[s->len++] = '\'';
    s->data[s->len] = '\0';
}

void sqltext_reset(struct sqltext *s)
{
    s->len = 0;
    if (s->data)
        s->data[0] = '\0';
}

/* A UTC literal formatted here: FROM_UNIXTIME stops at 2038 on MariaDB 10.11. */
void sqltext_datetime(struct sqltext *s, int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (ms < 0 || ms > SQLTEXT_MAX_DATETIME_MS || !gmtime_r(&secs, &tm)) {
        s->failed = 1;
        return;
    }
    sqltext_printf(s, "'%04d-%02d-%02d %02d:%02d:%02d.%03d'", tm.tm_year + 1900, tm.tm_mon + 1,
                   tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

void sqltext_cents(struct sqltext *s, int64_t cents)
{
    if (cents < 0 || cents > SQLTEXT_MAX_CENTS) {
        s->failed = 1;
        return;
    }
    sqltext_printf(s, "%" PRId64 ".%02" PRId64, cents / 100, cents % 100);
}
