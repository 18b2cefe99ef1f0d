#include "admin/adminhttp.h"

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/adminauth.h"
#include "admin/adminconsole.h"
#include "admin/adminpool.h"
#include "admin/adminroutes.h"
#include "common/httpconns.h"
#include "common/log.h"
#include "ctl/ctlcall.h"

/* Bodies are a few fields; anything bigger is a mistake or an attack. */
#define ADMINHTTP_MAX_BODY 65536
#define ADMINHTTP_MAX_HEADERS 16384
/* Seconds a connection may stay silent; a command itself may take longer (verify of a
 * big sale), evhttp only times out reads and writes. */
#define ADMINHTTP_TIMEOUT_S 60
/* The admin's listen backlog: admin traffic is a handful of clients. */
#define ADMINHTTP_BACKLOG 128

struct adminhttp {
    const struct config *cfg;
    struct httpconns *conns;
    struct adminpool *pool;
    bool draining;
};

/* One request's command while a worker runs it. Made by start_route, freed by on_done,
 * which answers: evhttp keeps the request until then even if its client has gone. */
struct adminhttp_run {
    struct adminpool_job job;
    struct evhttp_request *req;
    const struct adminroutes_route *route;
    char actor[96];         /* the job's: "admin API from <client address>" */
};

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    case EVHTTP_REQ_TRACE: return "TRACE";
    case EVHTTP_REQ_CONNECT: return "CONNECT";
    case EVHTTP_REQ_PATCH: return "PATCH";
    }
    return "OTHER";
}

static const char *reason(int code)
{
    switch (code) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

/* The one place that answers: renders and frees json. */
static void send_json(struct evhttp_request *req, int code, cJSON *json)
{
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    static const char oom[] = "{\"success\":false,\"status\":\"UNAVAILABLE\",\"message\":\"out of memory\"}";
    if (!text)
        code = 503;
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", "application/json");
    evhttp_add_header(headers, "Cache-Control", "no-store");
    struct evbuffer *buf = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? NULL : evbuffer_new();
    if (buf)
        evbuffer_add(buf, text ? text : oom, text ? strlen(text) : sizeof(oom) - 1);
    evhttp_send_reply(req, code, reason(code), buf);
    if (buf)
        evbuffer_free(buf);
    cJSON_free(text);
}

/* A listing asked with format=csv: the CSV itself (text/csv), the next page's cursor in
 * X-Next-Cursor when there is one. */
static void send_csv(struct evhttp_request *req, const char *csv, const cJSON *next)
{
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", "text/csv; charset=utf-8");
    evhttp_add_header(headers, "Cache-Control", "no-store");
    /* The listing writes the cursor exactly (json_add_int: a raw number). */
    if (cJSON_IsRaw(next) && next->valuestring)
        evhttp_add_header(headers, "X-Next-Cursor", next->valuestring);
    struct evbuffer *buf = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? NULL : evbuffer_new();
    if (buf)
        evbuffer_add(buf, csv, strlen(csv));
    evhttp_send_reply(req, 200, reason(200), buf);
    if (buf)
        evbuffer_free(buf);
}

static void send_error(struct evhttp_request *req, int code, const char *status, const char *message)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "success", false);
    cJSON_AddStringToObject(j, "status", status);
    cJSON_AddStringToObject(j, "message", message);
    send_json(req, code, j);
}

static void send_not_allowed(struct evhttp_request *req, const char *allow)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
    send_error(req, 405, "METHOD_NOT_ALLOWED", "method not allowed");
}

static bool holds_escaped_nul(const char *text, size_t len)
{
    for (size_t i = 0; i + 6 <= len; i++)
        if (memcmp(text + i, "\\u0000", 6) == 0)
            return true;
    return false;
}

/* The body as a JSON object, NULL for an empty one; the code after answering 400/413,
 * else 0. */
static int read_body(struct evhttp_request *req, cJSON **out)
{
    *out = NULL;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = in ? evbuffer_get_length(in) : 0;
    if (len == 0)
        return 0;
    if (len > ADMINHTTP_MAX_BODY) {
        send_error(req, 413, "TOO_LARGE", "request body too large");
        return 413;
    }
    char *text = (char *)evbuffer_pullup(in, -1);
    /* cJSON would cut a string at a NUL (raw or \u0000) and pass the rest unseen. */
    if (memchr(text, '\0', len) || holds_escaped_nul(text, len)) {
        send_error(req, 400, "INVALID", "the body must not hold a NUL character");
        return 400;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!j) {
        send_error(req, 400, "INVALID", "the body is not JSON");
        return 400;
    }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        send_error(req, 400, "INVALID", "the body must be a JSON object");
        return 400;
    }
    *out = j;
    return 0;
}

/* The command's JSON and notes into the answer object. */
/* A GET's fields are its query's ("?userId=7"), as strings the command parses itself; a
 * name given twice is refused. The code after answering 400, else 0. */
