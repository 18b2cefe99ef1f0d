#ifndef SK_EXECUTEVERDICT_H
#define SK_EXECUTEVERDICT_H

#include <stdbool.h>

#include "gateway/reply.h"

/* What execute.lua's verdict (the first element of its answer for one request) means for
 * the request: one table, pure, so that the hot path's decisions are tested without Redis.
 * execute.c acts on it with a switch. */

enum executeverdict_action {
    EXECUTEVERDICT_RESERVED,   /* a unit is reserved: produce the order */
    EXECUTEVERDICT_REFUSE,     /* answer the refusal `status` (message: its own, or `message`) */
    EXECUTEVERDICT_SOLD_OUT,   /* this bucket is empty: sold out, or stock to move here first
                                * (only the gateway's sale cache can tell) */
    EXECUTEVERDICT_SETUP,      /* the sale has buckets this gateway's cache does not know yet:
                                * refresh it, the client retries */
    EXECUTEVERDICT_LOST,       /* a late run of a call whose verdict was lost: nobody reads it */
    EXECUTEVERDICT_UNKNOWN,    /* no verdict execute.lua gives */
};

struct executeverdict {
    enum executeverdict_action action;
    enum reply_status status;
    const char *message;       /* NULL: the status's own */
    bool holder;               /* the element after the verdict is the order the user holds */
    bool retry_after;          /* the element after the verdict is Retry-After, in seconds */
    bool cancelled;            /* the sale is cancelled: the cache is told at once */
};

/* The meaning of verdict (NULL: no verdict at all, which is UNKNOWN). */
struct executeverdict executeverdict_of(const char *verdict);

#endif
