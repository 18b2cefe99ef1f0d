#include "ctl/ctltable.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlout.h"
#include "ctl/ctlutf8.h"

void ctltable_init(struct ctltable *t, size_t ncols, const char *const *heads, const char *align)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    t->heads = heads;
    t->align = align;
}

int ctltable_row(struct ctlrun *ctl, struct ctltable *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, ncap * t->ncols * sizeof(*grown));
        if (!grown)
            return ctlout_fail(ctl, "out of memory");
        t->cells = grown;
        t->cap = ncap;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = strdup(cells[i] ? cells[i] : "-");
        if (!row[i]) {
            while (i > 0)
                free(row[--i]);
            return ctlout_fail(ctl, "out of memory");
        }
    }
    t->nrows++;
    return CTLRUN_OK;
}

static void ctltable_cell(FILE *out, const char *s, size_t width, char align, bool last)
{
    size_t pad = width - ctlutf8_width(s);
    if (align == 'r')
        fprintf(out, "%*s%s", (int)pad, "", s);
    else if (last)
        fputs(s, out);
    else
        fprintf(out, "%s%*s", s, (int)pad, "");
}

void ctltable_print(const struct ctltable *t, FILE *out)
{
    size_t width[32] = { 0 };
    size_t ncols = t->ncols < 32 ? t->ncols : 32;
    for (size_t c = 0; c < ncols; c++) {
        width[c] = ctlutf8_width(t->heads[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t w = ctlutf8_width(t->cells[r * t->ncols + c]);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t c = 0; c < ncols; c++) {
        if (c)
            fputs("  ", out);
        ctltable_cell(out, t->heads[c], width[c], t->align[c], c + 1 == ncols);
    }
    fputc('\n', out);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < ncols; c++) {
            if (c)
                fputs("  ", out);
            ctltable_cell(out, t->cells[r * t->ncols + c], width[c], t->align[c], c + 1 == ncols);
        }
        fputc('\n', out);
    }
}

void ctltable_free(struct ctltable *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
