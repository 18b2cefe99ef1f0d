#define _POSIX_C_SOURCE 200809L
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/configline.h"
#include "common/installpath.h"
#include "common/slotmap.h"

/* The checkout's build bakes the absolute path of its schema/lua here. make install
 * compiles this file once more for the installed binaries (Makefile: install), with
 * SK_LUA_DIR and SK_CONF_FILE under PREFIX and SK_INSTALL_*_FROM_BIN, the same places
 * relative to the installed bin/: those find their tree wherever it lies (DESTDIR staging
 * too) and never read a checkout. */
#ifndef SK_LUA_DIR
#define SK_LUA_DIR "schema/lua"
#endif

enum config_type { CONFIG_STRING, CONFIG_INT, CONFIG_BOOL };

struct config_entry {
    const char *name;
    enum config_type type;
    size_t offset;
    const char *default_value;
    int64_t min;          /* CONFIG_INT only */
    int64_t max;
    const char *choices;  /* CONFIG_STRING only: "a|b|c", NULL for free text */
};

#define STR(name, field, def) { name, CONFIG_STRING, offsetof(struct config, field), def, 0, 0, NULL }
#define CHOICE(name, field, def, choices) \
    { name, CONFIG_STRING, offsetof(struct config, field), def, 0, 0, choices }
#define INT(name, field, def, lo, hi) { name, CONFIG_INT, offsetof(struct config, field), def, lo, hi, NULL }
#define BOOL(name, field, def) { name, CONFIG_BOOL, offsetof(struct config, field), def, 0, 0, NULL }

