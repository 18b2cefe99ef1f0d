#include "admin/adminauth.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

bool adminauth_same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t n = la > lb ? la : lb;
    unsigned diff = la != lb;
    /* Past its end a string reads as NUL: the loop never stops early. */
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = i < la ? (unsigned char)a[i] : 0;
        unsigned char cb = i < lb ? (unsigned char)b[i] : 0;
        diff |= (unsigned)(ca ^ cb);
    }
    return diff == 0;
}

bool adminauth_allows(const char *header, const char *token)
{
    if (!header || !token || token[0] == '\0')
        return false;
    if (strncasecmp(header, "Bearer", 6) != 0 || (header[6] != ' ' && header[6] != '\t'))
        return false;
    const char *given = header + 7;
    while (*given == ' ' || *given == '\t')
        given++;
    return adminauth_same(given, token);
}
