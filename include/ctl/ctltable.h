#ifndef SK_CTLTABLE_H
#define SK_CTLTABLE_H

#include <stddef.h>
#include <stdio.h>

#include "ctl/ctlrun.h"

/* An aligned text table for listings (stats, coupon show): the cells are copied; widths
 * are terminal columns (ctlutf8_width). Owned by the caller; ctltable_free releases the
 * cells. */
struct ctltable {
    size_t ncols;
    const char *const *heads;   /* ncols column titles */
    const char *align;          /* one letter a column: 'l' left, 'r' right */
    char **cells;               /* nrows * ncols */
    size_t nrows, cap;
};

void ctltable_init(struct ctltable *t, size_t ncols, const char *const *heads, const char *align);
/* Adds one row of ncols cells (NULL prints as "-"). CTLRUN_OK, or CTLRUN_FAIL after printing. */
int ctltable_row(struct ctlrun *ctl, struct ctltable *t, const char *const *cells);
void ctltable_print(const struct ctltable *t, FILE *out);
void ctltable_free(struct ctltable *t);

#endif