static const struct config_entry config_table[] = {
    STR("http.host", http_host, "127.0.0.1"),
    INT("http.port", http_port, "8080", 1, 65535),
    INT("http.backlog", http_backlog, "4096", 16, 65535),
    INT("http.request-timeout-ms", http_request_timeout_ms, "10000", 10, 600000),
    INT("http.idle-timeout", http_idle_timeout, "60", 1, 86400),
    INT("http.max-body-size", http_max_body_size, "8192", 64, 16777216),
    INT("http.max-header-size", http_max_header_size, "8192", 256, 1048576),
    BOOL("http.trust-forwarded-for", http_trust_forwarded_for, "false"),
    BOOL("http.long-ids", http_long_ids, "false"),
    INT("http.max-connections", http_max_connections, "20000", 1, 1000000),
    INT("http.max-waiting", http_max_waiting, "10000", 0, 1000000),
    INT("http.max-waiting-per-client", http_max_waiting_per_client, "100", 1, 1000000),
    BOOL("http.reuse-port", http_reuse_port, "false"),
    INT("http.header-timeout-ms", http_header_timeout_ms, "10000", 100, 3600000),
    STR("http.metrics-port", http_metrics_port, "main"),
    STR("http.metrics-host", http_metrics_host, "127.0.0.1"),
    CHOICE("http.refusal-status", http_refusal_status, "4xx", "4xx|200"),
    CHOICE("http.unavailable-status", http_unavailable_status, "503", "503|200"),
    CHOICE("http.language", http_language, "en", "en|zh"),
    CHOICE("http.stock-answers", http_stock_answers, "seckill", "seckill|spring"),

    CHOICE("auth.mode", auth_mode, "none", "none|jwt"),
    STR("auth.jwt-secret", auth_jwt_secret, ""),
    INT("auth.clock-skew-seconds", auth_clock_skew_seconds, "30", 0, 3600),
    BOOL("auth.require-exp", auth_require_exp, "true"),
    STR("auth.jwt-issuer", auth_jwt_issuer, ""),
    STR("auth.jwt-audience", auth_jwt_audience, ""),

    STR("redis.host", redis_host, "127.0.0.1"),
    INT("redis.port", redis_port, "16379", 1, 65535),
    INT("redis.timeout-ms", redis_timeout_ms, "1000", 1, 600000),
    INT("redis.reconnect-min-ms", redis_reconnect_min_ms, "100", 1, 600000),
    INT("redis.reconnect-max-ms", redis_reconnect_max_ms, "5000", 1, 600000),
    CHOICE("redis.appendfsync", redis_appendfsync, "everysec", "always|everysec|no"),
    STR("redis.nodes", redis_nodes, ""),
    INT("redis.cluster-refresh-ms", redis_cluster_refresh_ms, "5000", 100, 3600000),
    INT("redis.cluster-node-timeout-ms", redis_cluster_node_timeout_ms, "2000", 100, 600000),
    INT("redis.cluster-replicas", redis_cluster_replicas, "2", 0, 5),
    INT("redis.wait-replicas", redis_wait_replicas, "0", 0, 16),
    INT("redis.wait-timeout-ms", redis_wait_timeout_ms, "250", 1, 300000),

    STR("kafka.brokers", kafka_brokers, "127.0.0.1:19092"),
    STR("kafka.topic", kafka_topic, "seckill.orders"),
    STR("kafka.dead-letter-topic", kafka_dead_letter_topic, "seckill.orders.dlq"),
    STR("kafka.outcome-topic", kafka_outcome_topic, "seckill.outcomes"),
    INT("kafka.topic-partitions", kafka_topic_partitions, "6", 1, 10000),

    STR("mysql.host", mysql_host, "127.0.0.1"),
    INT("mysql.port", mysql_port, "13306", 1, 65535),
    STR("mysql.user", mysql_user, "seckill"),
    STR("mysql.password", mysql_password, "seckill"),
    STR("mysql.database", mysql_database, "seckill"),

    INT("seckill.rate-limit.permits-per-second", permits_per_second, "100", 1, 100000000),
    INT("seckill.rate-limit.burst-capacity", burst_capacity, "200", 1, 100000000),
    INT("seckill.rate-limit.per-ip-local-permits-per-second", per_ip_local_permits_per_second, "10", 0,
        100000000),
    INT("seckill.rate-limit.per-ip-local-burst", per_ip_local_burst, "20", 1, 100000000),
    INT("seckill.rate-limit.per-ip-local-table-size", per_ip_local_table_size, "65536", 64, 16777216),
    STR("seckill.stock.prefix", stock_prefix, "seckill:stock"),
    STR("seckill.user.prefix", user_prefix, "seckill:user"),
    BOOL("seckill.enable-rate-limit", enable_rate_limit, "true"),
    INT("seckill.max-requests-per-user", max_requests_per_user, "10", 1, 100000000),
    INT("seckill.max-requests-per-ip", max_requests_per_ip, "100", 1, 100000000),
    BOOL("seckill.enable-pre-reduce", enable_pre_reduce, "true"),
    INT("seckill.pre-reduce-timeout", pre_reduce_timeout, "30", 1, 86400),
    BOOL("seckill.enable-stock-rollback", enable_stock_rollback, "true"),
    INT("seckill.max-seckill-duration", max_seckill_duration, "3600", 1, 31536000),
    BOOL("seckill.enable-anti-brush", enable_anti_brush, "true"),
    INT("seckill.anti-brush-threshold", anti_brush_threshold, "5", 1, 100000000),
    INT("seckill.anti-brush.ban-seconds", anti_brush_ban_seconds, "60", 1, 86400),
    BOOL("seckill.order.reply-after-ack", reply_after_ack, "true"),
    INT("seckill.execute-batch-max", execute_batch_max, "64", 1, 512),
    BOOL("seckill.require-token", require_token, "false"),
    STR("seckill.token-secret", token_secret, ""),
    INT("seckill.token-ttl-seconds", token_ttl_seconds, "60", 1, 86400),
    INT("seckill.activity-refresh-ms", activity_refresh_ms, "1000", 10, 600000),
    INT("seckill.reaper-interval-ms", reaper_interval_ms, "1000", 10, 600000),
    INT("seckill.sale-stats-interval-ms", sale_stats_interval_ms, "5000", 0, 600000),
    INT("seckill.refusal-stats-interval-ms", refusal_stats_interval_ms, "1000", 0, 600000),
    INT("seckill.queued-mark-interval-ms", queued_mark_interval_ms, "5", 1, 10000),
    INT("seckill.rebalance-interval-ms", rebalance_interval_ms, "100", 0, 60000),
    INT("seckill.node-lease-ms", node_lease_ms, "10000", 1000, 600000),
    STR("seckill.lua-dir", lua_dir, SK_LUA_DIR),

    INT("consumer.batch-size", consumer_batch_size, "1000", 1, 100000),
    INT("consumer.batch-timeout-ms", consumer_batch_timeout_ms, "50", 1, 600000),
    STR("consumer.group-id", consumer_group_id, "seckill-order-consumer"),
    INT("consumer.retry-min-ms", consumer_retry_min_ms, "100", 1, 600000),
    INT("consumer.retry-max-ms", consumer_retry_max_ms, "5000", 1, 600000),
    INT("consumer.parked-max", consumer_parked_max, "100000", 0, 100000000),
    INT("consumer.lifecycle-interval-ms", consumer_lifecycle_interval_ms, "1000", 0, 3600000),
    INT("consumer.archive-after-ms", consumer_archive_after_ms, "86400000", 0, 31536000000LL),
    INT("consumer.coupon-archive-after-ms", consumer_coupon_archive_after_ms, "604800000", 0, 31536000000LL),
    INT("consumer.outcome-interval-ms", consumer_outcome_interval_ms, "100", 1, 60000),
    STR("consumer.metrics-host", consumer_metrics_host, "127.0.0.1"),
    INT("consumer.metrics-port", consumer_metrics_port, "9101", 0, 65535),

    STR("admin.host", admin_host, "127.0.0.1"),
    STR("admin.advertised-host", admin_advertised_host, ""),
    STR("admin.port", admin_port, "0"),
    STR("admin.token", admin_token, ""),
    INT("admin.workers", admin_workers, "4", 1, 64),

    CHOICE("log.level", log_level, "info", "debug|info|warn|error"),
    CHOICE("log.format", log_format, "text", "text|json"),

    /* Read by the scripts only (scripts/lib.sh, stack.sh): where the services of this
     * config keep their data, so that two stacks on different ports never share a data
     * directory, and how many gateways and consumers `make up` starts. */
    STR("stack.data-dir", stack_data_dir, "var"),
    INT("stack.gateways", stack_gateways, "1", 1, 16),
    INT("stack.consumers", stack_consumers, "1", 1, 16),
};

