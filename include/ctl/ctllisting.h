#ifndef SK_CTLLISTING_H
#define SK_CTLLISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/ctlrun.h"
#include "ctl/ctltable.h"

struct cJSON;

/* One page of a listing (order list, coupon list, activity list, audit list) in the form
 * asked: an aligned table for a terminal, `--json` ({"items": [...], "next": cursor or
 * null}), or `--format csv` (RFC 4180, a header line, every field of the JSON items; the
 * admin API sends it as text/csv). Pages are cut by a cursor, the last row's id, never by
 * an offset: no row comes twice however many arrive meanwhile (one committed late with an
 * id below the cursor comes on no later page: docs/administration.md). */

#define CTLLISTING_LIMIT 100       /* rows a page, unless --limit */
#define CTLLISTING_MAX_LIMIT 1000
#define CTLLISTING_MAX_COLS 16

enum ctllisting_form { CTLLISTING_TABLE, CTLLISTING_JSON, CTLLISTING_CSV };

enum ctllisting_kind {
    CTLLISTING_TEXT,
    CTLLISTING_INT,    /* a JSON number */
    CTLLISTING_TIME,   /* epoch ms from the query, shown as ISO-8601 */
    CTLLISTING_ARRAY,  /* a JSON array from the query: itself in JSON, its text elsewhere */
};

/* A column: its JSON key and CSV header, its table title and alignment, its kind (a NULL
 * cell is JSON null whatever the kind). */
struct ctllisting_col {
    const char *key;
    const char *title;
    char align;
    enum ctllisting_kind kind;
};

struct ctllisting {
    const struct ctllisting_col *cols;
    size_t ncols;
    enum ctllisting_form form;
    struct ctltable table;
    const char *titles[CTLLISTING_MAX_COLS];
    char align[CTLLISTING_MAX_COLS + 1];
    struct cJSON *items;
    char *csv;
    size_t csv_len, csv_cap;
    size_t rows;
};

/* The common options' values: --format (table|json|csv; --json means json) and --limit.
 * CTLRUN_OK, or a usage error. */
int ctllisting_options(struct ctlrun *ctl, const char *format, const char *limit,
                       enum ctllisting_form *form, int64_t *rows);
int ctllisting_start(struct ctlrun *ctl, struct ctllisting *l, const struct ctllisting_col *cols,
                     size_t ncols, enum ctllisting_form form);
/* One row of ncols cells (NULL: none). */
int ctllisting_row(struct ctlrun *ctl, struct ctllisting *l, const char *const *cells);
/* Prints (or hands to the admin API) the page; next is the cursor of the page after it,
 * or 0 when this page is the last. Frees l. */
int ctllisting_finish(struct ctlrun *ctl, struct ctllisting *l, int64_t next, const char *cursor_option);
void ctllisting_free(struct ctllisting *l);
/* A whole page from sql, whose columns are cols' in order, the first the row's id, and
 * which asks for one row more than the page (LIMIT rows + 1: whether a page follows). The
 * cursor of the next page is the last row's id, given back as cursor_option. */
int ctllisting_query(struct ctlrun *ctl, const struct ctllisting_col *cols, size_t ncols,
                     enum ctllisting_form form, int64_t rows, const char *sql, const char *cursor_option);

#endif
