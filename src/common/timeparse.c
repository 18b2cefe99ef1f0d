#include "common/timeparse.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MS_PER_SECOND 1000LL
#define MS_PER_DAY 86400000LL

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm):
 * timegm without _DEFAULT_SOURCE. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Exactly n decimal digits. */
static int take_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int parse_relative(const char *s, int64_t now_ms, int64_t *out_ms)
{
    int sign = s[0] == '-' ? -1 : 1;
    const char *p = s + 1;
    int64_t n = 0;
    int ndigits = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        /* Ten digits of days are already far beyond year 9999. */
        if (++ndigits > 10)
            return -1;
        n = n * 10 + (*p - '0');
    }
    if (ndigits == 0 || p[0] == '\0' || p[1] != '\0')
        return -1;
    int64_t unit;
    switch (*p) {
    case 's': unit = MS_PER_SECOND; break;
    case 'm': unit = 60 * MS_PER_SECOND; break;
    case 'h': unit = 3600 * MS_PER_SECOND; break;
    case 'd': unit = MS_PER_DAY; break;
    default: return -1;
    }
    int64_t delta = n * unit;  /* < 10^10 * 8.64e7 < 2^63 */
    if ((sign > 0 && now_ms > INT64_MAX - delta) || (sign < 0 && now_ms < INT64_MIN + delta))
        return -1;
    *out_ms = now_ms + sign * delta;
    return 0;
}

static int local_to_ms(int year, int mon, int day, int hour, int min, int sec, int64_t *out_s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = mon - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    tm.tm_isdst = -1;
    tzset();
    time_t t = mktime(&tm);
    /* mktime normalises a time skipped by a DST change instead of failing; reading the
     * result back is the only portable way to notice. It also catches mktime's -1. */
    struct tm back;
    if (!localtime_r(&t, &back))
        return -1;
    if (back.tm_year != year - 1900 || back.tm_mon != mon - 1 || back.tm_mday != day ||
        back.tm_hour != hour || back.tm_min != min || back.tm_sec != sec)
        return -1;
    *out_s = (int64_t)t;
    return 0;
}

static int parse_iso(const char *s, int64_t *out_ms)
{
    const char *p = s;
    int year, mon, day, hour, min, sec = 0, ms = 0;
    if (take_digits(&p, 4, &year) != 0 || *p++ != '-' || take_digits(&p, 2, &mon) != 0 ||
        *p++ != '-' || take_digits(&p, 2, &day) != 0)
        return -1;
    if (*p != 'T' && *p != 't' && *p != ' ')
        return -1;
    p++;
    if (take_digits(&p, 2, &hour) != 0 || *p++ != ':' || take_digits(&p, 2, &min) != 0)
        return -1;
    if (*p == ':') {
        p++;
        if (take_digits(&p, 2, &sec) != 0)
            return -1;
        if (*p == '.') {
            p++;
            int ndigits = 0;
            for (; *p >= '0' && *p <= '9'; p++) {
                if (++ndigits > 9)
                    return -1;
                if (ndigits <= 3)
                    ms = ms * 10 + (*p - '0');
            }
            if (ndigits == 0)
                return -1;
            for (int i = ndigits; i < 3; i++)
                ms *= 10;
        }
    }
    if (year < 1970 || year > 9999 || mon < 1 || mon > 12 || day < 1 ||
        day > days_in_month(year, mon) || hour > 23 || min > 59 || sec > 59)
        return -1;

    int64_t seconds;
    if (*p == '\0') {
        if (local_to_ms(year, mon, day, hour, min, sec, &seconds) != 0)
            return -1;
    } else {
        int offset_min = 0;
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1;
            int oh, om = 0;
            if (take_digits(&p, 2, &oh) != 0)
                return -1;
            if (*p == ':') {
                p++;
                if (take_digits(&p, 2, &om) != 0)
                    return -1;
            } else if (*p != '\0' && take_digits(&p, 2, &om) != 0) {
                return -1;
            }
            if (oh > 23 || om > 59)
                return -1;
            offset_min = sign * (oh * 60 + om);
        } else {
            return -1;
        }
        if (*p != '\0')
            return -1;
        seconds = days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec -
                  (int64_t)offset_min * 60;
    }
    *out_ms = seconds * MS_PER_SECOND + ms;
    return 0;
}

int timeparse_parse(const char *s, int64_t now_ms, int64_t *out_ms)
{
    if (!s || !out_ms)
        return -1;
    if (strcmp(s, "now") == 0) {
        *out_ms = now_ms;
        return 0;
    }
    if (s[0] == '+' || s[0] == '-')
        return parse_relative(s, now_ms, out_ms);
    return parse_iso(s, out_ms);
}

bool timeparse_is_absolute(const char *s)
{
    return s && strcmp(s, "now") != 0 && s[0] != '+' && s[0] != '-';
}

struct utc_fields {
    int64_t year;
    int mon, day, hour, min, sec, ms;
};

static void utc_split(int64_t ms, struct utc_fields *f)
{
    int64_t days = ms / MS_PER_DAY;
    int64_t rem = ms % MS_PER_DAY;
    if (rem < 0) {
        rem += MS_PER_DAY;
        days--;
    }
    civil_from_days(days, &f->year, &f->mon, &f->day);
    f->hour = (int)(rem / 3600000);
    f->min = (int)(rem / 60000 % 60);
    f->sec = (int)(rem / 1000 % 60);
    f->ms = (int)(rem % 1000);
}

int timeparse_format(int64_t ms, char *buf, size_t len)
{
    struct utc_fields f;
    utc_split(ms, &f);
    int n;
    if (f.ms != 0)
        n = snprintf(buf, len, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d.%03dZ", f.year, f.mon,
                     f.day, f.hour, f.min, f.sec, f.ms);
    else
        n = snprintf(buf, len, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02dZ", f.year, f.mon, f.day,
                     f.hour, f.min, f.sec);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int timeparse_format_sql(int64_t ms, char *buf, size_t len)
{
    struct utc_fields f;
    utc_split(ms, &f);
    int n = snprintf(buf, len, "%04" PRId64 "-%02d-%02d %02d:%02d:%02d.%03d", f.year, f.mon,
                     f.day, f.hour, f.min, f.sec, f.ms);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}