#define CONFIG_ENTRIES (sizeof(config_table) / sizeof(config_table[0]))

/* Longest line, newline included (the 4 KiB buffer the loader always had, less its NUL). */
#define CONFIG_LINE_MAX 4095

static const char PRODUCER_PREFIX[] = "kafka.producer.";
static const char CONSUMER_PREFIX[] = "kafka.consumer.";

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const struct config_entry *config_find(const char *key)
{
    for (size_t i = 0; i < CONFIG_ENTRIES; i++)
        if (strcmp(config_table[i].name, key) == 0)
            return &config_table[i];
    return NULL;
}

static int parse_int(const char *s, int64_t *out)
{
    if (*s == '\0')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || !(isdigit((unsigned char)*s) || *s == '-'))
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "on") == 0 || strcmp(s, "1") == 0)
        *out = true;
    else if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0 || strcmp(s, "off") == 0 || strcmp(s, "0") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

static int choice_allowed(const char *choices, const char *value)
{
    size_t len = strlen(value);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, value, n) == 0)
            return 1;
        if (!bar)
            break;
        p = bar + 1;
    }
    return 0;
}

static int entry_set(struct config *cfg, const struct config_entry *e, const char *value,
                     char *err, size_t errlen)
{
    char *base = (char *)cfg;
    switch (e->type) {
    case CONFIG_STRING: {
        if (e->choices && !choice_allowed(e->choices, value)) {
            set_err(err, errlen, "%s: '%s' is not one of %s", e->name, value, e->choices);
            return -1;
        }
        char *copy = strdup(value);
        if (!copy) {
            set_err(err, errlen, "%s: out of memory", e->name);
            return -1;
        }
        char **slot = (char **)(base + e->offset);
        free(*slot);
        *slot = copy;
        return 0;
    }
    case CONFIG_INT: {
        int64_t v;
        if (parse_int(value, &v) != 0) {
            set_err(err, errlen, "%s: '%s' is not an integer", e->name, value);
            return -1;
        }
        if (v < e->min || v > e->max) {
            set_err(err, errlen, "%s: %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]",
                    e->name, v, e->min, e->max);
            return -1;
        }
        *(int64_t *)(base + e->offset) = v;
        return 0;
    }
    case CONFIG_BOOL: {
        bool v;
        if (parse_bool(value, &v) != 0) {
            set_err(err, errlen, "%s: '%s' is not a boolean (true/false)", e->name, value);
            return -1;
        }
        *(bool *)(base + e->offset) = v;
        return 0;
    }
    }
    return -1;
}

