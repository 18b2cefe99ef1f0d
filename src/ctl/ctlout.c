#include "ctl/ctlout.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>

#include "ctl/ctlcall.h"

static void ctlout_vmessage(struct ctlrun *ctl, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof(line), fmt, ap);
    if (ctl && ctl->call) {
        /* The first error is the cause; what follows it is its consequences. */
        if (!ctl->call->error[0])
            snprintf(ctl->call->error, sizeof(ctl->call->error), "%s", line);
        return;
    }
    if (ctl && ctl->command)
        fprintf(stderr, "seckillctl: %s: %s\n", ctl->command, line);
    else
        fprintf(stderr, "seckillctl: %s\n", line);
}

int ctlout_usage_error(struct ctlrun *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctlout_vmessage(ctl, fmt, ap);
    va_end(ap);
    return CTLRUN_USAGE;
}

int ctlout_fail(struct ctlrun *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctlout_vmessage(ctl, fmt, ap);
    va_end(ap);
    return CTLRUN_FAIL;
}

int ctlout_missing(struct ctlrun *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctlout_vmessage(ctl, fmt, ap);
    va_end(ap);
    if (ctl && ctl->call)
        ctl->call->missing = true;
    return CTLRUN_FAIL;
}

int ctlout_unavailable(struct ctlrun *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctlout_vmessage(ctl, fmt, ap);
    va_end(ap);
    if (ctl && ctl->call)
        ctl->call->unavailable = true;
    return CTLRUN_FAIL;
}

void ctlout_note(struct ctlrun *ctl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (ctl && ctl->call) {
        char line[1024];
        vsnprintf(line, sizeof(line), fmt, ap);
        if (!ctl->call->notes)
            ctl->call->notes = cJSON_CreateArray();
        cJSON_AddItemToArray(ctl->call->notes, cJSON_CreateString(line));
    } else {
        ctlout_vmessage(NULL, fmt, ap);
    }
    va_end(ap);
}

int ctlout_json(struct ctlrun *ctl, void *cjson_obj)
{
    cJSON *obj = cjson_obj;
    if (ctl && ctl->call) {
        if (!obj)
            return ctlout_fail(ctl, "out of memory building JSON");
        cJSON_Delete(ctl->call->result);
        ctl->call->result = obj;
        return CTLRUN_OK;
    }
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    if (!text)
        return ctlout_fail(ctl, "out of memory building JSON");
    puts(text);
    cJSON_free(text);
    return CTLRUN_OK;
}
