#include "gateway/openapi.h"

#include <event2/buffer.h>

#include "gateway/metrics.h"
#include "gateway/openapidoc.h"

void openapi_serve(struct gateway *gw, struct evhttp_request *req)
{
    (void)gw;
    /* application/yaml is the registered type (RFC 9512); the document never changes
     * while the binary runs, so caches may keep it. */
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", "application/yaml");
    evhttp_add_header(headers, "Cache-Control", "public, max-age=3600");
    metrics_response(200, "OK");
    struct evbuffer *buf = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD ? NULL : evbuffer_new();
    /* The text lives as long as the process: lent to the buffer, not copied. */
    if (buf)
        evbuffer_add_reference(buf, openapidoc_text, openapidoc_len, NULL, NULL);
    evhttp_send_reply(req, 200, "OK", buf);
    if (buf)
        evbuffer_free(buf);
}
