#include "common/slotmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int slotmap_parse_addr(const char *s, size_t len, struct slotmap_addr *out)
{
    const char *colon = NULL;
    for (size_t i = len; i > 0; i--)
        if (s[i - 1] == ':') {
            colon = s + i - 1;
            break;
        }
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof(out->host))
        return -1;
    size_t hostlen = (size_t)(colon - s);
    const char *p = colon + 1, *end = s + len;
    if (p == end || end - p > 5)
        return -1;
    int port = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        port = port * 10 + (*p - '0');
    }
    if (port < 1 || port > 65535)
        return -1;
    for (size_t i = 0; i < hostlen; i++)
        if (s[i] == ' ' || s[i] == ',' || s[i] == '\t')
            return -1;
    memcpy(out->host, s, hostlen);
    out->host[hostlen] = '\0';
    out->port = port;
    return 0;
}

int slotmap_parse_nodes(const char *list, struct slotmap_addr *out, size_t max, char *err,
                        size_t errlen)
{
    size_t n = 0;
    const char *p = list;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0')
        return 0;
    for (;;) {
        const char *start = p;
        while (*p && *p != ',')
            p++;
        const char *end = p;
        while (start < end && (*start == ' ' || *start == '\t'))
            start++;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (n == max) {
            snprintf(err, errlen, "more than %zu nodes", max);
            return -1;
        }
        if (slotmap_parse_addr(start, (size_t)(end - start), &out[n]) != 0) {
            snprintf(err, errlen, "'%.*s' is not host:port", (int)(end - start), start);
            return -1;
        }
        n++;
        if (*p == '\0')
            return (int)n;
        p++;  /* past the comma: a trailing one leaves an empty entry, refused above */
    }
}

void slotmap_init(struct slotmap *m)
{
    m->count = 0;
    m->seeds = 0;
    memset(m->owner, -1, sizeof(m->owner));
}

void slotmap_single(struct slotmap *m, const char *host, int port)
{
    slotmap_init(m);
    struct slotmap_addr a = { .port = port };
    snprintf(a.host, sizeof(a.host), "%s", host);
    slotmap_seed(m, &a);
    memset(m->owner, 0, sizeof(m->owner));
}

bool slotmap_known(const struct slotmap *m, int node)
{
    return node >= 0 && (size_t)node < m->count && m->nodes[node].port != 0;
}

static bool same_addr(const struct slotmap_addr *a, const struct slotmap_addr *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

static int find(const struct slotmap *m, const struct slotmap_addr *a)
{
    for (size_t i = 0; i < m->count; i++)
        if (same_addr(&m->nodes[i], a))
            return (int)i;
    return -1;
}

int slotmap_node(struct slotmap *m, const struct slotmap_addr *a)
{
    int i = find(m, a);
    if (i >= 0)
        return i;
    for (i = 0; (size_t)i < m->count && m->nodes[i].port != 0; i++)
        ;
    if (i == SLOTMAP_MAX_NODES)
        return -1;
    m->nodes[i] = *a;
    if ((size_t)i == m->count)
        m->count++;
    return i;
}

int slotmap_seed(struct slotmap *m, const struct slotmap_addr *a)
{
    int i = slotmap_node(m, a);
    if (i >= 0)
        m->seeds |= (slotmap_set)1 << i;
    return i;
}

/* One entry of CLUSTER SLOTS: [start, end, [host, port, id, ...], replicas...]: its range
 * and its master's address. */
static int parse_entry(const redisReply *e, const char *asked_host, int *first, int *last,
                       struct slotmap_addr *a, char *err, size_t errlen)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[0]->type != REDIS_REPLY_INTEGER ||
        e->element[1]->type != REDIS_REPLY_INTEGER || e->element[2]->type != REDIS_REPLY_ARRAY ||
        e->element[2]->elements < 2) {
        snprintf(err, errlen, "CLUSTER SLOTS: malformed entry");
        return -1;
    }
    long long from = e->element[0]->integer, to = e->element[1]->integer;
    const redisReply *master = e->element[2];
    if (from < 0 || to < from || to >= REDISSLOT_COUNT || master->element[0]->type != REDIS_REPLY_STRING ||
        master->element[1]->type != REDIS_REPLY_INTEGER) {
        snprintf(err, errlen, "CLUSTER SLOTS: malformed range");
        return -1;
    }
    /* An empty or "?" endpoint means "the node you asked" (Redis 7). */
    const char *host = master->element[0]->str;
    if (host[0] == '\0' || strcmp(host, "?") == 0)
        host = asked_host;
    if (strlen(host) >= sizeof(a->host) || master->element[1]->integer < 1 ||
        master->element[1]->integer > 65535) {
        snprintf(err, errlen, "CLUSTER SLOTS: bad master address");
        return -1;
    }
    snprintf(a->host, sizeof(a->host), "%s", host);
    a->port = (int)master->element[1]->integer;
    *first = (int)from;
    *last = (int)to;
    return 0;
}

