#include "ctl/ctllisting.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctldb.h"
#include "ctl/ctlout.h"
#include "common/json.h"
#include "common/parse.h"
#include "common/timeparse.h"

int ctllisting_options(struct ctlrun *ctl, const char *format, const char *limit,
                       enum ctllisting_form *form, int64_t *rows)
{
    *form = ctl->json ? CTLLISTING_JSON : CTLLISTING_TABLE;
    if (format) {
        if (strcmp(format, "table") == 0)
            *form = CTLLISTING_TABLE;
        else if (strcmp(format, "json") == 0)
            *form = CTLLISTING_JSON;
        else if (strcmp(format, "csv") == 0)
            *form = CTLLISTING_CSV;
        else
            return ctlout_usage_error(ctl, "--format '%s': expected table, json or csv", format);
    }
    /* The admin API answers JSON or CSV, never a table. */
    if (ctl->call && format && *form == CTLLISTING_TABLE)
        return ctlout_usage_error(ctl, "format 'table': expected json or csv");
    if (ctl->call && *form == CTLLISTING_TABLE)
        *form = CTLLISTING_JSON;
    *rows = CTLLISTING_LIMIT;
    return limit ? ctlargs_count(ctl, "--limit", limit, 1, CTLLISTING_MAX_LIMIT, rows) : CTLRUN_OK;
}

static int ctllisting_append(struct ctlrun *ctl, struct ctllisting *l, const char *s, size_t n)
{
    if (l->csv_len + n + 1 > l->csv_cap) {
        size_t cap = l->csv_cap ? l->csv_cap * 2 : 4096;
        while (cap < l->csv_len + n + 1)
            cap *= 2;
        char *grown = realloc(l->csv, cap);
        if (!grown)
            return ctlout_fail(ctl, "out of memory");
        l->csv = grown;
        l->csv_cap = cap;
    }
    memcpy(l->csv + l->csv_len, s, n);
    l->csv_len += n;
    l->csv[l->csv_len] = '\0';
    return CTLRUN_OK;
}

/* RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled.
 * A field a spreadsheet would take for a formula (= + - @ first) is quoted with a leading
 * apostrophe inside, so that a name typed by a shop cannot run as one when exported. */
static int ctllisting_csv_field(struct ctlrun *ctl, struct ctllisting *l, const char *v, bool integer)
{
    if (!v)
        return CTLRUN_OK;
    bool formula = !integer && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@');
    if (!formula && !strpbrk(v, ",\"\r\n"))
        return ctllisting_append(ctl, l, v, strlen(v));
    if (ctllisting_append(ctl, l, "\"", 1) != CTLRUN_OK || (formula && ctllisting_append(ctl, l, "'", 1)))
        return CTLRUN_FAIL;
    for (const char *p = v; *p; p++)
        if (ctllisting_append(ctl, l, p, 1) != CTLRUN_OK ||
            (*p == '"' && ctllisting_append(ctl, l, "\"", 1) != CTLRUN_OK))
            return CTLRUN_FAIL;
    return ctllisting_append(ctl, l, "\"", 1);
}

static int ctllisting_csv_line(struct ctlrun *ctl, struct ctllisting *l, const char *const *cells, bool head)
{
    for (size_t i = 0; i < l->ncols; i++) {
        if (i > 0 && ctllisting_append(ctl, l, ",", 1) != CTLRUN_OK)
            return CTLRUN_FAIL;
        if (ctllisting_csv_field(ctl, l, cells[i], !head && l->cols[i].kind == CTLLISTING_INT) != CTLRUN_OK)
            return CTLRUN_FAIL;
    }
    return ctllisting_append(ctl, l, "\r\n", 2);
}

int ctllisting_start(struct ctlrun *ctl, struct ctllisting *l, const struct ctllisting_col *cols,
                     size_t ncols, enum ctllisting_form form)
{
    memset(l, 0, sizeof(*l));
    if (ncols > CTLLISTING_MAX_COLS)
        return ctlout_fail(ctl, "a listing of %zu columns: at most %d", ncols, CTLLISTING_MAX_COLS);
    l->cols = cols;
    l->ncols = ncols;
    l->form = form;
    for (size_t i = 0; i < ncols; i++) {
        l->titles[i] = cols[i].title;
        l->align[i] = cols[i].align;
    }
    if (form == CTLLISTING_JSON) {
        l->items = cJSON_CreateArray();
        return l->items ? CTLRUN_OK : ctlout_fail(ctl, "out of memory");
    }
    if (form == CTLLISTING_CSV) {
        const char *heads[CTLLISTING_MAX_COLS];
        for (size_t i = 0; i < ncols; i++)
            heads[i] = cols[i].key;
        return ctllisting_csv_line(ctl, l, heads, true);
    }
    ctltable_init(&l->table, ncols, l->titles, l->align);
    return CTLRUN_OK;
}

