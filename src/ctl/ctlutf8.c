#include "ctl/ctlutf8.h"

#include <stdint.h>

size_t ctlutf8_seq(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if ((p[0] & 0xE0) == 0xC0) {
        n = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        n = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void ctlutf8_truncate(char *s, size_t max_chars)
{
    size_t chars = 0;
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        if (chars == max_chars) {
            *p = '\0';
            return;
        }
        size_t n = ctlutf8_seq(p);
        p += n ? n : 1;
        chars++;
    }
}

/* Coupon names are often Chinese: CJK, Hangul and full-width forms take two columns. A
 * small table instead of wcwidth(), which would need a UTF-8 locale. */
size_t ctlutf8_width(const char *s)
{
    static const uint32_t wide[][2] = {
        { 0x1100, 0x115F }, { 0x2E80, 0x303E }, { 0x3041, 0x33FF }, { 0x3400, 0x4DBF },
        { 0x4E00, 0x9FFF }, { 0xA000, 0xA4CF }, { 0xAC00, 0xD7A3 }, { 0xF900, 0xFAFF },
        { 0xFE30, 0xFE4F }, { 0xFF00, 0xFF60 }, { 0xFFE0, 0xFFE6 }, { 0x20000, 0x3FFFD },
    };
    size_t cols = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = ctlutf8_seq(p);
        if (n == 0) {
            cols++;
            p++;
            continue;
        }
        uint32_t cp = n == 1 ? p[0] : (uint32_t)(p[0] & (0xFF >> (n + 1)));
        for (size_t i = 1; i < n; i++)
            cp = (cp << 6) | (p[i] & 0x3F);
        size_t w = 1;
        for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++)
            if (cp >= wide[i][0] && cp <= wide[i][1])
                w = 2;
        cols += w;
        p += n;
    }
    return cols;
}