/* Built aside, so a bad reply leaves the working map alone. The table keeps the seeds and
 * the masters r names, at their numbers; the others' numbers are freed before r's new
 * masters are numbered, so those take them. */
static int load_into(struct slotmap *next, const redisReply *r, const char *asked_host, char *err,
                     size_t errlen)
{
    int first, last;
    struct slotmap_addr a;
    slotmap_set keep = next->seeds;
    for (size_t i = 0; i < r->elements; i++) {
        if (parse_entry(r->element[i], asked_host, &first, &last, &a, err, errlen) != 0)
            return -1;
        int known = find(next, &a);
        if (known >= 0)
            keep |= (slotmap_set)1 << known;
    }
    for (size_t i = 0; i < next->count; i++)
        if (!(keep & ((slotmap_set)1 << i)))
            memset(&next->nodes[i], 0, sizeof(next->nodes[i]));
    while (next->count > 0 && next->nodes[next->count - 1].port == 0)
        next->count--;
    memset(next->owner, -1, sizeof(next->owner));
    for (size_t i = 0; i < r->elements; i++) {
        parse_entry(r->element[i], asked_host, &first, &last, &a, err, errlen);
        int node = slotmap_node(next, &a);
        if (node < 0) {
            snprintf(err, errlen, "CLUSTER SLOTS: more than %d nodes with the seeds", SLOTMAP_MAX_NODES);
            return -1;
        }
        memset(next->owner + first, node, (size_t)(last - first + 1));
    }
    return 0;
}

int slotmap_load(struct slotmap *m, const redisReply *r, const char *asked_host, slotmap_set *dropped,
                 char *err, size_t errlen)
{
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "CLUSTER SLOTS: %s", r && r->type == REDIS_REPLY_ERROR ? r->str
                 : "not an array");
        return -1;
    }
    struct slotmap *next = malloc(sizeof(*next));
    if (!next) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(next, m, sizeof(*next));
    if (load_into(next, r, asked_host, err, errlen) != 0) {
        free(next);
        return -1;
    }
    slotmap_set gone = 0;
    for (size_t i = 0; i < m->count; i++)
        if (slotmap_known(m, (int)i) &&
            (!slotmap_known(next, (int)i) || !same_addr(&m->nodes[i], &next->nodes[i])))
            gone |= (slotmap_set)1 << i;
    memcpy(m, next, sizeof(*m));
    free(next);
    if (dropped)
        *dropped = gone;
    return 0;
}

int slotmap_owner(const struct slotmap *m, int slot)
{
    if (slot < 0 || slot >= REDISSLOT_COUNT)
        return -1;
    return m->owner[slot];
}

int slotmap_owner_of_key(const struct slotmap *m, const char *key, size_t len)
{
    return m->owner[redisslot_of(key, len)];
}

size_t slotmap_uncovered(const struct slotmap *m)
{
    size_t n = 0;
    for (int s = 0; s < REDISSLOT_COUNT; s++)
        n += m->owner[s] < 0;
    return n;
}

bool slotmap_owns_any(const struct slotmap *m, int node)
{
    for (int s = 0; s < REDISSLOT_COUNT; s++)
        if (m->owner[s] == node)
            return true;
    return false;
}

/* "-MOVED 3999 127.0.0.1:6381" / "-ASK 3999 127.0.0.1:6381" */
enum slotmap_verdict slotmap_redirect(const redisReply *r, struct slotmap_redirect *out)
{
    out->verdict = SLOTMAP_DONE;
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str)
        return SLOTMAP_DONE;
    enum slotmap_verdict v;
    const char *p;
    if (strncmp(r->str, "MOVED ", 6) == 0) {
        v = SLOTMAP_MOVED;
        p = r->str + 6;
    } else if (strncmp(r->str, "ASK ", 4) == 0) {
        v = SLOTMAP_ASK;
        p = r->str + 4;
    } else {
        return SLOTMAP_DONE;
    }
    if (*p < '0' || *p > '9')
        return SLOTMAP_DONE;
    errno = 0;
    char *end;
    long slot = strtol(p, &end, 10);
    if (errno || *end != ' ' || slot < 0 || slot >= REDISSLOT_COUNT)
        return SLOTMAP_DONE;
    const char *addr = end + 1;
    if (slotmap_parse_addr(addr, strlen(addr), &out->to) != 0)
        return SLOTMAP_DONE;
    out->slot = (int)slot;
    out->verdict = v;
    return v;
}

int slotmap_follow(struct slotmap *m, const struct slotmap_redirect *rd)
{
    int node = slotmap_node(m, &rd->to);
    if (node >= 0 && rd->verdict == SLOTMAP_MOVED)
        m->owner[rd->slot] = (int8_t)node;
    return node;
}
