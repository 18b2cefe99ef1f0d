#include "common/configline.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

/* A '#' inside a word is data, so a secret such as abc#def stays whole, as it does from
 * SECKILL_* and --set. */
static bool comment_at(const char *start, const char *p)
{
    return *p == '#' && (p == start || p[-1] == ' ' || p[-1] == '\t');
}

/* The value, from just after the '=': up to a comment, trimmed, or a double-quoted string
 * followed by nothing but an optional comment. Decoded in place; NULL with why in err. */
static char *value_of(char *s, char *err, size_t errlen)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s != '"') {
        char *end = s;
        while (*end && !comment_at(s, end))
            end++;
        *end = '\0';
        return trim(s);
    }
    char *out = s, *in = s + 1;
    for (;; in++) {
        if (*in == '\0' || *in == '\n' || *in == '\r') {
            snprintf(err, errlen, "no closing double quote");
            return NULL;
        }
        if (*in == '"')
            break;
        if (*in == '\\') {
            in++;
            if (*in != '"' && *in != '\\') {
                snprintf(err, errlen, "only \\\" and \\\\ are escapes inside double quotes");
                return NULL;
            }
        }
        *out++ = *in;
    }
    *out = '\0';
    for (in++; isspace((unsigned char)*in); in++)
        ;
    if (*in != '\0' && *in != '#') {
        snprintf(err, errlen, "text after the closing double quote");
        return NULL;
    }
    return s;
}

enum configline_kind configline_parse(char *line, char **key, char **value, char *err, size_t errlen)
{
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '\0' || *s == '#')
        return CONFIGLINE_BLANK;
    char *eq = s;
    while (*eq && *eq != '=' && !comment_at(s, eq))
        eq++;
    if (*eq != '=') {
        snprintf(err, errlen, "expected 'key = value'");
        return CONFIGLINE_ERROR;
    }
    *eq = '\0';
    *key = trim(s);
    char why[128];
    *value = value_of(eq + 1, why, sizeof(why));
    if (!*value) {
        snprintf(err, errlen, "%s: %s", *key, why);
        return CONFIGLINE_ERROR;
    }
    return CONFIGLINE_PAIR;
}
