#include "gateway/clientip.h"

#include <arpa/inet.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* Copies the last hop of xff into out when it is an address; returns 0, else -1. */
static int last_hop(const char *xff, char *out, size_t outlen)
{
    /* The proxy in front of us appends the address it saw: the last hop is the only one
     * we can trust; anything before it came from the client. */
    const char *hop = strrchr(xff, ',');
    hop = hop ? hop + 1 : xff;
    while (*hop == ' ' || *hop == '\t')
        hop++;
    size_t n = strcspn(hop, " \t");
    unsigned char addr[sizeof(struct in6_addr)];
    char text[INET6_ADDRSTRLEN];
    if (n == 0 || n >= sizeof(text))
        return -1;
    memcpy(text, hop, n);
    text[n] = '\0';
    if (inet_pton(AF_INET, text, addr) != 1 && inet_pton(AF_INET6, text, addr) != 1)
        return -1;
    snprintf(out, outlen, "%s", text);
    return 0;
}

void clientip_pick(const char *xff, const char *peer, char *out, size_t outlen)
{
    if (xff && last_hop(xff, out, outlen) == 0)
        return;
    snprintf(out, outlen, "%s", peer ? peer : "unknown");
}

void clientip_pick_headers(const struct evkeyvalq *headers, const char *peer, char *out, size_t outlen)
{
    /* A proxy may add its own header line instead of appending to the client's (HAProxy
     * does), so the client's forged line comes first. The lines mean their join with ",",
     * whose last hop is the last hop of the last line: an earlier line never counts. */
    const char *last = NULL;
    for (const struct evkeyval *kv = headers->tqh_first; kv; kv = kv->next.tqe_next)
        if (evutil_ascii_strcasecmp(kv->key, "X-Forwarded-For") == 0)
            last = kv->value;
    clientip_pick(last, peer, out, outlen);
}

void clientip_of(const struct config *cfg, struct evhttp_request *req, char *out, size_t outlen)
{
    const char *peer = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), (char **)&peer, &port);
    if (cfg->http_trust_forwarded_for)
        clientip_pick_headers(evhttp_request_get_input_headers(req), peer, out, outlen);
    else
        clientip_pick(NULL, peer, out, outlen);
}
