#define _POSIX_C_SOURCE 200809L
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static enum logline_format current_format = LOGLINE_TEXT;
static const char *program_name = "seckill";

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level level) { current_level = level; }

void log_set_format(enum logline_format format) { current_format = format; }

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

static void log_emit(enum log_level level, const char *order_no, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void log_emit(enum log_level level, const char *order_no, const char *fmt, va_list ap)
{
    char message[LOGLINE_MESSAGE_MAX + 1];
    vsnprintf(message, sizeof(message), fmt, ap);
    struct logline l = { level_names[level], { 0, 0 }, program_name, order_no, message };
    clock_gettime(CLOCK_REALTIME, &l.time);
    /* Per thread: the consumer's metrics thread and librdkafka's may log too. */
    static _Thread_local char line[LOGLINE_MAX];
    logline_format(line, sizeof(line), current_format, &l);
    /* One fputs per line keeps lines whole when several processes share a log file. */
    fputs(line, stderr);
}

void log_write(enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, NULL, fmt, ap);
    va_end(ap);
}

void log_write_order(enum log_level level, const char *order_no, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, order_no, fmt, ap);
    va_end(ap);
}
