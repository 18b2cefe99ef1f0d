#include "ctl/ctlaudit.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlargs.h"
#include "ctl/ctldb.h"
#include "ctl/ctllisting.h"
#include "ctl/ctlout.h"
#include "store/sqltime.h"

bool ctlaudit_writes(const char *command)
{
    static const char *const reads[] = { "show", "list", "find", "verify", "stats", "get", "check" };
    const char *last = strrchr(command, ' ');
    last = last ? last + 1 : command;
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
        if (strcmp(last, reads[i]) == 0)
            return false;
    return true;
}

void ctlaudit_record(struct ctlrun *ctl, const char *command, int argc, char **argv, int exit_status)
{
    if (!ctlaudit_writes(command))
        return;
    cJSON *args = cJSON_CreateArray();
    for (int i = 0; args && i < argc; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(argv[i]));
    char *args_text = args ? cJSON_PrintUnformatted(args) : NULL;
    cJSON_Delete(args);
    char origin[512];
    ctlrun_actor(ctl, origin, sizeof(origin));
    char *q_command = ctldb_quote(ctl, command);
    char *q_args = args_text ? ctldb_quote(ctl, args_text) : NULL;
    char *q_origin = ctldb_quote(ctl, origin);
    cJSON_free(args_text);
    int rc = CTLRUN_FAIL;
    if (q_command && q_args && q_origin) {
        size_t len = strlen(q_command) + strlen(q_args) + strlen(q_origin) + 128;
        char *sql = malloc(len);
        if (sql) {
            snprintf(sql, len, "INSERT INTO admin_audit (command, args, origin, exit_status) "
                     "VALUES (%s, %s, %s, %d)", q_command, q_args, q_origin, exit_status);
            rc = ctldb_exec(ctl, sql);
            free(sql);
        }
    }
    free(q_command);
    free(q_args);
    free(q_origin);
    if (rc != CTLRUN_OK)
        ctlout_note(ctl, "%s: not recorded in admin_audit", command);
}

static const struct ctllisting_col ctlaudit_cols[] = {
    { "id", "id", 'r', CTLLISTING_INT },
    { "at", "at", 'l', CTLLISTING_TIME },
    { "command", "command", 'l', CTLLISTING_TEXT },
    { "args", "arguments", 'l', CTLLISTING_ARRAY },
    { "origin", "from", 'l', CTLLISTING_TEXT },
    { "exitStatus", "exit", 'r', CTLLISTING_INT },
};

int ctlaudit_list_run(struct ctlrun *ctl, int argc, char **argv)
{
    enum { BEFORE, LIMIT, FORMAT, NOPTS };
    struct ctlargs_opt opts[NOPTS] = {
        [BEFORE] = { "--before", false, NULL },
        [LIMIT] = { "--limit", false, NULL },
        [FORMAT] = { "--format", false, NULL },
    };
    int rc = ctlargs_parse(ctl, argc, argv, opts, NOPTS, NULL, 0, 0, NULL);
    if (rc != CTLRUN_OK)
        return rc;
    enum ctllisting_form form;
    int64_t rows, before = 0;
    if ((rc = ctllisting_options(ctl, opts[FORMAT].value, opts[LIMIT].value, &form, &rows)) != CTLRUN_OK ||
        (opts[BEFORE].value && (rc = ctlargs_id(ctl, "--before", opts[BEFORE].value, &before)) != CTLRUN_OK))
        return rc;
    char where[64] = "";
    if (before)
        snprintf(where, sizeof(where), " WHERE id < %" PRId64, before);
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT id, " SQLTIME_MS("at") ", command, args, origin, exit_status "
             "FROM admin_audit%s ORDER BY id DESC LIMIT %" PRId64, where, rows + 1);
    return ctllisting_query(ctl, ctlaudit_cols, sizeof(ctlaudit_cols) / sizeof(ctlaudit_cols[0]), form, rows,
                            sql, "--before");
}
