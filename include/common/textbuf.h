#ifndef SK_TEXTBUF_H
#define SK_TEXTBUF_H

#include <stddef.h>

/* A growing text buffer for the metrics pages: printf into it, take the string at the
 * end. A failed allocation is remembered, and textbuf_take then returns NULL. */

struct textbuf {
    char *buf;  /* owned until textbuf_take */
    size_t len;
    size_t cap;
    int failed;
};

void textbuf_init(struct textbuf *t);
void textbuf_printf(struct textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (caller frees), or NULL after any failure. */
char *textbuf_take(struct textbuf *t);

#endif