int ctllisting_row(struct ctlrun *ctl, struct ctllisting *l, const char *const *cells)
{
    l->rows++;
    if (l->form == CTLLISTING_TABLE)
        return ctltable_row(ctl, &l->table, cells);
    if (l->form == CTLLISTING_CSV)
        return ctllisting_csv_line(ctl, l, cells, false);
    cJSON *item = cJSON_CreateObject();
    if (!item)
        return ctlout_fail(ctl, "out of memory");
    cJSON_AddItemToArray(l->items, item);
    for (size_t i = 0; i < l->ncols; i++) {
        int64_t v;
        cJSON *value;
        if (!cells[i])
            cJSON_AddNullToObject(item, l->cols[i].key);
        else if (l->cols[i].kind == CTLLISTING_INT && parse_id(cells[i], &v) == 0)
            json_add_int(item, l->cols[i].key, v);
        else if (l->cols[i].kind == CTLLISTING_INT && strcmp(cells[i], "0") == 0)
            json_add_int(item, l->cols[i].key, 0);
        else if (l->cols[i].kind == CTLLISTING_ARRAY && (value = cJSON_Parse(cells[i])) != NULL)
            cJSON_AddItemToObject(item, l->cols[i].key, value);
        else
            cJSON_AddStringToObject(item, l->cols[i].key, cells[i]);
    }
    return CTLRUN_OK;
}

void ctllisting_free(struct ctllisting *l)
{
    if (l->form == CTLLISTING_TABLE)
        ctltable_free(&l->table);
    cJSON_Delete(l->items);
    free(l->csv);
    memset(l, 0, sizeof(*l));
}

int ctllisting_finish(struct ctlrun *ctl, struct ctllisting *l, int64_t next, const char *cursor_option)
{
    int rc = CTLRUN_OK;
    if (l->form == CTLLISTING_TABLE) {
        ctltable_print(&l->table, stdout);
        if (next > 0)
            printf("more: %s %" PRId64 "\n", cursor_option, next);
    } else if (l->form == CTLLISTING_CSV && !ctl->call) {
        fwrite(l->csv ? l->csv : "", 1, l->csv_len, stdout);
    } else {
        cJSON *obj = cJSON_CreateObject();
        if (l->form == CTLLISTING_CSV) {
            cJSON_AddStringToObject(obj, "csv", l->csv ? l->csv : "");
        } else {
            cJSON_AddItemToObject(obj, "items", l->items);
            l->items = NULL;
        }
        if (next > 0)
            json_add_int(obj, "next", next);
        else
            cJSON_AddNullToObject(obj, "next");
        rc = ctlout_json(ctl, obj);
    }
    ctllisting_free(l);
    return rc;
}

int ctllisting_query(struct ctlrun *ctl, const struct ctllisting_col *cols, size_t ncols,
                     enum ctllisting_form form, int64_t rows, const char *sql, const char *cursor_option)
{
    MYSQL_RES *res = ctldb_query(ctl, sql);
    if (!res)
        return CTLRUN_FAIL;
    struct ctllisting l;
    int rc = ctllisting_start(ctl, &l, cols, ncols, form);
    int64_t next = 0, last = 0;
    MYSQL_ROW r;
    while (rc == CTLRUN_OK && (r = mysql_fetch_row(res))) {
        if ((int64_t)l.rows == rows) {
            next = last;
            break;
        }
        last = r[0] ? strtoll(r[0], NULL, 10) : 0;
        const char *cells[CTLLISTING_MAX_COLS];
        char times[CTLLISTING_MAX_COLS][40];
        for (size_t i = 0; i < ncols; i++) {
            cells[i] = r[i];
            if (r[i] && cols[i].kind == CTLLISTING_TIME) {
                timeparse_format(strtoll(r[i], NULL, 10), times[i], sizeof(times[i]));
                cells[i] = times[i];
            }
        }
        rc = ctllisting_row(ctl, &l, cells);
    }
    mysql_free_result(res);
    if (rc != CTLRUN_OK) {
        ctllisting_free(&l);
        return rc;
    }
    return ctllisting_finish(ctl, &l, next, cursor_option);
}
