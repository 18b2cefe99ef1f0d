#include "gateway/httpparams.h"

#include "common/json.h"
#include "common/parse.h"
#include "gateway/multipart.h"

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/util.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool content_type_is(const char *header, const char *type)
{
    size_t n = strlen(type);
    return strncasecmp(header, type, n) == 0 && (header[n] == '\0' || header[n] == ';' || header[n] == ' ');
}

/* Decoding turns "%00" (and a JSON "\u0000") into a NUL byte, and every C string after
 * it would end there: "userId=1%00junk" would read as 1. cJSON copies a raw NUL inside a
 * string as it is, with the same effect. Such input is refused whole. */
static bool has_encoded_nul(const char *text, size_t len, const char *escape)
{
    size_t n = strlen(escape);
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(text + i, escape, n) == 0)
            return true;
    return false;
}

/* evhttp 2.1 refuses a whole query or form for one pair without a name ("=x") or without
 * "=" ("flag"), which the URL standard and every browser accept ("flag" is the empty
 * value). Such pairs are made explicit before evhttp reads the text: a nameless one is
 * dropped (no parameter has an empty name), "flag" becomes "flag=", so that a known name
 * given so still counts (and "userId" alone is an empty, malformed id, not no id). */
static int parse_pairs(const char *text, size_t len, struct evkeyvalq *out)
{
    /* Each kept segment gains at most one '=', and segments are separated by '&'s of the
     * text: the result is at most twice as long. */
    char *copy = malloc(2 * len + 1);
    if (!copy)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i <= len; i++) {
        size_t start = i;
        while (i < len && text[i] != '&')
            i++;
        size_t seglen = i - start;
        if (seglen == 0 || text[start] == '=')
            continue;
        if (n > 0)
            copy[n++] = '&';
        memcpy(copy + n, text + start, seglen);
        n += seglen;
        if (!memchr(text + start, '=', seglen))
            copy[n++] = '=';
    }
    copy[n] = '\0';
    int rc = evhttp_parse_query_str(copy, out);
    free(copy);
    return rc;
}

int httpparams_parse_parts(struct httpparams *p, const char *query, const char *content_type,
                           const char *body, size_t len, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    /* A multipart part is its value byte for byte, decoded by nobody: there "%00" is text,
     * and only a raw NUL would cut a value short. */
    bool multipart = len > 0 && content_type && content_type_is(content_type, "multipart/form-data");
    if ((query && has_encoded_nul(query, strlen(query), "%00")) ||
        (len > 0 && (memchr(body, '\0', len) ||
                     (!multipart && (has_encoded_nul(body, len, "%00") ||
                                     has_encoded_nul(body, len, "\\u0000")))))) {
        snprintf(err, errlen, "NUL byte in a parameter");
        return -1;
    }
    if (query && *query) {
        if (parse_pairs(query, strlen(query), &p->query) != 0) {
            snprintf(err, errlen, "malformed query string");
            return -1;
        }
        p->has_query = true;
    }
    if (len == 0)
        return 0;
    if (!content_type) {
        snprintf(err, errlen, "a request body needs a Content-Type");
        return -1;
    }
    if (content_type_is(content_type, "application/json")) {
        char why[64];
        p->json = json_parse_object(body, len, why, sizeof(why));
        if (!p->json) {
            snprintf(err, errlen, "body: %s", why);
            return -1;
        }
        return 0;
    }
    if (content_type_is(content_type, "application/x-www-form-urlencoded")) {
        if (parse_pairs(body, len, &p->form) != 0) {
            snprintf(err, errlen, "malformed form body");
            return -1;
        }
        p->has_form = true;
        return 0;
    }
    if (multipart) {
        /* Its parts are form fields: read, compared and refused when repeated as those are. */
        p->has_form = true;
        return multipart_parse(content_type, body, len, &p->form, err, errlen);
    }
    snprintf(err, errlen, "unsupported Content-Type (use application/json, "
             "application/x-www-form-urlencoded or multipart/form-data)");
    return -1;
}

int httpparams_parse(struct evhttp_request *req, struct httpparams *p, char *err, size_t errlen)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    size_t len = body ? evbuffer_get_length(body) : 0;
    const char *type = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    /* pullup makes the body one contiguous block; it is not NUL-terminated. */
    const char *text = len > 0 ? (const char *)evbuffer_pullup(body, -1) : NULL;
    return httpparams_parse_parts(p, query, type, text, len, err, errlen);
}

static int item_text(const cJSON *item, const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
    if (cJSON_IsString(item)) {
        if (strlen(item->valuestring) >= outlen) {
            snprintf(err, errlen, "%s: too long", name);
            return -1;
        }
        strcpy(out, item->valuestring);
        return 1;
    }
    if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (!isfinite(v) || fabs(v) > JSON_MAX_EXACT_INT) {
            snprintf(err, errlen, "%s: number out of range", name);
            return -1;
        }
        /* Integers print as integers; a fraction keeps two decimals (money) so that the
         * strict parsers downstream see what the client sent. 19.99 is stored as the
         * double just below it, which "%.17g" prints as 19.989999999999998 and
         * parse_cents refuses: the shortest of one or two decimals that reads back as the
         * same double is what the client wrote. Anything else (1.234) keeps all its
         * digits, so that it is still refused downstream. */
        if (v == floor(v)) {
            snprintf(out, outlen, "%.0f", v);
            return 1;
        }
        for (int decimals = 1; decimals <= 2; decimals++) {
            snprintf(out, outlen, "%.*f", decimals, v);
            if (strtod(out, NULL) == v)
                return 1;
        }
        snprintf(out, outlen, "%.17g", v);
        return 1;
    }
    snprintf(err, errlen, "%s: must be a string or a number", name);
    return -1;
}

