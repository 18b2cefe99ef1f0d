#ifndef SK_EXECUTESTAGE_H
#define SK_EXECUTESTAGE_H

#include <stdbool.h>

/* Where one POST /seckill/execute stands after its local checks, and the moves between
 * those stages: execute.c changes a request's stage only through executestage_move, which
 * refuses a move the protocol does not have. Pure. */

enum executestage {
    EXECUTESTAGE_RESERVING,    /* queued for, or waiting on, execute.lua */
    EXECUTESTAGE_DELIVERING,   /* reserved; the order is with Kafka, its client waits */
    EXECUTESTAGE_PROMISED,     /* told 200 before Kafka's ack (reply-after-ack off) */
    EXECUTESTAGE_ROLLING_BACK, /* release.lua 'order' sent; its verdict answers */
    EXECUTESTAGE_FORGETTING,   /* the script's verdict was lost: release.lua 'forget' sent */
    EXECUTESTAGE_REDELIVERING, /* promised, its delivery failed: produced again */
    EXECUTESTAGE_COUNT
};

const char *executestage_name(enum executestage stage);
/* Whether a request may go from `from` to `to`. */
bool executestage_may_move(enum executestage from, enum executestage to);
/* Moves *stage to `to` when it may; returns false (and leaves it) when not. */
bool executestage_move(enum executestage *stage, enum executestage to);

#endif
