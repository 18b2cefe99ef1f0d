#include "admin/adminconsole.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <string.h>

/* Only the console's own files may run or style the page: no inline script (a value an
 * attacker put in a sale's name could not run even if it reached the HTML), no other
 * origin, and no framing (clickjacking of the cancel button). */
#define ADMINCONSOLE_CSP                                                                             \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const struct adminconsole_asset *adminconsole_find(const char *name)
{
    if (name[0] == '\0')
        name = "index.html";
    for (size_t i = 0; i < adminconsole_count; i++)
        if (strcmp(adminconsole_assets[i].name, name) == 0)
            return &adminconsole_assets[i];
    return NULL;
}

const char *adminconsole_type(const char *name)
{
    static const struct { const char *ext, *type; } types[] = {
        { ".html", "text/html; charset=utf-8" },
        { ".css", "text/css; charset=utf-8" },
        { ".js", "text/javascript; charset=utf-8" },
    };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        size_t e = strlen(types[i].ext);
        if (n >= e && strcmp(name + n - e, types[i].ext) == 0)
            return types[i].type;
    }
    return "application/octet-stream";
}

static void send_text(struct evhttp_request *req, int code, const char *why, const char *type,
                      const unsigned char *text, size_t len)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Content-Security-Policy", ADMINCONSOLE_CSP);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    /* A new binary serves new files: the browser asks again rather than mixing versions. */
    evhttp_add_header(h, "Cache-Control", "no-cache");
    struct evbuffer *buf = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? NULL : evbuffer_new();
    if (buf)
        evbuffer_add(buf, text, len);
    evhttp_send_reply(req, code, why, buf);
    if (buf)
        evbuffer_free(buf);
}

bool adminconsole_serve(struct evhttp_request *req, const char *path, int *code)
{
    if (strcmp(path, "/console") != 0 && strncmp(path, "/console/", 9) != 0)
        return false;
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    static const unsigned char not_allowed[] = "method not allowed\n", missing[] = "no such file\n";
    if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        *code = 405;
        send_text(req, *code, "Method Not Allowed", "text/plain; charset=utf-8", not_allowed,
                  sizeof(not_allowed) - 1);
        return true;
    }
    if (strcmp(path, "/console") == 0) {
        /* Relative URLs in the page resolve under /console/ only with the slash. */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Location", "/console/");
        *code = 301;
        send_text(req, *code, "Moved Permanently", "text/plain; charset=utf-8", missing, 0);
        return true;
    }
    const struct adminconsole_asset *a = adminconsole_find(path + 9);
    if (!a) {
        *code = 404;
        send_text(req, *code, "Not Found", "text/plain; charset=utf-8", missing, sizeof(missing) - 1);
        return true;
    }
    *code = 200;
    send_text(req, *code, "OK", adminconsole_type(a->name), a->text, a->len);
    return true;
}
