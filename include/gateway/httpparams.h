#ifndef SK_HTTPPARAMS_H
#define SK_HTTPPARAMS_H

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* Request parameters from the query string and the body (form-encoded, multipart/form-data
 * (multipart.h) or a JSON object), parsed strictly: a body of another content type,
 * malformed JSON or multipart, or a name given twice with different values is an error. */

#define HTTPPARAMS_VALUE_LEN 128

struct httpparams {
    struct evkeyvalq query;
    struct evkeyvalq form;   /* a form's pairs, or a multipart body's parts */
    struct cJSON *json;   /* owned; NULL without a JSON body */
    bool has_query;
    bool has_form;
};

int httpparams_parse(struct evhttp_request *req, struct httpparams *p, char *err, size_t errlen);
/* The same from the request's parts, without evhttp (the fuzz harness calls it): query is
 * the raw query string or NULL, content_type the header or NULL, body need not end in a
 * NUL. Returns 0, or -1 with err set; either way the caller calls httpparams_free. */
int httpparams_parse_parts(struct httpparams *p, const char *query, const char *content_type,
                           const char *body, size_t len, char *err, size_t errlen);
/* Copies the value of `name` into out. Returns 1 found, 0 absent, -1 invalid (err set). */
int httpparams_get(struct httpparams *p, const char *name, char *out, size_t outlen,
                   char *err, size_t errlen);
/* The same for a parameter the request cannot do without: 0 found, else -1 with err set
 * ("NAME is required" when absent). */
int httpparams_get_required(struct httpparams *p, const char *name, char *out, size_t outlen,
                            char *err, size_t errlen);
/* A required id (a positive integer below 2^53, or 2^63 with long_ids: parse_client_id).
 * Returns 0, or -1 with err set. */
int httpparams_get_id(struct httpparams *p, const char *name, bool long_ids, int64_t *out, char *err,
                      size_t errlen);
void httpparams_free(struct httpparams *p);

#endif
