#ifndef SK_LOG_H
#define SK_LOG_H

#include "common/logline.h"

/* Leveled logging to stderr, one line per event, as text or as JSON objects
 * (log.format; common/logline.h). A line about one order names it through the LOG_ORDER_*
 * macros: text shows "order N: ..." as before, JSON gives it a field of its own. */

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

void log_set_level(enum log_level level);
int log_parse_level(const char *name, enum log_level *out);
void log_set_format(enum logline_format format);
void log_set_name(const char *program);
int log_enabled(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* order_no NULL is a line about no order. */
void log_write_order(enum log_level level, const char *order_no, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_DEBUG(...) \
    do { if (log_enabled(LOG_LEVEL_DEBUG)) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__); } while (0)
#define LOG_INFO(...)  log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_WARN(...)  log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_ERROR(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)

#define LOG_ORDER_INFO(order_no, ...)  log_write_order(LOG_LEVEL_INFO, order_no, __VA_ARGS__)
#define LOG_ORDER_WARN(order_no, ...)  log_write_order(LOG_LEVEL_WARN, order_no, __VA_ARGS__)
#define LOG_ORDER_ERROR(order_no, ...) log_write_order(LOG_LEVEL_ERROR, order_no, __VA_ARGS__)

#endif
