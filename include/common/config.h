#ifndef SK_CONFIG_H
#define SK_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every setting of every binary. Loaded in this order, later wins:
 * built-in defaults, the file (conf/seckill.conf or -c FILE), SECKILL_* environment
 * variables, --set key=value. Unknown keys and bad values are errors that name the key. */

#define CONFIG_ERR_LEN 256
#define CONFIG_MAX_PASSTHROUGH 64
/* The gateway's producer default (kafkaprod.c) when neither kafka.producer.message.timeout.ms
 * nor its alias delivery.timeout.ms is set; config_validate checks it like a set value. */
#define CONFIG_PRODUCER_MESSAGE_TIMEOUT_MS "5000"

struct config_pair {
    char *key;   /* without the "kafka.producer." / "kafka.consumer." prefix */
    char *value;
};

struct config {
    char *http_host;
    int64_t http_port;
    int64_t http_backlog;
    int64_t http_request_timeout_ms;
    int64_t http_idle_timeout;
    int64_t http_max_body_size;
    int64_t http_max_header_size;
    bool http_trust_forwarded_for;
    bool http_long_ids;        /* user and activity ids up to 2^63 - 1 (Java's long), not 2^53 - 1 */
    int64_t http_max_connections;
    int64_t http_max_waiting;    /* long-poll requests held at once; 0: wait is ignored */
    int64_t http_max_waiting_per_client;  /* of them, from one client address */
    bool http_reuse_port;            /* SO_REUSEPORT: several gateways on one http.port */
    int64_t http_header_timeout_ms;
    char *http_metrics_port;   /* "main", "off" or a port: see config_metrics_port */
    char *http_metrics_host;
    char *admin_host;          /* the admin API's listener (seckill-admin) */
    char *admin_advertised_host;  /* where the others reach it; empty: admin.host */
    char *admin_port;          /* "0" or empty: off; see config_admin_port */
    char *admin_token;         /* its bearer token, CONFIG_ADMIN_TOKEN_MIN characters at least */
    int64_t admin_workers;     /* threads running its commands, each with its own connections */
    char *http_refusal_status; /* "4xx" or "200": the HTTP code of execute's refusals */
    char *http_unavailable_status; /* "503" or "200": execute's UNAVAILABLE, or 200 FAILED */
    char *http_language;       /* "en" or "zh": the messages of execute's answers and stock's failures */
    char *http_stock_answers;  /* "seckill" or "spring": GET /seckill/stock's unknown sale and failures */

    char *auth_mode;
    char *auth_jwt_secret;
    int64_t auth_clock_skew_seconds;
    bool auth_require_exp;     /* a token without exp is refused */
    char *auth_jwt_issuer;     /* "" = iss not checked */
    char *auth_jwt_audience;   /* "" = aud not checked */

    char *redis_host;
    int64_t redis_port;
    int64_t redis_timeout_ms;
    int64_t redis_reconnect_min_ms;
    int64_t redis_reconnect_max_ms;
    char *redis_appendfsync;
    char *redis_nodes;              /* empty: one Redis at redis.host:redis.port */
    int64_t redis_cluster_refresh_ms;
    int64_t redis_cluster_node_timeout_ms;
    int64_t redis_cluster_replicas; /* replicas of each master the scripts create */
    int64_t redis_wait_replicas;    /* 0: no WAIT; else replicas that must hold a write first */
    int64_t redis_wait_timeout_ms;

    char *kafka_brokers;
    char *kafka_topic;
    char *kafka_dead_letter_topic;
    char *kafka_outcome_topic;       /* "": no outcome events */
    int64_t kafka_topic_partitions;
    struct config_pair kafka_producer[CONFIG_MAX_PASSTHROUGH];
    size_t kafka_producer_count;
    struct config_pair kafka_consumer[CONFIG_MAX_PASSTHROUGH];
    size_t kafka_consumer_count;

    char *mysql_host;
    int64_t mysql_port;
    char *mysql_user;
    char *mysql_password;
    char *mysql_database;