static int read_query(struct evhttp_request *req, cJSON **out)
{
    *out = NULL;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!query || !query[0])
        return 0;
    struct evkeyvalq params;
    params.tqh_first = NULL;
    params.tqh_last = &params.tqh_first;
    if (evhttp_parse_query_str(query, &params) != 0) {
        evhttp_clear_headers(&params);
        send_error(req, 400, "INVALID", "malformed query string");
        return 400;
    }
    cJSON *j = cJSON_CreateObject();
    const char *twice = NULL;
    for (struct evkeyval *kv = params.tqh_first; j && kv && !twice; kv = kv->next.tqe_next) {
        if (cJSON_HasObjectItem(j, kv->key))
            twice = kv->key;
        else if (!cJSON_AddStringToObject(j, kv->key, kv->value)) {
            cJSON_Delete(j);
            j = NULL;
        }
    }
    int code = 0;
    if (!j) {
        code = 503;
        send_error(req, code, "UNAVAILABLE", "out of memory");
    } else if (twice) {
        char msg[160];
        snprintf(msg, sizeof(msg), "'%.100s' is given more than once", twice);
        cJSON_Delete(j);
        code = 400;
        send_error(req, code, "INVALID", msg);
    } else {
        *out = j;
    }
    evhttp_clear_headers(&params);
    return code;
}

static void add_result(cJSON *answer, struct ctlcall *call)
{
    if (call->result && cJSON_IsObject(call->result)) {
        cJSON *child;
        while ((child = call->result->child) != NULL) {
            cJSON_DetachItemViaPointer(call->result, child);
            if (cJSON_HasObjectItem(answer, child->string))
                cJSON_Delete(child);
            else
                cJSON_AddItemToObject(answer, child->string, child);
        }
    } else if (call->result) {
        cJSON_AddItemToObject(answer, "result", call->result);
        call->result = NULL;
    }
    if (call->notes) {
        cJSON_AddItemToObject(answer, "notes", call->notes);
        call->notes = NULL;
    }
}

/* The audit trail of every change: who asked what is the token holder's, what and with
 * which answer is here. */
static void audit(struct evhttp_request *req, int code)
{
    const char *method = method_name(evhttp_request_get_command(req));
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        LOG_INFO("%s %s -> %d", method, path ? path : "-", code);
    else
        LOG_DEBUG("%s %s -> %d", method, path ? path : "-", code);
}

/* A worker ran the command: the answer, on the loop's thread. */
static void on_done(struct adminpool_job *job)
{
    struct adminhttp_run *run = job->arg;
    const struct adminroutes_route *route = run->route;
    adminroutes_free_argv(job->argv, job->argc);
    char message[1100];
    adminroutes_words(route, job->call.error, message, sizeof(message));
    int code;
    const char *status = NULL;
    switch (job->outcome) {
    case CTLCALL_DONE: code = route->created; break;
    case CTLCALL_FAILED: code = route->created; status = "FAILED"; break;
    case CTLCALL_INVALID: code = 400; status = "INVALID"; break;
    case CTLCALL_NOT_FOUND: code = 404; status = "NOT_FOUND"; break;
    case CTLCALL_UNAVAILABLE: code = 503; status = "UNAVAILABLE"; break;
    case CTLCALL_REFUSED: default: code = 409; status = "REFUSED"; break;
    }
    const cJSON *csv = job->outcome == CTLCALL_DONE && job->call.result
                           ? cJSON_GetObjectItemCaseSensitive(job->call.result, "csv") : NULL;
    if (cJSON_IsString(csv)) {
        audit(run->req, 200);
        send_csv(run->req, csv->valuestring, cJSON_GetObjectItemCaseSensitive(job->call.result, "next"));
        ctlcall_free(&job->call);
        free(run);
        return;
    }
    cJSON *answer = cJSON_CreateObject();
    cJSON_AddBoolToObject(answer, "success", job->outcome == CTLCALL_DONE);
    if (status) {
        cJSON_AddStringToObject(answer, "status", status);
        cJSON_AddStringToObject(answer, "message",
                                message[0] ? message
                                           : job->outcome == CTLCALL_FAILED ? "a check failed"
                                                                            : "the command failed");
    }
    if (job->outcome == CTLCALL_DONE || job->outcome == CTLCALL_FAILED)
        add_result(answer, &job->call);
    ctlcall_free(&job->call);
    audit(run->req, code);
    send_json(run->req, code, answer);
    free(run);
}

/* Checks the body and the arguments here; the command goes to a worker. The code when
 * answered at once (400, 413, 503), else 0. */
