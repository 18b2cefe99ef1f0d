#define _POSIX_C_SOURCE 200809L
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static const char *program_name = "seckill";

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level level) { current_level = level; }

void log_set_name(const char *program) { program_name = program; }

int log_enabled(enum log_level level) { return level >= current_level; }

int log_parse_level(const char *name, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[2048];
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, level_names[level], program_name);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line keeps lines whole when several processes share a log file. */
    size_t len = strnlen(line, sizeof(line) - 2);
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stderr);
}
