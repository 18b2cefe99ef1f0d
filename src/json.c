#include "json.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

struct cJSON *json_parse_object(const char *data, size_t len, char *err, size_t errlen)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, 0);
    if (!root) {
        snprintf(err, errlen, "not JSON");
        return NULL;
    }
    for (; end && end < data + len; end++) {
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
            snprintf(err, errlen, "junk after the JSON object");
            cJSON_Delete(root);
            return NULL;
        }
    }
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "not a JSON object");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

cJSON *json_add_int(cJSON *object, const char *name, int64_t value)
{
    char text[24];
    snprintf(text, sizeof(text), "%" PRId64, value);
    return cJSON_AddRawToObject(object, name, text);
}