static int passthrough_set(struct config_pair *pairs, size_t *count, const char *full_key,
                           const char *key, const char *value, char *err, size_t errlen)
{
    if (*key == '\0') {
        set_err(err, errlen, "%s: empty librdkafka property name", full_key);
        return -1;
    }
    for (size_t i = 0; i < *count; i++) {
        if (strcmp(pairs[i].key, key) == 0) {
            char *copy = strdup(value);
            if (!copy)
                return -1;
            free(pairs[i].value);
            pairs[i].value = copy;
            return 0;
        }
    }
    if (*count == CONFIG_MAX_PASSTHROUGH) {
        set_err(err, errlen, "%s: more than %d kafka properties", full_key, CONFIG_MAX_PASSTHROUGH);
        return -1;
    }
    pairs[*count].key = strdup(key);
    pairs[*count].value = strdup(value);
    if (!pairs[*count].key || !pairs[*count].value)
        return -1;
    (*count)++;
    return 0;
}

int config_set(struct config *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    if (strncmp(key, PRODUCER_PREFIX, sizeof(PRODUCER_PREFIX) - 1) == 0)
        return passthrough_set(cfg->kafka_producer, &cfg->kafka_producer_count, key,
                               key + sizeof(PRODUCER_PREFIX) - 1, value, err, errlen);
    if (strncmp(key, CONSUMER_PREFIX, sizeof(CONSUMER_PREFIX) - 1) == 0)
        return passthrough_set(cfg->kafka_consumer, &cfg->kafka_consumer_count, key,
                               key + sizeof(CONSUMER_PREFIX) - 1, value, err, errlen);
    const struct config_entry *e = config_find(key);
    if (!e) {
        set_err(err, errlen, "%s: unknown configuration key", key);
        return -1;
    }
    return entry_set(cfg, e, value, err, errlen);
}

void config_init(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    char err[CONFIG_ERR_LEN];
    for (size_t i = 0; i < CONFIG_ENTRIES; i++) {
        if (entry_set(cfg, &config_table[i], config_table[i].default_value, err, sizeof(err)) != 0) {
            /* A default that fails its own validation is a programming error. */
            fprintf(stderr, "config: bad built-in default: %s\n", err);
            abort();
        }
    }
#ifdef SK_INSTALL_LUA_FROM_BIN
    char lua[4096];
    if (installpath_from_bin(SK_INSTALL_LUA_FROM_BIN, lua, sizeof(lua)) == 0 &&
        entry_set(cfg, config_find("seckill.lua-dir"), lua, err, sizeof(err)) != 0)
        abort();
#endif
}

void config_free(struct config *cfg)
{
    for (size_t i = 0; i < CONFIG_ENTRIES; i++)
        if (config_table[i].type == CONFIG_STRING)
            free(*(char **)((char *)cfg + config_table[i].offset));
    for (size_t i = 0; i < cfg->kafka_producer_count; i++) {
        free(cfg->kafka_producer[i].key);
        free(cfg->kafka_producer[i].value);
    }
    for (size_t i = 0; i < cfg->kafka_consumer_count; i++) {
        free(cfg->kafka_consumer[i].key);
        free(cfg->kafka_consumer[i].value);
    }
    memset(cfg, 0, sizeof(*cfg));
}

