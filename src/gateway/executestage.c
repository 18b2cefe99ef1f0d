#include "gateway/executestage.h"

static const char *const names[EXECUTESTAGE_COUNT] = {
    [EXECUTESTAGE_RESERVING] = "reserving",
    [EXECUTESTAGE_DELIVERING] = "delivering",
    [EXECUTESTAGE_PROMISED] = "promised",
    [EXECUTESTAGE_ROLLING_BACK] = "rolling back",
    [EXECUTESTAGE_FORGETTING] = "forgetting",
    [EXECUTESTAGE_REDELIVERING] = "redelivering",
};

/* allowed[from][to]. A reservation is delivered or rolled back, and one whose verdict was
 * lost is forgotten; a delivery that failed is rolled back, or, told 200 already
 * (reply-after-ack off: promised), delivered again until Kafka has it, never rolled back.
 * A rollback and a forgetting are final. */
static const bool allowed[EXECUTESTAGE_COUNT][EXECUTESTAGE_COUNT] = {
    [EXECUTESTAGE_RESERVING] = {
        [EXECUTESTAGE_DELIVERING] = true,
        [EXECUTESTAGE_ROLLING_BACK] = true,  /* reserved after its client was answered */
        [EXECUTESTAGE_FORGETTING] = true,
    },
    [EXECUTESTAGE_DELIVERING] = {
        [EXECUTESTAGE_PROMISED] = true,
        [EXECUTESTAGE_ROLLING_BACK] = true,
    },
    [EXECUTESTAGE_PROMISED] = {
        [EXECUTESTAGE_REDELIVERING] = true,
    },
    [EXECUTESTAGE_ROLLING_BACK] = {
        /* the deadline's release answered, then the delivery failed: released again */
        [EXECUTESTAGE_ROLLING_BACK] = true,
    },
    [EXECUTESTAGE_REDELIVERING] = {
        [EXECUTESTAGE_REDELIVERING] = true,  /* failed again: once more */
    },
};

const char *executestage_name(enum executestage stage)
{
    return (unsigned)stage < EXECUTESTAGE_COUNT ? names[stage] : "?";
}

bool executestage_may_move(enum executestage from, enum executestage to)
{
    return (unsigned)from < EXECUTESTAGE_COUNT && (unsigned)to < EXECUTESTAGE_COUNT && allowed[from][to];
}

bool executestage_move(enum executestage *stage, enum executestage to)
{
    if (!executestage_may_move(*stage, to))
        return false;
    *stage = to;
    return true;
}