/* ASCII only, as evutil_ascii_strcasecmp (tolower would follow the locale). */
static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* evhttp decodes the values of a query but not the names: "user%49d" would be a name of
 * its own that nobody reads, next to the userId it spells for any other reader. The name
 * is compared as decoded, as evhttp decodes values: "%XX" is a byte, "+" a space, any other
 * "%" itself. A decoded NUL cannot occur ("%00" is refused before). */
static bool key_is(const char *raw, const char *name)
{
    for (const char *p = raw;; p++, name++) {
        int c = (unsigned char)*p;
        if (c == '%' && hex_value(p[1]) >= 0 && hex_value(p[2]) >= 0) {
            c = hex_value(p[1]) * 16 + hex_value(p[2]);
            p += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (lower(c) != lower((unsigned char)*name))
            return false;
        if (c == '\0')
            return true;
    }
}

/* evhttp_find_header and cJSON_GetObjectItem take the first of a repeated name. The
 * header promises that a name given twice with different values is an error: otherwise a
 * proxy that reads the last userId and this gateway would disagree about who is buying.
 * Names match as evhttp_find_header matches them (any case), after percent-decoding.
 * Returns 0 with *out the value or NULL, or -1 with err set. */
static int kv_find(const struct evkeyvalq *q, const char *name, const char **out, char *err, size_t errlen)
{
    const char *found = NULL;
    for (const struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
        if (!key_is(kv->key, name))
            continue;
        if (found && strcmp(found, kv->value) != 0) {
            snprintf(err, errlen, "%s: given twice with different values", name);
            return -1;
        }
        found = kv->value;
    }
    *out = found;
    return 0;
}

/* The same for a JSON object, comparing the values as text (1 and "1" agree, as a query
 * and a body do). out has HTTPPARAMS_VALUE_LEN bytes. Returns 1 found, 0 absent, -1. */
static int object_find(const cJSON *object, const char *name, char *out, char *err, size_t errlen)
{
    int found = 0;
    for (const cJSON *item = object->child; item; item = item->next) {
        if (!item->string || strcmp(item->string, name) != 0)
            continue;
        char text[HTTPPARAMS_VALUE_LEN];
        if (item_text(item, name, text, sizeof(text), err, errlen) < 0)
            return -1;
        if (found && strcmp(text, out) != 0) {
            snprintf(err, errlen, "%s: given twice with different values", name);
            return -1;
        }
        strcpy(out, text);
        found = 1;
    }
    return found;
}

int httpparams_get(struct httpparams *p, const char *name, char *out, size_t outlen,
                   char *err, size_t errlen)
{
    const char *from_query = NULL;
    if (p->has_query && kv_find(&p->query, name, &from_query, err, errlen) != 0)
        return -1;
    char from_body[HTTPPARAMS_VALUE_LEN];
    int body_found = 0;
    if (p->has_form) {
        const char *v = NULL;
        if (kv_find(&p->form, name, &v, err, errlen) != 0)
            return -1;
        if (v) {
            if (strlen(v) >= sizeof(from_body)) {
                snprintf(err, errlen, "%s: too long", name);
                return -1;
            }
            strcpy(from_body, v);
            body_found = 1;
        }
    } else if (p->json) {
        body_found = object_find(p->json, name, from_body, err, errlen);
        if (body_found < 0)
            return -1;
    }
    const char *value = from_query ? from_query : (body_found ? from_body : NULL);
    if (!value)
        return 0;
    if (from_query && body_found && strcmp(from_query, from_body) != 0) {
        snprintf(err, errlen, "%s: query and body disagree", name);
        return -1;
    }
    if (strlen(value) >= outlen) {
        snprintf(err, errlen, "%s: too long", name);
        return -1;
    }
    strcpy(out, value);
    return 1;
}

int httpparams_get_required(struct httpparams *p, const char *name, char *out, size_t outlen,
                            char *err, size_t errlen)
{
    int found = httpparams_get(p, name, out, outlen, err, errlen);
    if (found == 0)
        snprintf(err, errlen, "%s is required", name);
    return found == 1 ? 0 : -1;
}

int httpparams_get_id(struct httpparams *p, const char *name, bool long_ids, int64_t *out, char *err,
                      size_t errlen)
{
    char value[HTTPPARAMS_VALUE_LEN];
    if (httpparams_get_required(p, name, value, sizeof(value), err, errlen) != 0)
        return -1;
    if (parse_client_id(value, long_ids, out) != 0) {
        snprintf(err, errlen, "%s must be a positive integer below %s", name, PARSE_ID_BOUND(long_ids));
        return -1;
    }
    return 0;
}

void httpparams_free(struct httpparams *p)
{
    if (p->has_query)
        evhttp_clear_headers(&p->query);
    if (p->has_form)
        evhttp_clear_headers(&p->form);
    cJSON_Delete(p->json);
    p->json = NULL;
}
