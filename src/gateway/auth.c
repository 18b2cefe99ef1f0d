#include "gateway/auth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "gateway/jwt.h"
#include "common/parse.h"

static int user_param(struct httpparams *params, bool long_ids, int64_t *user_id, bool *present,
                      char *message, size_t len)
{
    char value[HTTPPARAMS_VALUE_LEN];
    int found = httpparams_get(params, "userId", value, sizeof(value), message, len);
    *present = found == 1;
    if (found < 0)
        return -1;
    if (found == 1 && parse_client_id(value, long_ids, user_id) != 0) {
        snprintf(message, len, "userId must be a positive integer below %s", PARSE_ID_BOUND(long_ids));
        return -1;
    }
    return 0;
}

int auth_user(const struct config *cfg, struct evhttp_request *req, struct httpparams *params,
              int64_t *user_id, enum reply_status *status, char *message, size_t message_len)
{
    int64_t from_param = 0;
    bool present = false;
    *status = REPLY_INVALID;
    if (user_param(params, cfg->http_long_ids, &from_param, &present, message, message_len) != 0)
        return -1;
    if (strcmp(cfg->auth_mode, "jwt") != 0) {
        if (!present) {
            snprintf(message, message_len, "userId is required");
            return -1;
        }
        *user_id = from_param;
        return 0;
    }
    *status = REPLY_UNAUTHORIZED;
    const char *header = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!header || strncasecmp(header, "Bearer ", 7) != 0) {
        snprintf(message, message_len, "a bearer token is required");
        return -1;
    }
    const char *token = header + 7;
    while (*token == ' ')
        token++;
    int64_t from_token = 0;
    const struct jwt_rules rules = {
        .secret = cfg->auth_jwt_secret,
        .now_s = clock_wall_ms() / 1000,
        .skew_s = cfg->auth_clock_skew_seconds,
        .require_exp = cfg->auth_require_exp,
        .issuer = cfg->auth_jwt_issuer,
        .audience = cfg->auth_jwt_audience,
    };
    enum jwt_result result = jwt_check(token, &rules, &from_token);
    if (result != JWT_OK) {
        snprintf(message, message_len, "%s", jwt_result_text(result));
        return -1;
    }
    if (present && from_param != from_token) {
        snprintf(message, message_len, "userId does not match the token");
        return -1;
    }
    *user_id = from_token;
    return 0;
}
