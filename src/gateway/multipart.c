#include "gateway/multipart.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 2046 section 5.1.1: at most 70 characters. */
#define MULTIPART_BOUNDARY_MAX 70

static const char TYPE[] = "multipart/form-data";

struct slice {
    const char *p;
    size_t n;
};

/* ASCII only: tolower would follow the locale. */
static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool slice_is(struct slice s, const char *word)
{
    size_t n = strlen(word);
    if (s.n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s.p[i]) != lower((unsigned char)word[i]))
            return false;
    return true;
}

static bool is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 9110 5.6.2 */
static bool is_tchar(unsigned char c)
{
    return is_alnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

/* RFC 2046 5.1.1 */
static bool is_bchar(unsigned char c)
{
    return is_alnum(c) || (c != '\0' && strchr("'()+_,-./:=? ", c));
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The first `needle` in [from, end), or NULL. Linear: no byte of a delimiter after its
 * CR is a CR, so a partial match is never re-read. */
static const char *find(const char *from, const char *end, const char *needle, size_t n)
{
    for (const char *p = from; (size_t)(end - p) >= n; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) - n + 1);
        if (!p)
            return NULL;
        if (memcmp(p, needle, n) == 0)
            return p;
    }
    return NULL;
}

/* One `; name=value` parameter of a header value (RFC 9110 5.6.6), from *rest on: 1 read
 * into name and value, 0 when only blanks are left, -1 malformed. A quoted value runs to
 * the next quote: RFC 7578 4.2 has senders percent-encode a quote (browsers, urllib3 and
 * OkHttp do, none writes a backslash escape), so a backslash is a byte of the name. */
static int next_param(struct slice *rest, struct slice *name, struct slice *value)
{
    const char *p = rest->p, *end = rest->p + rest->n;
    while (p < end && is_blank(*p))
        p++;
    if (p == end) {
        *rest = (struct slice){ p, 0 };
        return 0;
    }
    if (*p++ != ';')
        return -1;
    while (p < end && is_blank(*p))
        p++;
    const char *start = p;
    while (p < end && is_tchar((unsigned char)*p))
        p++;
    if (p == start || p == end || *p != '=')
        return -1;
    *name = (struct slice){ start, (size_t)(p - start) };
    p++;
    if (p < end && *p == '"') {
        start = ++p;
        while (p < end && *p != '"')
            p++;
        if (p == end)
            return -1;
        *value = (struct slice){ start, (size_t)(p - start) };
        p++;
    } else {
        start = p;
        while (p < end && is_tchar((unsigned char)*p))
            p++;
        if (p == start)
            return -1;
        *value = (struct slice){ start, (size_t)(p - start) };
    }
    *rest = (struct slice){ p, (size_t)(end - p) };
    return 1;
}

/* The boundary parameter of content_type (the type checked first). Returns 0, or -1 with
 * err set. */
static int boundary_of(const char *content_type, struct slice *boundary, char *err, size_t errlen)
{
    size_t len = strlen(content_type), n = sizeof(TYPE) - 1;
    if (len < n || !slice_is((struct slice){ content_type, n }, TYPE)) {
        snprintf(err, errlen, "not a multipart/form-data Content-Type");
        return -1;
    }
    struct slice rest = { content_type + n, len - n }, name, value;
    bool found = false;
    int rc;
    while ((rc = next_param(&rest, &name, &value)) == 1) {
        if (!slice_is(name, "boundary"))
            continue;
        if (found) {
            snprintf(err, errlen, "multipart/form-data: boundary given twice");
            return -1;
        }
        found = true;
        *boundary = value;
    }
    if (rc < 0) {
        snprintf(err, errlen, "multipart/form-data: malformed Content-Type parameters");
        return -1;
    }
    if (!found) {
        snprintf(err, errlen, "multipart/form-data needs a boundary parameter");
        return -1;
    }
    bool ok = boundary->n >= 1 && boundary->n <= MULTIPART_BOUNDARY_MAX &&
              boundary->p[boundary->n - 1] != ' ';
    for (size_t i = 0; ok && i < boundary->n; i++)
        ok = is_bchar((unsigned char)boundary->p[i]);
    if (!ok) {
        snprintf(err, errlen, "multipart/form-data: malformed boundary (1 to 70 of RFC 2046's characters)");
        return -1;
    }
    return 0;
}

/* Content-Disposition's value: `form-data` and its name (a filename refused). */
static int disposition(struct slice value, struct slice *name, char *err, size_t errlen)
{
    const char *p = value.p, *end = value.p + value.n;
    while (p < end && is_tchar((unsigned char)*p))
        p++;
    if (!slice_is((struct slice){ value.p, (size_t)(p - value.p) }, "form-data")) {
        snprintf(err, errlen, "multipart body: a part that is not Content-Disposition: form-data");
        return -1;
    }
    struct slice rest = { p, (size_t)(end - p) }, key, v;
    bool named = false;
    int rc;
    while ((rc = next_param(&rest, &key, &v)) == 1) {
        if (slice_is(key, "filename") || slice_is(key, "filename*")) {
            snprintf(err, errlen, "multipart body: a part with a filename (files are not parameters)");
            return -1;
        }
        if (!slice_is(key, "name"))
            continue;
        if (named) {
            snprintf(err, errlen, "multipart body: a part named twice");
            return -1;
        }
        named = true;
        *name = v;
    }
    if (rc < 0) {
        snprintf(err, errlen, "multipart body: malformed Content-Disposition");
        return -1;
    }
    if (!named) {
        snprintf(err, errlen, "multipart body: a part without a name");
        return -1;
    }
    return 0;
}