    int64_t permits_per_second;
    int64_t burst_capacity;
    int64_t per_ip_local_permits_per_second;   /* 0: no local per-IP limit */
    int64_t per_ip_local_burst;
    int64_t per_ip_local_table_size;
    char *stock_prefix;
    char *user_prefix;
    bool enable_rate_limit;
    int64_t max_requests_per_user;
    int64_t max_requests_per_ip;
    bool enable_pre_reduce;
    int64_t pre_reduce_timeout;
    bool enable_stock_rollback;
    int64_t max_seckill_duration;
    bool enable_anti_brush;
    int64_t anti_brush_threshold;
    int64_t anti_brush_ban_seconds;
    bool reply_after_ack;
    int64_t execute_batch_max;
    bool require_token;
    char *token_secret;
    int64_t token_ttl_seconds;
    int64_t activity_refresh_ms;
    int64_t reaper_interval_ms;
    int64_t sale_stats_interval_ms;  /* per-sale /metrics gauges read from Redis; 0: off */
    int64_t refusal_stats_interval_ms;  /* per-sale refusal counts added to Redis; 0: off */
    int64_t queued_mark_interval_ms;
    int64_t rebalance_interval_ms;   /* stock moves between a bucketed sale's buckets; 0: off */
    char *lua_dir;
    int64_t node_lease_ms;           /* order-number node id lease, renewed every third */

    int64_t consumer_batch_size;
    int64_t consumer_batch_timeout_ms;
    char *consumer_group_id;
    int64_t consumer_retry_min_ms;
    int64_t consumer_retry_max_ms;
    int64_t consumer_parked_max;
    int64_t consumer_lifecycle_interval_ms;
    int64_t consumer_outcome_interval_ms;
    int64_t consumer_archive_after_ms;   /* 0: sales are archived by hand only */
    int64_t consumer_coupon_archive_after_ms;   /* 0: coupons are archived by hand only */
    char *consumer_metrics_host;
    int64_t consumer_metrics_port;   /* 0: no metrics server */

    char *log_level;
    char *log_format;                /* text | json (common/logline.h) */

    char *stack_data_dir;            /* scripts only: the services' data, from the repo top */
    int64_t stack_gateways;          /* scripts only: gateways `make up` starts */
    int64_t stack_consumers;         /* scripts only: consumers `make up` starts */
};

void config_init(struct config *cfg);
void config_free(struct config *cfg);

int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen);
/* The file's lines from an open stream (the caller closes it); name prefixes the errors
 * ("name:line: ..."). config_load_file is fopen + this; the fuzz harness feeds fmemopen. */
int config_load_stream(struct config *cfg, FILE *f, const char *name, char *err, size_t errlen);
int config_set(struct config *cfg, const char *key, const char *value, char *err, size_t errlen);
/* SECKILL_HTTP_PORT sets http.port: upper case, '.' and '-' become '_'.
 * Pass-through kafka.* keys are file and --set only: their names are ambiguous in env form. */
int config_apply_env(struct config *cfg, char *const *envp, char *err, size_t errlen);
int config_validate(const struct config *cfg, char *err, size_t errlen);

/* http.metrics-port as a number: CONFIG_METRICS_MAIN ("main": /metrics on http.port),
 * CONFIG_METRICS_OFF ("off": not served), else the port of its own listener. */
#define CONFIG_METRICS_MAIN 0
#define CONFIG_METRICS_OFF (-1)
int64_t config_metrics_port(const struct config *cfg);
/* admin.port as a number: 0 when off ("0" or empty), -1 when not a port. */
int64_t config_admin_port(const struct config *cfg);
/* The shortest admin.token accepted when admin.port is set. */
#define CONFIG_ADMIN_TOKEN_MIN 32

/* Writes the value of KEY as the loader sees it (for scripts: `seckillctl config get`). */
int config_format(const struct config *cfg, const char *key, char *out, size_t outlen);

/* The command line every binary shares: -c FILE and --set key=value, anywhere in argv.
 * Consumed arguments are removed from argv; returns the new argc, or -1 with err set.
 * Without -c, SECKILL_CONF names the file, else conf/seckill.conf of the working directory,
 * else of the binary's directory or one of the four above it (a checkout's build/ or
 * build/asan/). A missing file is an error. */
int config_from_args(struct config *cfg, int argc, char **argv, char *const *envp,
                     char *err, size_t errlen);

#endif
