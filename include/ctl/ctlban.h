#ifndef SK_CTLBAN_H
#define SK_CTLBAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"
#include "common/banrecord.h"

/* One manual ban as the ban commands read and write it: its seckill_ban row in MySQL (the
 * record: who set it, when, why, who removed it) and its field of the Redis hash the
 * gateways enforce (banrecord.h). MySQL is written first; Redis follows the commit. Each
 * command of ctlbanadd, ctlbanremove, ctlbanlist and ctlbansync lives in its own module. */

/* VARCHAR(128) of utf8mb4: at most 4 bytes a character. */
#define CTLBAN_TEXT_BYTES (128 * 4 + 1)

struct ctlban_row {
    int64_t id;
    struct banrecord rec;       /* kind, user or network, activity (0: every sale), window */
    char reason[CTLBAN_TEXT_BYTES];
    char created_by[CTLBAN_TEXT_BYTES];
    int64_t created_ms;
    bool removed;
    int64_t removed_ms;
    char removed_by[CTLBAN_TEXT_BYTES];
};


/* The row of ban id; CTLRUN_OK, or CTLRUN_FAIL after printing (a missing one as missing). */
int ctlban_load(struct ctlrun *ctl, int64_t id, struct ctlban_row *row);
/* The rows of `SELECT ... FROM seckill_ban <tail>` (tail: WHERE, ORDER BY, LIMIT); *rows is
 * the caller's to free. */
int ctlban_select(struct ctlrun *ctl, const char *tail, struct ctlban_row **rows, size_t *n);

/* active, expired, removed, or scheduled (it starts later). */
const char *ctlban_state(const struct ctlban_row *row, int64_t now_ms);
/* "user 1001", "ip 203.0.113.0/24". */
void ctlban_subject(const struct ctlban_row *row, char *buf, size_t len);
/* The row as --json prints it (a cJSON object, NULL out of memory). */
void *ctlban_json(const struct ctlban_row *row, int64_t now_ms);

/* Redis, after the MySQL commit, in one MULTI on the hash: each of the n rows written (its
 * record), each of the ndrop ids removed, a new version (the gateways read the hash again).
 * replace: the hash is emptied first (ban sync). */
int ctlban_publish(struct ctlrun *ctl, const struct ctlban_row *rows, size_t n, const int64_t *drop,
                   size_t ndrop, bool replace);
/* Removes from Redis the records of bans ended by now_ms, a bounded number of fields read
 * (the hash stays small: every gateway reads it whole when it changes). The fields removed,
 * or -1 after a note (a prune that fails changes nothing the gateways do). */
long ctlban_prune(struct ctlrun *ctl, int64_t now_ms);

#endif
