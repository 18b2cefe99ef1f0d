#ifndef SK_ADMINCONSOLE_H
#define SK_ADMINCONSOLE_H

#include <stdbool.h>
#include <stddef.h>

struct evhttp_request;

/* The operator console (docs/console.md): static HTML, CSS and JavaScript under /console/,
 * compiled into seckill-admin (scripts/embedconsole.sh). The files hold no data and are
 * served without the token; every figure the pages show comes from the /admin/ routes,
 * which the pages call with it. */

struct adminconsole_asset {
    const char *name;              /* "console.js" */
    const unsigned char *text;
    size_t len;
};

extern const struct adminconsole_asset adminconsole_assets[];
extern const size_t adminconsole_count;

/* The asset named name ("" is index.html), NULL when there is none. */
const struct adminconsole_asset *adminconsole_find(const char *name);

/* Its Content-Type, from the name's extension. */
const char *adminconsole_type(const char *name);

/* Answers req when path is /console or under /console/; false (nothing sent) otherwise.
 * *code is the status sent. */
bool adminconsole_serve(struct evhttp_request *req, const char *path, int *code);

#endif