int config_load_stream(struct config *cfg, FILE *f, const char *name, char *err, size_t errlen)
{
    /* Read by hand, not with fgets or getline: the byte count shows a NUL inside a line,
     * and a line stops at CONFIG_LINE_MAX bytes however long it is (-c /dev/zero). */
    char line[CONFIG_LINE_MAX + 1];
    int lineno = 0;
    int rc = 0;
    for (;;) {
        size_t len = 0;
        int c = EOF;
        while (len < CONFIG_LINE_MAX && (c = getc(f)) != EOF) {
            line[len++] = (char)c;
            if (c == '\n')
                break;
        }
        if (len == 0)
            break;
        line[len] = '\0';
        lineno++;
        if (len == CONFIG_LINE_MAX && line[len - 1] != '\n' && (c = getc(f)) != EOF) {
            set_err(err, errlen, "%s:%d: line too long", name, lineno);
            rc = -1;
            break;
        }
        if (strlen(line) != len) {
            /* Everything below stops at the NUL: the rest of the line (a setting behind a
             * comment, junk after a value, the end of a secret) would vanish unseen. */
            set_err(err, errlen, "%s:%d: NUL byte in line", name, lineno);
            rc = -1;
            break;
        }
        char *key, *value;
        char inner[CONFIG_ERR_LEN];
        enum configline_kind kind = configline_parse(line, &key, &value, inner, sizeof(inner));
        if (kind == CONFIGLINE_BLANK)
            continue;
        if (kind == CONFIGLINE_ERROR) {
            set_err(err, errlen, "%s:%d: %s", name, lineno, inner);
            rc = -1;
            break;
        }
        if (config_set(cfg, key, value, inner, sizeof(inner)) != 0) {
            set_err(err, errlen, "%s:%d: %s", name, lineno, inner);
            rc = -1;
            break;
        }
    }
    return rc;
}

int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = config_load_stream(cfg, f, path, err, errlen);
    fclose(f);
    return rc;
}

