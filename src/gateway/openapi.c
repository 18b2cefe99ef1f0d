#include "gateway/openapi.h"

#include "gateway/openapidoc.h"
#include "gateway/reply.h"

void openapi_serve(struct gateway *gw, struct evhttp_request *req)
{
    (void)gw;
    /* application/yaml is the registered type (RFC 9512); the document never changes
     * while the binary runs, so caches may keep it. */
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Cache-Control", "public, max-age=3600");
    /* The text lives as long as the process: lent, not copied. */
    reply_document(req, "application/yaml", (const char *)openapidoc_text, openapidoc_len, true);
}
