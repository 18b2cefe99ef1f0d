#ifndef SK_ADMINROUTES_H
#define SK_ADMINROUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"

struct cJSON;

/* The admin API's routes and how each becomes a seckillctl command line: the path's id
 * and the JSON body's fields turn into the options the command parses itself, so the API
 * validates exactly as seckillctl does. Pure (no I/O); docs/admin-openapi.yaml is the
 * contract. */

/* A body field and the option it becomes ("minOrder" -> "--min-order"). */
struct adminroutes_field {
    const char *name;
    const char *option;
};

#define ADMINROUTES_MAX_FIELDS 10

struct adminroutes_route {
    const char *method;         /* "GET", "POST", "DELETE", ... */
    const char *path;           /* segments; "{id}" is an id (an order number under /admin/orders) */
    const char *command;        /* the seckillctl command, for messages and the log */
    ctlrun_handler handler;
    const char *id_option;      /* the id as an option ("--coupon"), NULL: a positional */
    int created;                /* the HTTP code of success: 201 for a create, else 200 */
    /* the body's (a GET's: its query's), NULL-ended */
    struct adminroutes_field fields[ADMINROUTES_MAX_FIELDS];
};

/* What a path names. */
enum adminroutes_match {
    ADMINROUTES_FOUND,          /* *route serves this method on this path */
    ADMINROUTES_WRONG_METHOD,   /* the path exists; allow lists its methods ("GET, HEAD") */
    ADMINROUTES_NO_PATH,
};

/* Finds the route of method and path; id receives the path's "{id}" segment (the text,
 * checked by the command) or "" when it has none. HEAD is served wherever GET is. */
enum adminroutes_match adminroutes_find(const char *method, const char *path,
                                        const struct adminroutes_route **route, char *id, size_t idlen,
                                        char *allow, size_t allowlen);

/* The command line for route from id and body (a JSON object, or NULL for no body):
 * argv[0..*argc-1], each malloc'd (adminroutes_free_argv). A field the route does not
 * take, or a value that is neither a string nor a number, is refused: -1 with err set
 * and nothing allocated. */
int adminroutes_argv(const struct adminroutes_route *route, const char *id, const struct cJSON *body,
                     char ***argv, int *argc, char *err, size_t errlen);
void adminroutes_free_argv(char **argv, int argc);

/* A command's message in the API's words: each option of the route named as its field
 * ("--min-order 'x': ..." -> "minOrder 'x': ..."). */
void adminroutes_words(const struct adminroutes_route *route, const char *message, char *out, size_t outlen);

/* Every route, for the docs test and the help. */
extern const struct adminroutes_route adminroutes_table[];
extern const size_t adminroutes_count;

#endif
