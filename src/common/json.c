#include "common/json.h"

#include "common/parse.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
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

int json_get_int(const cJSON *object, const char *name, int64_t min, int64_t *out, char *err, size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!cJSON_IsNumber(item)) {
        snprintf(err, errlen, "%s: missing or not a number", name);
        return -1;
    }
    double v = item->valuedouble;
    if (v != floor(v) || v < (double)min || v > JSON_MAX_EXACT_INT) {
        snprintf(err, errlen, "%s: not an integer in range", name);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

const char *json_id_text(char *buf, int64_t id)
{
    if (id >= 0 && (double)id <= JSON_MAX_EXACT_INT)
        snprintf(buf, JSON_ID_LEN, "%" PRId64, id);
    else
        snprintf(buf, JSON_ID_LEN, "\"%" PRId64 "\"", id);
    return buf;
}

int json_get_id(const cJSON *object, const char *name, int64_t min, int64_t *out, char *err, size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!cJSON_IsString(item))
        return json_get_int(object, name, min, out, err, errlen);
    /* One spelling per value, as json_id_text writes it: a string only above 2^53 - 1. */
    int64_t v;
    if (parse_id(item->valuestring, &v) != 0 || v < min || (double)v <= JSON_MAX_EXACT_INT) {
        snprintf(err, errlen, "%s: not an id", name);
        return -1;
    }
    *out = v;
    return 0;
}
