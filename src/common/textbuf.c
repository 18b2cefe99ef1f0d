#include "common/textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void textbuf_init(struct textbuf *t)
{
    t->cap = 8192;
    t->len = 0;
    t->buf = malloc(t->cap);
    t->failed = t->buf == NULL;
    if (t->buf)
        t->buf[0] = '\0';
}

void textbuf_printf(struct textbuf *t, const char *fmt, ...)
{
    while (!t->failed) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
}

char *textbuf_take(struct textbuf *t)
{
    char *text = t->failed ? NULL : t->buf;
    if (t->failed)
        free(t->buf);
    t->buf = NULL;
    return text;
}
