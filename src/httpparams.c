#include "httpparams.h"

#include "json.h"

#include <cjson/cJSON.h>
#include <event2/buffer.h>
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

int httpparams_parse_parts(struct httpparams *p, const char *query, const char *content_type,
                           const char *body, size_t len, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    if (query && *query) {
        if (evhttp_parse_query_str(query, &p->query) != 0) {
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
        char *copy = malloc(len + 1);
        if (!copy) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(copy, body, len);
        copy[len] = '\0';
        int rc = strlen(copy) == len ? evhttp_parse_query_str(copy, &p->form) : -1;
        free(copy);
        if (rc != 0) {
            snprintf(err, errlen, "malformed form body");
            return -1;
        }
        p->has_form = true;
        return 0;
    }
    snprintf(err, errlen, "unsupported Content-Type (use application/json or application/x-www-form-urlencoded)");
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

static int json_value(const cJSON *item, const char *name, char *out, size_t outlen, char *err, size_t errlen)
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
         * strict parsers downstream see what the client sent. */
        if (v == floor(v))
            snprintf(out, outlen, "%.0f", v);
        else
            snprintf(out, outlen, "%.17g", v);
        return 1;
    }
    snprintf(err, errlen, "%s: must be a string or a number", name);
    return -1;
}

int httpparams_get(struct httpparams *p, const char *name, char *out, size_t outlen,
                   char *err, size_t errlen)
{
    const char *from_query = p->has_query ? evhttp_find_header(&p->query, name) : NULL;
    char from_body[HTTPPARAMS_VALUE_LEN];
    int body_found = 0;
    if (p->has_form) {
        const char *v = evhttp_find_header(&p->form, name);
        if (v) {
            if (strlen(v) >= sizeof(from_body)) {
                snprintf(err, errlen, "%s: too long", name);
                return -1;
            }
            strcpy(from_body, v);
            body_found = 1;
        }
    } else if (p->json) {
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(p->json, name);
        if (item) {
            body_found = json_value(item, name, from_body, sizeof(from_body), err, errlen);
            if (body_found < 0)
                return -1;
        }
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

void httpparams_free(struct httpparams *p)
{
    if (p->has_query)
        evhttp_clear_headers(&p->query);
    if (p->has_form)
        evhttp_clear_headers(&p->form);
    cJSON_Delete(p->json);
    p->json = NULL;
}