static int start_route(struct adminhttp *h, struct evhttp_request *req, const struct adminroutes_route *route,
                       const char *id)
{
    cJSON *body = NULL;
    bool get = strcmp(route->method, "GET") == 0;
    int code = get ? read_query(req, &body) : read_body(req, &body);
    if (code != 0)
        return code;
    char **argv = NULL;
    int argc = 0;
    char err[512];
    int built = adminroutes_argv(route, id, body, &argv, &argc, err, sizeof(err));
    cJSON_Delete(body);
    if (built != 0) {
        send_error(req, 400, "INVALID", err);
        return 400;
    }
    struct adminhttp_run *run = calloc(1, sizeof(*run));
    if (!run) {
        adminroutes_free_argv(argv, argc);
        send_error(req, 503, "UNAVAILABLE", "out of memory");
        return 503;
    }
    run->req = req;
    run->route = route;
    /* The token is shared: the caller is known by its address alone. */
    const char *peer = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), (char **)&peer, &port);
    snprintf(run->actor, sizeof(run->actor), "admin API from %s", peer ? peer : "an unknown address");
    run->job = (struct adminpool_job){ .command = route->command, .handler = route->handler, .argc = argc,
                                       .argv = argv, .arg = run, .actor = run->actor };
    adminpool_submit(h->pool, &run->job);
    return 0;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct adminhttp *h = arg;
    httpconns_begin(h->conns, req);
    if (h->draining)
        httpconns_close_after(req);
    const char *method = method_name(evhttp_request_get_command(req));
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    int code = 0;
    if (!path) {
        code = 400;
        send_error(req, code, "INVALID", "malformed request target");
    } else if (strcmp(path, "/healthz") == 0 && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        code = 405;
        send_not_allowed(req, "GET, HEAD");
    } else if (strcmp(path, "/healthz") == 0) {
        /* Liveness for make up and systemd: no backend is touched, no token needed. */
        cJSON *j = cJSON_CreateObject();
        cJSON_AddBoolToObject(j, "success", true);
        code = 200;
        send_json(req, code, j);
    } else if (adminconsole_serve(req, path, &code)) {
        /* the console's static files: no data in them, no token needed */
    } else if (strncmp(path, "/admin/", 7) != 0) {
        code = 404;
        send_error(req, code, "NOT_FOUND", "no such endpoint");
    } else if (!adminauth_allows(evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"),
                                 h->cfg->admin_token)) {
        code = 401;
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                          "Bearer realm=\"seckill-admin\"");
        send_error(req, code, "UNAUTHORIZED", "a valid admin token is required (Authorization: Bearer ...)");
    } else {
        const struct adminroutes_route *route = NULL;
        char id[64], allow[64];
        switch (adminroutes_find(method, path, &route, id, sizeof(id), allow, sizeof(allow))) {
        case ADMINROUTES_FOUND:
            if ((code = start_route(h, req, route, id)) == 0)
                return;  /* on_done answers and logs */
            break;
        case ADMINROUTES_WRONG_METHOD:
            code = 405;
            send_not_allowed(req, allow);
            break;
        case ADMINROUTES_NO_PATH:
            code = 404;
            send_error(req, code, "NOT_FOUND", "no such endpoint");
            break;
        }
    }
    audit(req, code);
}

struct adminhttp *adminhttp_new(struct event_base *base, const struct config *cfg, char *err, size_t errlen)
{
    struct adminhttp *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->cfg = cfg;
    /* The gateway's limits serve here too: a connection must send its request within
     * http.header-timeout-ms, and no more than http.max-connections are open. */
    struct httpconns_limits limits = { cfg->http_max_connections, cfg->http_header_timeout_ms };
    h->conns = httpconns_new(base, &limits, NULL, NULL);
    if (!h->conns) {
        snprintf(err, errlen, "out of memory");
        adminhttp_free(h);
        return NULL;
    }
    h->pool = adminpool_new(base, cfg, (int)cfg->admin_workers, on_done, err, errlen);
    if (!h->pool) {
        adminhttp_free(h);
        return NULL;
    }
    struct evhttp *evhttp = httpconns_evhttp(h->conns);
    /* Up to four times the limit the answer is this file's JSON 413; beyond, evhttp
     * refuses the body itself, unread. */
    evhttp_set_max_body_size(evhttp, 4 * ADMINHTTP_MAX_BODY);
    evhttp_set_max_headers_size(evhttp, ADMINHTTP_MAX_HEADERS);
    evhttp_set_timeout(evhttp, ADMINHTTP_TIMEOUT_S);
    /* Every method reaches on_request, which answers the JSON 405 with Allow for one a path
     * does not serve: evhttp would answer CONNECT and every method it does not know (QUERY,
     * BREW) with its 501 HTML page. */
    evhttp_set_allowed_methods(evhttp, 0xffff);
    evhttp_set_gencb(evhttp, on_request, h);
    char addr[300];
    if (httpconns_listen(h->conns, "admin.port", cfg->admin_host, config_admin_port(cfg), ADMINHTTP_BACKLOG,
                         false, addr, sizeof(addr), err, errlen) != 0) {
        adminhttp_free(h);
        return NULL;
    }
    return h;
}

void adminhttp_stop_accepting(struct adminhttp *h)
{
    h->draining = true;
    httpconns_stop_accepting(h->conns);
}

size_t adminhttp_pending(const struct adminhttp *h) { return adminpool_pending(h->pool); }

void adminhttp_free(struct adminhttp *h)
{
    if (!h)
        return;
    adminpool_free(h->pool);  /* first: its last answers go out on the connections */
    httpconns_free(h->conns);
    free(h);
}
