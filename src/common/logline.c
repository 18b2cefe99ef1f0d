#define _POSIX_C_SOURCE 200809L
#include "common/logline.h"

#include <stdio.h>
#include <string.h>

/* Output with a fixed reserve at the end for what closes the line, so a cut message still
 * leaves room for '"}' and the newline. Once something did not fit, nothing more goes in:
 * a later, shorter piece would make the cut land mid-message twice. */
struct logline_out {
    char *buf;
    size_t len;
    size_t limit;  /* bytes the body may use */
    int full;
};

static void out_put(struct logline_out *o, const char *s, size_t n)
{
    if (o->full || o->len + n > o->limit) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void out_str(struct logline_out *o, const char *s) { out_put(o, s, strlen(s)); }

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), 0 when there is none. */
static size_t utf8_sequence(const unsigned char *s)
{
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

/* For what closes an open string or object: written past the limit, into the reserve. */
static void out_close(struct logline_out *o, char c)
{
    o->buf[o->len++] = c;
}

/* ,"name":"value" with the prefix all or nothing, so a closing quote is written only
 * after its opening one. */
static void out_json_field(struct logline_out *o, const char *name, const char *value)
{
    char prefix[64];
    int n = snprintf(prefix, sizeof(prefix), ",\"%s\":\"", name);
    out_put(o, prefix, (size_t)n);
    if (o->full)
        return;
    const unsigned char *p = (const unsigned char *)value;
    while (*p && !o->full) {
        unsigned char c = *p;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            out_put(o, esc, 2);
            p++;
        } else if (c < 0x20 || c == 0x7F) {
            const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            if (named)
                out_str(o, named);
            else {
                snprintf(esc, sizeof(esc), "\\u%04x", c);
                out_put(o, esc, 6);
            }
            p++;
        } else {
            size_t len = utf8_sequence(p);
            if (len == 0) {
                /* A shipper that meets a stray byte drops the whole line; U+FFFD keeps it. */
                out_str(o, "\\ufffd");
                p++;
            } else {
                out_put(o, (const char *)p, len);
                p += len;
            }
        }
    }
    out_close(o, '"');
}

static size_t format_time(char *buf, size_t len, const struct timespec *ts)
{
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    int n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts->tv_nsec / 1000000);
    return n < 0 ? 0 : (size_t)n;
}

/* A text field: UTF-8 as it is; a backslash doubled; control characters and bytes that
 * are not UTF-8 as \n, \r, \t or \xHH. A message carries what a client sent (a request
 * path), and a raw CR or LF in it would start a line of its own that forges an entry. */
static void out_text_field(struct logline_out *o, const char *value)
{
    const unsigned char *p = (const unsigned char *)value;
    while (*p && !o->full) {
        unsigned char c = *p;
        size_t n = utf8_sequence(p);
        if (c == '\\') {
            out_put(o, "\\\\", 2);
            p++;
        } else if (n == 0 || c < 0x20 || c == 0x7F) {
            const char *named = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
            char esc[8];
            if (named)
                out_str(o, named);
            else {
                snprintf(esc, sizeof(esc), "\\x%02x", c);
                out_put(o, esc, 4);
            }
            p++;
        } else {
            out_put(o, (const char *)p, n);
            p += n;
        }
    }
}

/* The text line as it always was, every byte of it printable; a message cut short is cut
 * at a character boundary. */
static void format_text(struct logline_out *o, const char *time, const struct logline *line)
{
    out_str(o, time);
    out_str(o, " ");
    out_str(o, line->level);
    out_str(o, " ");
    out_str(o, line->component);
    out_str(o, ": ");
    if (line->order_no) {
        out_str(o, "order ");
        out_text_field(o, line->order_no);
        out_str(o, ": ");
    }
    out_text_field(o, line->message);
}

static void format_json(struct logline_out *o, const char *time, const struct logline *line)
{
    char head[128];
    int n = snprintf(head, sizeof(head), "{\"time\":\"%s\"", time);
    out_put(o, head, (size_t)n);
    out_json_field(o, "level", line->level);
    out_json_field(o, "component", line->component);
    if (line->order_no)
        out_json_field(o, "orderNo", line->order_no);
    out_json_field(o, "message", line->message);
    out_close(o, '}');
}

size_t logline_format(char *out, size_t outlen, enum logline_format format, const struct logline *line)
{
    char time[96];  /* what snprintf could need for any int fields, not just real dates */
    format_time(time, sizeof(time), &line->time);
    /* Reserve: '"' and '}' for JSON, then '\n' and the NUL. */
    struct logline_out o = { out, 0, outlen - 4, 0 };
    if (format == LOGLINE_JSON)
        format_json(&o, time, line);
    else
        format_text(&o, time, line);
    out_close(&o, '\n');
    out[o.len] = '\0';
    return o.len;
}

int logline_parse_format(const char *name, enum logline_format *out)
{
    if (strcmp(name, "text") == 0)
        *out = LOGLINE_TEXT;
    else if (strcmp(name, "json") == 0)
        *out = LOGLINE_JSON;
    else
        return -1;
    return 0;
}