static void env_name(const char *key, char *out, size_t outlen)
{
    size_t n = (size_t)snprintf(out, outlen, "SECKILL_");
    for (const char *p = key; *p && n + 1 < outlen; p++)
        out[n++] = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

int config_apply_env(struct config *cfg, char *const *envp, char *err, size_t errlen)
{
    if (!envp)
        return 0;
    for (size_t i = 0; i < CONFIG_ENTRIES; i++) {
        char name[128];
        env_name(config_table[i].name, name, sizeof(name));
        size_t nlen = strlen(name);
        for (char *const *e = envp; *e; e++) {
            if (strncmp(*e, name, nlen) == 0 && (*e)[nlen] == '=') {
                char inner[CONFIG_ERR_LEN];
                if (entry_set(cfg, &config_table[i], *e + nlen + 1, inner, sizeof(inner)) != 0) {
                    set_err(err, errlen, "environment %s: %s", name, inner);
                    return -1;
                }
            }
        }
    }
    return 0;
}

/* The producer's message timeout as librdkafka will have it: delivery.timeout.ms is an
 * alias of message.timeout.ms, the pairs are applied in their order (the later name
 * wins), and without either the gateway's default applies. */
static int check_message_timeout(const struct config *cfg, char *err, size_t errlen)
{
    const char *name = "kafka.producer.message.timeout.ms";
    const char *value = CONFIG_PRODUCER_MESSAGE_TIMEOUT_MS;
    const char *origin = " (the gateway's default)";
    for (size_t i = 0; i < cfg->kafka_producer_count; i++) {
        const char *key = cfg->kafka_producer[i].key;
        if (strcmp(key, "message.timeout.ms") == 0 || strcmp(key, "delivery.timeout.ms") == 0) {
            name = strcmp(key, "message.timeout.ms") == 0 ? "kafka.producer.message.timeout.ms"
                                                           : "kafka.producer.delivery.timeout.ms";
            value = cfg->kafka_producer[i].value;
            origin = "";
        }
    }
    int64_t ms;
    if (parse_int(value, &ms) != 0 || ms < 1) {
        /* 0 is librdkafka's "never": a reservation would expire under a pending delivery. */
        set_err(err, errlen, "%s: '%s' is not a number of milliseconds of at least 1", name, value);
        return -1;
    }
    /* librdkafka notices a timed-out message up to about a second late (it checks on its
     * reconnect timer), and the rollback after it needs a Redis round trip. A report
     * later than the reservation would answer 200 for an order the reaper expired. */
    int64_t latest = ms + 1000 + cfg->redis_timeout_ms;
    /* The order is produced only once WAIT has answered after its reservation. */
    if (cfg->redis_wait_replicas > 0)
        latest += cfg->redis_wait_timeout_ms;
    if (latest >= cfg->pre_reduce_timeout * 1000) {
        set_err(err, errlen, "%s: %" PRId64 "%s + 1 s + redis.timeout-ms must stay below "
                "seckill.pre-reduce-timeout (%" PRId64 " s)", name, ms, origin, cfg->pre_reduce_timeout);
        return -1;
    }
    if (latest > cfg->http_request_timeout_ms) {
        set_err(err, errlen, "%s: %" PRId64 "%s + 1 s + redis.timeout-ms must not exceed "
                "http.request-timeout-ms (%" PRId64 ")", name, ms, origin, cfg->http_request_timeout_ms);
        return -1;
    }
    return 0;
}

int64_t config_metrics_port(const struct config *cfg)
{
    const char *v = cfg->http_metrics_port;
    if (strcmp(v, "main") == 0)
        return CONFIG_METRICS_MAIN;
    int64_t port;
    if (strcmp(v, "off") == 0 || parse_int(v, &port) != 0 || port < 1 || port > 65535)
        return CONFIG_METRICS_OFF;
    return port;
}

int64_t config_admin_port(const struct config *cfg)
{
    const char *v = cfg->admin_port;
    int64_t port;
    if (v[0] == '\0')
        return 0;
    if (parse_int(v, &port) != 0 || port < 0 || port > 65535)
        return -1;
    return port;
}

/* The admin API's own checks: a port or off, and a token worth its name. */
static int check_admin(const struct config *cfg, char *err, size_t errlen)
{
    int64_t port = config_admin_port(cfg);
    if (port < 0) {
        set_err(err, errlen, "admin.port: '%s' is not 0 (off), empty (off) or a port (1-65535)",
                cfg->admin_port);
        return -1;
    }
    if (port == 0)
        return 0;
    if (port == cfg->http_port || port == config_metrics_port(cfg)) {
        set_err(err, errlen, "admin.port: must differ from http.port and http.metrics-port");
        return -1;
    }
    if (cfg->admin_host[0] == '\0') {
        set_err(err, errlen, "admin.host: must not be empty");
        return -1;
    }
    /* A bearer token is all that stands between the network and every sale. */
    if (strlen(cfg->admin_token) < CONFIG_ADMIN_TOKEN_MIN) {
        set_err(err, errlen, "admin.token: admin.port needs a token of at least %d characters",
                CONFIG_ADMIN_TOKEN_MIN);
        return -1;
    }
    return 0;
}

int config_validate(const struct config *cfg, char *err, size_t errlen)
{
    if (check_admin(cfg, err, errlen) != 0)
        return -1;
    int64_t metrics_port = config_metrics_port(cfg);
    if (metrics_port == CONFIG_METRICS_OFF && strcmp(cfg->http_metrics_port, "off") != 0) {
        set_err(err, errlen, "http.metrics-port: '%s' is not main, off or a port (1-65535)",
                cfg->http_metrics_port);
        return -1;
    }
    if (metrics_port == cfg->http_port) {
        set_err(err, errlen, "http.metrics-port: must differ from http.port (say main to serve /metrics "
                "there)");
        return -1;
    }
    if (cfg->burst_capacity < 1) {
        set_err(err, errlen, "seckill.rate-limit.burst-capacity: must be at least 1");
        return -1;
    }
    if (cfg->redis_reconnect_max_ms < cfg->redis_reconnect_min_ms) {
        set_err(err, errlen, "redis.reconnect-max-ms: must not be below redis.reconnect-min-ms");
        return -1;
    }
    struct slotmap_addr nodes[SLOTMAP_MAX_NODES];
    char why[160];
    if (slotmap_parse_nodes(cfg->redis_nodes, nodes, SLOTMAP_MAX_NODES, why, sizeof(why)) < 0) {
        set_err(err, errlen, "redis.nodes: %s (expected host:port,host:port,... or empty)", why);
        return -1;
    }
    if (cfg->consumer_retry_max_ms < cfg->consumer_retry_min_ms) {
        set_err(err, errlen, "consumer.retry-max-ms: must not be below consumer.retry-min-ms");
        return -1;
    }
    if (cfg->stack_gateways > 1 && !cfg->http_reuse_port) {
        set_err(err, errlen, "stack.gateways: %" PRId64 " gateways share http.port only with http.reuse-port "
                "= true", cfg->stack_gateways);
        return -1;
    }
    if (cfg->redis_wait_replicas > 0 && cfg->redis_wait_timeout_ms * 2 > cfg->redis_timeout_ms) {
        /* A WAIT holds its connection until it answers, behind the script it follows:
         * past redis.timeout-ms the connection would be dropped with every command on it. */
        set_err(err, errlen, "redis.wait-timeout-ms: %" PRId64 " must be at most half of redis.timeout-ms "
                "(%" PRId64 ")", cfg->redis_wait_timeout_ms, cfg->redis_timeout_ms);
        return -1;
    }
    if (cfg->http_request_timeout_ms <= cfg->redis_timeout_ms) {
        set_err(err, errlen, "http.request-timeout-ms: must exceed redis.timeout-ms");
        return -1;
    }
    if (cfg->pre_reduce_timeout * 1000 <= cfg->http_request_timeout_ms) {
        /* A reservation must outlive the longest request, or the reaper could expire an
         * order whose Kafka delivery report is still on its way. */
        set_err(err, errlen, "seckill.pre-reduce-timeout: must exceed http.request-timeout-ms");
        return -1;
    }
    const struct { const char *name; const char *value; } nonempty[] = {
        { "http.host", cfg->http_host }, { "redis.host", cfg->redis_host },
        { "kafka.brokers", cfg->kafka_brokers }, { "kafka.topic", cfg->kafka_topic },
        { "kafka.dead-letter-topic", cfg->kafka_dead_letter_topic },
        { "mysql.host", cfg->mysql_host }, { "mysql.user", cfg->mysql_user },
        { "mysql.database", cfg->mysql_database }, { "seckill.stock.prefix", cfg->stock_prefix },
        { "seckill.user.prefix", cfg->user_prefix }, { "seckill.lua-dir", cfg->lua_dir },
        { "consumer.group-id", cfg->consumer_group_id },
        { "consumer.metrics-host", cfg->consumer_metrics_host },
        { "stack.data-dir", cfg->stack_data_dir },
        { "http.metrics-host", cfg->http_metrics_host },
    };
    for (size_t i = 0; i < sizeof(nonempty) / sizeof(nonempty[0]); i++) {
        if (nonempty[i].value[0] == '\0') {
            set_err(err, errlen, "%s: must not be empty", nonempty[i].name);
            return -1;
        }
    }
    /* HS256 keys shorter than the hash (256 bits) weaken it; RFC 7518 section 3.2. */
    if (strcmp(cfg->auth_mode, "jwt") == 0 && strlen(cfg->auth_jwt_secret) < 32) {
        set_err(err, errlen, "auth.jwt-secret: auth.mode=jwt needs a secret of at least 32 characters");
        return -1;
    }
    if (cfg->require_token && strlen(cfg->token_secret) < 32) {
        set_err(err, errlen, "seckill.token-secret: seckill.require-token needs a secret of at least 32 "
                "characters");
        return -1;
    }
    if (!cfg->enable_pre_reduce) {
        /* Without the Redis reservation nothing bounds the orders sent to Kafka by the
         * stock; the reservation protocol is the design. */
        set_err(err, errlen, "seckill.enable-pre-reduce: false is not supported");
        return -1;
    }
    if (check_message_timeout(cfg, err, errlen) != 0)
        return -1;
    if (strcmp(cfg->kafka_topic, cfg->kafka_dead_letter_topic) == 0) {
        set_err(err, errlen, "kafka.dead-letter-topic: must differ from kafka.topic");
        return -1;
    }
    if (strcmp(cfg->kafka_outcome_topic, cfg->kafka_topic) == 0 ||
        strcmp(cfg->kafka_outcome_topic, cfg->kafka_dead_letter_topic) == 0) {
        set_err(err, errlen, "kafka.outcome-topic: must differ from kafka.topic and "
                "kafka.dead-letter-topic");
        return -1;
    }
    return 0;
}

static const char *passthrough_get(const struct config_pair *pairs, size_t count, const char *key)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(pairs[i].key, key) == 0)
            return pairs[i].value;
    return NULL;
}

