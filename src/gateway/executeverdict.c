#include "gateway/executeverdict.h"

#include <stddef.h>
#include <string.h>

static const struct {
    const char *verdict;
    struct executeverdict meaning;
} verdicts[] = {
    { "OK", { EXECUTEVERDICT_RESERVED, REPLY_UNAVAILABLE, NULL, false, false, false } },
    { "DUPLICATE", { EXECUTEVERDICT_REFUSE, REPLY_DUPLICATE, NULL, true, false, false } },
    { "LIMIT_REACHED", { EXECUTEVERDICT_REFUSE, REPLY_DUPLICATE,
                         "you hold as many orders of this activity as one user may", true, false, false } },
    { "OUT_OF_STOCK", { EXECUTEVERDICT_SOLD_OUT, REPLY_OUT_OF_STOCK, NULL, false, false, false } },
    { "WRONG_BUCKET", { EXECUTEVERDICT_SETUP, REPLY_UNAVAILABLE, "the sale is being set up, please retry",
                        false, false, false } },
    { "NOT_STARTED", { EXECUTEVERDICT_REFUSE, REPLY_NOT_STARTED, NULL, false, false, false } },
    { "ENDED", { EXECUTEVERDICT_REFUSE, REPLY_ENDED, NULL, false, false, false } },
    { "CANCELLED", { EXECUTEVERDICT_REFUSE, REPLY_CANCELLED, NULL, false, false, true } },
    { "INACTIVE", { EXECUTEVERDICT_REFUSE, REPLY_INACTIVE, NULL, false, false, false } },
    { "RATE_LIMITED", { EXECUTEVERDICT_REFUSE, REPLY_RATE_LIMITED, NULL, false, true, false } },
    { "BLOCKED", { EXECUTEVERDICT_REFUSE, REPLY_BLOCKED, NULL, false, true, false } },
    { "TOKEN_USED", { EXECUTEVERDICT_REFUSE, REPLY_FORBIDDEN, "purchase token already used", false, false,
                      false } },
    { "GONE", { EXECUTEVERDICT_LOST, REPLY_UNAVAILABLE, NULL, false, false, false } },
    { "NOT_FOUND", { EXECUTEVERDICT_REFUSE, REPLY_NOT_FOUND, "no such activity", false, false, false } },
};

struct executeverdict executeverdict_of(const char *verdict)
{
    if (verdict)
        for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++)
            if (strcmp(verdicts[i].verdict, verdict) == 0)
                return verdicts[i].meaning;
    return (struct executeverdict){ EXECUTEVERDICT_UNKNOWN, REPLY_UNAVAILABLE,
                                    "unexpected stock service answer", false, false, false };
}
