#ifndef SK_JSON_H
#define SK_JSON_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* Strict JSON input for untrusted bytes (HTTP bodies, Kafka messages): exactly one JSON
 * object and nothing but white space after it. cJSON alone stops after the first value
 * and would take "{...}junk". Returns the object (caller frees with cJSON_Delete) or NULL
 * with a reason in err. */
struct cJSON *json_parse_object(const char *data, size_t len, char *err, size_t errlen);

/* Adds an integer exactly: cJSON prints numbers with 15 significant digits whenever its
 * tolerant comparison calls that close enough, which changes 16-digit integers. */
struct cJSON *json_add_int(struct cJSON *object, const char *name, int64_t value);

/* Reads an integer member in [min, 2^53 - 1]: a fraction, a string, a larger number or
 * a missing member is an error naming the member. */
int json_get_int(const struct cJSON *object, const char *name, int64_t min, int64_t *out, char *err,
                 size_t errlen);

/* Numbers are doubles in JSON: integers above 2^53 - 1 do not survive the trip exactly
 * (2^53 + 1 reads as 2^53), so anything larger is refused as an id or an amount. */
#define JSON_MAX_EXACT_INT 9007199254740991.0

/* Ids up to 2^63 - 1 (Java's long, http.long-ids) in the project's own messages and
 * records: a number while it is exact in JSON (every id below 2^53, so the messages of a
 * project without long ids read as before), a string of digits above. json_id_text writes
 * one into buf (at least JSON_ID_LEN bytes) and returns it; json_get_id reads either form
 * into [min, 2^63 - 1], and refuses the other spelling of a value ("7" for 7). */
#define JSON_ID_LEN 24
const char *json_id_text(char *buf, int64_t id);
int json_get_id(const struct cJSON *object, const char *name, int64_t min, int64_t *out, char *err,
                size_t errlen);

#endif