int config_format(const struct config *cfg, const char *key, char *out, size_t outlen)
{
    const char *pv = NULL;
    if (strncmp(key, PRODUCER_PREFIX, sizeof(PRODUCER_PREFIX) - 1) == 0)
        pv = passthrough_get(cfg->kafka_producer, cfg->kafka_producer_count,
                             key + sizeof(PRODUCER_PREFIX) - 1);
    else if (strncmp(key, CONSUMER_PREFIX, sizeof(CONSUMER_PREFIX) - 1) == 0)
        pv = passthrough_get(cfg->kafka_consumer, cfg->kafka_consumer_count,
                             key + sizeof(CONSUMER_PREFIX) - 1);
    if (pv) {
        snprintf(out, outlen, "%s", pv);
        return 0;
    }
    const struct config_entry *e = config_find(key);
    if (!e)
        return -1;
    const char *base = (const char *)cfg;
    switch (e->type) {
    case CONFIG_STRING:
        snprintf(out, outlen, "%s", *(char *const *)(base + e->offset));
        break;
    case CONFIG_INT:
        snprintf(out, outlen, "%" PRId64, *(const int64_t *)(base + e->offset));
        break;
    case CONFIG_BOOL:
        snprintf(out, outlen, "%s", *(const bool *)(base + e->offset) ? "true" : "false");
        break;
    }
    return 0;
}