/* The header lines of a part from *at up to and past the empty line; *at moves past it.
 * Headers other than these two are ignored (RFC 7578 4.8); folded lines are refused. */
static int part_headers(const char **at, const char *end, struct slice *name, char *err, size_t errlen)
{
    const char *p = *at;
    bool disposed = false;
    for (;;) {
        const char *eol = find(p, end, "\r\n", 2);
        if (!eol) {
            snprintf(err, errlen, "multipart body: ends inside a part's headers");
            return -1;
        }
        if (eol == p)
            break;
        const char *colon = p;
        while (colon < eol && is_tchar((unsigned char)*colon))
            colon++;
        if (colon == p || colon == eol || *colon != ':' || memchr(p, '\r', (size_t)(eol - p)) ||
            memchr(p, '\n', (size_t)(eol - p))) {
            snprintf(err, errlen, "multipart body: malformed part header");
            return -1;
        }
        struct slice header = { p, (size_t)(colon - p) };
        const char *v = colon + 1, *v_end = eol;
        while (v < v_end && is_blank(*v))
            v++;
        while (v_end > v && is_blank(v_end[-1]))
            v_end--;
        struct slice value = { v, (size_t)(v_end - v) };
        if (slice_is(header, "Content-Disposition")) {
            if (disposed) {
                snprintf(err, errlen, "multipart body: a part with two Content-Disposition headers");
                return -1;
            }
            disposed = true;
            if (disposition(value, name, err, errlen) != 0)
                return -1;
        } else if (slice_is(header, "Content-Transfer-Encoding") && !slice_is(value, "7bit") &&
                   !slice_is(value, "8bit") && !slice_is(value, "binary")) {
            /* RFC 7578 4.7 deprecates it; a base64 value read as it is would be wrong. */
            snprintf(err, errlen, "multipart body: a Content-Transfer-Encoding other than 7bit, 8bit, "
                     "binary");
            return -1;
        }
        p = eol + 2;
    }
    if (!disposed) {
        snprintf(err, errlen, "multipart body: a part without Content-Disposition");
        return -1;
    }
    *at = p + 2;
    return 0;
}

/* Appends by hand: evhttp_add_header refuses a value with a line break, which a part's
 * content may have. evhttp_clear_headers frees what this allocates. */
static int append(struct evkeyvalq *q, struct slice name, struct slice value)
{
    struct evkeyval *kv = calloc(1, sizeof(*kv));
    char *key = malloc(name.n + 1), *text = malloc(value.n + 1);
    if (!kv || !key || !text) {
        free(kv);
        free(key);
        free(text);
        return -1;
    }
    memcpy(key, name.p, name.n);
    key[name.n] = '\0';
    memcpy(text, value.p, value.n);
    text[value.n] = '\0';
    kv->key = key;
    kv->value = text;
    kv->next.tqe_next = NULL;
    kv->next.tqe_prev = q->tqh_last;
    *q->tqh_last = kv;
    q->tqh_last = &kv->next.tqe_next;
    return 0;
}

int multipart_parse(const char *content_type, const char *body, size_t len, struct evkeyvalq *out,
                    char *err, size_t errlen)
{
    out->tqh_first = NULL;
    out->tqh_last = &out->tqh_first;
    struct slice boundary;
    if (boundary_of(content_type, &boundary, err, errlen) != 0)
        return -1;
    /* CRLF "--" boundary: every delimiter but a first one at the very start of the body. */
    char delimiter[4 + MULTIPART_BOUNDARY_MAX + 1];
    int n = snprintf(delimiter, sizeof(delimiter), "\r\n--%.*s", (int)boundary.n, boundary.p);
    size_t dlen = (size_t)n;
    const char *end = body + len;
    const char *p;
    if (len >= dlen - 2 && memcmp(body, delimiter + 2, dlen - 2) == 0) {
        p = body + dlen - 2;
    } else {
        p = find(body, end, delimiter, dlen);
        if (!p) {
            snprintf(err, errlen, "multipart body: no boundary line");
            return -1;
        }
        p += dlen;
    }
    for (;;) {
        /* p is just past a delimiter: "--" closes the body, else blanks and CRLF open a part. */
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return 0;
        while (p < end && is_blank(*p))
            p++;
        if (p == end) {
            snprintf(err, errlen, "multipart body: ends before its closing boundary");
            return -1;
        }
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
            snprintf(err, errlen, "multipart body: malformed boundary line");
            return -1;
        }
        p += 2;
        struct slice name = { NULL, 0 };
        if (part_headers(&p, end, &name, err, errlen) != 0)
            return -1;
        const char *next = find(p, end, delimiter, dlen);
        if (!next) {
            snprintf(err, errlen, "multipart body: ends before its closing boundary");
            return -1;
        }
        if (name.n > 0 && append(out, name, (struct slice){ p, (size_t)(next - p) }) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        p = next + dlen;
    }
}
