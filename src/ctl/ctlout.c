#include "ctl/ctlout.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>

static void ctlout_vmessage(struct ctlrun *ctl, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof(line), fmt, ap);
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

void ctlout_note(struct ctlrun *ctl, const char *fmt, ...)
{
    (void)ctl;
    va_list ap;
    va_start(ap, fmt);
    ctlout_vmessage(NULL, fmt, ap);
    va_end(ap);
}

int ctlout_json(struct ctlrun *ctl, void *cjson_obj)
{
    cJSON *obj = cjson_obj;
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    if (!text)
        return ctlout_fail(ctl, "out of memory building JSON");
    puts(text);
    cJSON_free(text);
    return CTLRUN_OK;
}