#define CONFIG_DEFAULT_FILE "conf/seckill.conf"
/* Directories above the binary's own that are searched: build/seckillctl and
 * build/asan/seckillctl both reach the checkout, and so do the unit tests. */
#define CONFIG_SEARCH_UP 4

/* conf/seckill.conf of the working directory, else of the first of the binary's directory
 * and its parents that has one, so seckillctl works from anywhere in a checkout and
 * outside it. NULL when there is none. */
static const char *default_file(char *buf, size_t len)
{
#ifdef SK_INSTALL_CONF_FROM_BIN
    /* Installed: its own etc/seckill/seckill.conf alone, found or not (the error names
     * it), never a conf/ of whatever directory the operator stands in. */
    if (installpath_from_bin(SK_INSTALL_CONF_FROM_BIN, buf, len) == 0)
        return buf;
    return SK_CONF_FILE;
#else
    if (access(CONFIG_DEFAULT_FILE, F_OK) == 0)
        return CONFIG_DEFAULT_FILE;
    char dir[4096];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (n <= 0)
        return NULL;
    dir[n] = '\0';
    for (int up = 0; up <= CONFIG_SEARCH_UP; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            return NULL;
        *slash = '\0';
        if ((size_t)snprintf(buf, len, "%s/" CONFIG_DEFAULT_FILE, dir) < len && access(buf, F_OK) == 0)
            return buf;
        if (dir[0] == '\0')
            return NULL;
    }
    return NULL;
#endif
}

int config_from_args(struct config *cfg, int argc, char **argv, char *const *envp,
                     char *err, size_t errlen)
{
    const char *path = NULL;
    char found[4096];
    int out = 1;
    /* The file is read before any --set, whatever their order on the command line. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                set_err(err, errlen, "%s needs a file name", argv[i]);
                return -1;
            }
            path = argv[++i];
        }
    }
    if (!path) {
        const char *env_path = NULL;
        if (envp)
            for (char *const *e = envp; *e; e++)
                if (strncmp(*e, "SECKILL_CONF=", 13) == 0)
                    env_path = *e + 13;
        path = env_path ? env_path : default_file(found, sizeof(found));
        if (!path) {
            set_err(err, errlen, CONFIG_DEFAULT_FILE ": not in the working directory nor beside the "
                                 "binary or above it; name one with -c FILE or SECKILL_CONF");
            return -1;
        }
    }
    if (config_load_file(cfg, path, err, errlen) != 0)
        return -1;
    if (config_apply_env(cfg, envp, err, errlen) != 0)
        return -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--set") == 0) {
            if (i + 1 >= argc) {
                set_err(err, errlen, "--set needs key=value");
                return -1;
            }
            char *kv = argv[++i];
            char *eq = strchr(kv, '=');
            if (!eq) {
                set_err(err, errlen, "--set %s: expected key=value", kv);
                return -1;
            }
            *eq = '\0';
            int rc = config_set(cfg, kv, eq + 1, err, errlen);
            *eq = '=';
            if (rc != 0)
                return -1;
            continue;
        }
        argv[out++] = argv[i];
    }
    argv[out] = NULL;
    if (config_validate(cfg, err, errlen) != 0)
        return -1;
    return out;
}
