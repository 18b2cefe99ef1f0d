#include "common/orderno.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/parse.h"

void orderno_init(struct orderno_gen *gen, uint32_t node)
{
    gen->last_ms = 0;
    gen->seq = 0;
    gen->node = node & ORDERNO_MAX_NODE;
}

uint64_t orderno_next(struct orderno_gen *gen, int64_t now_ms)
{
    int64_t ms = now_ms - ORDERNO_EPOCH_MS;
    if (ms < 0)
        ms = 0;
    if (ms > gen->last_ms) {
        gen->last_ms = ms;
        gen->seq = 0;
    } else if (++gen->seq >> ORDERNO_SEQ_BITS) {
        gen->last_ms++;
        gen->seq = 0;
    }
    return ((uint64_t)gen->last_ms << (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS)) |
           ((uint64_t)gen->node << ORDERNO_SEQ_BITS) | gen->seq;
}

int orderno_format(char *buf, size_t len, uint64_t id, int64_t activity_id)
{
    int n = snprintf(buf, len, "%" PRIu64 "-%" PRId64, id, activity_id);
    return (n < 0 || (size_t)n >= len) ? -1 : n;
}

int orderno_parse(const char *s, uint64_t *id, int64_t *activity_id)
{
    const char *dash = NULL;
    for (const char *p = s; *p; p++)
        if (*p == '-') {
            dash = p;
            break;
        }
    if (!dash || dash == s)
        return -1;
    char head[24];
    size_t n = (size_t)(dash - s);
    if (n >= sizeof(head))
        return -1;
    for (size_t i = 0; i < n; i++)
        head[i] = s[i];
    head[n] = '\0';
    int64_t idv;
    if (parse_id(head, &idv) != 0 || parse_id(dash + 1, activity_id) != 0)
        return -1;
    *id = (uint64_t)idv;
    return 0;
}

int64_t orderno_time_ms(uint64_t id)
{
    return (int64_t)(id >> (ORDERNO_NODE_BITS + ORDERNO_SEQ_BITS)) + ORDERNO_EPOCH_MS;
}
