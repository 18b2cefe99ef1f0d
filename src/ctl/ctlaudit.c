#include "ctl/ctlaudit.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctldb.h"
#include "ctl/ctlout.h"

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
