#ifndef SK_CTLUTF8_H
#define SK_CTLUTF8_H

#include <stddef.h>

/* UTF-8 as coupon and activity names need it: the VARCHAR(128) columns count characters,
 * and the text tables count terminal columns. Pure. */

/* Length of the UTF-8 sequence starting at p, or 0 when it is not well-formed
 * (overlong forms, surrogates and code points past U+10FFFF included). */
size_t ctlutf8_seq(const unsigned char *p);
/* Truncates a UTF-8 string in place to at most max_chars characters. */
void ctlutf8_truncate(char *s, size_t max_chars);
/* Terminal columns of s: East Asian wide characters count two, bytes that are not
 * UTF-8 one each. */
size_t ctlutf8_width(const char *s);

#endif
