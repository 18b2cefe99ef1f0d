#ifndef SK_LOGLINE_H
#define SK_LOGLINE_H

#include <stddef.h>
#include <time.h>

/* One log line as text or as a JSON object, built from its parts without I/O, so that
 * log.c only adds the clock and the write and the unit tests see every byte. */

enum logline_format { LOGLINE_TEXT, LOGLINE_JSON };

struct logline {
    const char *level;      /* "info", ... */
    struct timespec time;   /* CLOCK_REALTIME */
    const char *component;  /* the program's name */
    const char *order_no;   /* NULL when the line is about no order */
    const char *message;
};

/* Large enough for a message of LOGLINE_MESSAGE_MAX bytes escaped at its worst (every byte
 * a \u00XX) plus the fields around it. */
#define LOGLINE_MESSAGE_MAX 2047
#define LOGLINE_MAX (6 * LOGLINE_MESSAGE_MAX + 512)  /* \u00XX is the longest escape */

/* Writes the line, ending in '\n', into out and returns its length (at most outlen - 1;
 * outlen must be at least 64). Text: "TIME LEVEL COMPONENT: [order N: ]MESSAGE", a
 * backslash in the order number or the message doubled, control characters and bytes that
 * are not UTF-8 written \n, \r, \t or \xHH, so that one call is one line. JSON:
 * {"time":..,"level":..,"component":..,["orderNo":..,]"message":..}: quotes, backslashes
 * and control characters escaped, bytes that are not UTF-8 replaced by U+FFFD, so every
 * line parses whatever the message holds. A line that does not fit is cut at a character
 * boundary and still ends in '\n' (JSON: still a whole object). */
size_t logline_format(char *out, size_t outlen, enum logline_format format, const struct logline *line);

/* "text" or "json"; -1 for anything else. */
int logline_parse_format(const char *name, enum logline_format *out);

#endif
