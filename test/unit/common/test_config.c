/* Configuration: shipped file = built-in defaults, strict validation that names the key,
 * precedence --set > environment > file > defaults, kafka.* pass-through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"

/* The Makefile points SK_LUA_DIR at <repo>/schema/lua: the shipped file sits beside it. */
#define SHIPPED_CONF SK_LUA_DIR "/../../conf/seckill.conf"

#define assert_contains(haystack, needle)                                                   \
    do {                                                                                    \
        if (!strstr((haystack), (needle)))                                                  \
            fail_msg("\"%s\" does not mention \"%s\"", (haystack), (needle));               \
    } while (0)

/* ---- helpers ------------------------------------------------------------------------ */

struct tmpfile {
    char path[64];
};

static void tmp_write(struct tmpfile *t, const char *content)
{
    snprintf(t->path, sizeof(t->path), "/tmp/sk-test-config-XXXXXX");
    int fd = mkstemp(t->path);
    assert_true(fd >= 0);
    size_t len = strlen(content);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static void tmp_remove(struct tmpfile *t)
{
    assert_int_equal(unlink(t->path), 0);
}

static void format_key(const struct config *cfg, const char *key, char *out, size_t len)
{
    if (config_format(cfg, key, out, len) != 0)
        fail_msg("config_format does not know %s", key);
}

static void assert_value(const struct config *cfg, const char *key, const char *want)
{
    char got[512];
    format_key(cfg, key, got, sizeof(got));
    if (strcmp(got, want) != 0)
        fail_msg("%s = '%s', expected '%s'", key, got, want);
}

/* The key = value lines of a config file, parsed independently of config.c. */
struct kv {
    char key[128];
    char value[256];
    int line;
};

static size_t read_pairs(const char *path, struct kv *out, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    char line[1024];
    size_t n = 0;
    int lineno = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char key[128], value[256];
        if (sscanf(line, " %127s", key) != 1)
            continue;
        char *v = eq + 1;
        while (isspace((unsigned char)*v))
            v++;
        snprintf(value, sizeof(value), "%s", v);
        size_t vl = strlen(value);
        while (vl > 0 && isspace((unsigned char)value[vl - 1]))
            value[--vl] = '\0';
        assert_true(n < max);
        snprintf(out[n].key, sizeof(out[n].key), "%s", key);
        snprintf(out[n].value, sizeof(out[n].value), "%s", value);
        out[n].line = lineno;
        n++;
    }
    fclose(f);
    return n;
}

static bool is_passthrough(const char *key)
{
    return strncmp(key, "kafka.producer.", 15) == 0 || strncmp(key, "kafka.consumer.", 15) == 0;
}

/* ---- the shipped file and the defaults ------------------------------------------------ */

static void test_shipped_file_equals_defaults(void **state)
{
    (void)state;
    struct kv pairs[128];
    size_t n = read_pairs(SHIPPED_CONF, pairs, 128);
    assert_true(n >= 50); /* every key is in the file */

    struct config defaults;
    config_init(&defaults);
    size_t compared = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_passthrough(pairs[i].key))
            continue;
        char got[512];
        if (config_format(&defaults, pairs[i].key, got, sizeof(got)) != 0)
            fail_msg("shipped key %s (line %d) is unknown to the loader", pairs[i].key,
                     pairs[i].line);
        if (strcmp(got, pairs[i].value) != 0)
            fail_msg("%s: shipped '%s' but built-in default '%s'", pairs[i].key,
                     pairs[i].value, got);
        compared++;
    }
    assert_true(compared >= 45);

    /* The whole file loads, each key is accepted, and the result validates. */
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    if (config_load_file(&cfg, SHIPPED_CONF, err, sizeof(err)) != 0)
        fail_msg("shipped file rejected: %s", err);
    assert_int_equal(config_validate(&cfg, err, sizeof(err)), 0);
    for (size_t i = 0; i < n; i++)
        assert_value(&cfg, pairs[i].key, pairs[i].value);
    /* seckill.lua-dir is left to its default: the build tree's schema/lua. */
    assert_string_equal(cfg.lua_dir, SK_LUA_DIR);
    assert_string_equal(defaults.lua_dir, SK_LUA_DIR);
    config_free(&cfg);
    config_free(&defaults);
}

static void test_documented_defaults(void **state)
{
    (void)state;
    /* The Spring service's names and defaults (docs/configuration.md, "Keys kept from the
     * Spring service"; conf/seckill.conf). */
    static const struct { const char *key, *value; } documented[] = {
        { "seckill.rate-limit.permits-per-second", "100" },
        { "seckill.rate-limit.burst-capacity", "200" },
        { "seckill.stock.prefix", "seckill:stock" },
        { "seckill.user.prefix", "seckill:user" },
        { "seckill.enable-rate-limit", "true" },
        { "seckill.max-requests-per-user", "10" },
        { "seckill.max-requests-per-ip", "100" },
        { "seckill.enable-pre-reduce", "true" },
        { "seckill.pre-reduce-timeout", "30" },
        { "seckill.enable-stock-rollback", "true" },
        { "seckill.max-seckill-duration", "3600" },
        { "seckill.enable-anti-brush", "true" },
        { "seckill.anti-brush-threshold", "5" },
        { "seckill.order.reply-after-ack", "true" },
    };
    static const char *const required[] = {
        "http.host", "http.port", "redis.host", "redis.port", "kafka.brokers", "kafka.topic",
        "mysql.host", "mysql.port", "mysql.user", "mysql.password", "mysql.database",
    };
    struct config cfg;
    config_init(&cfg);
    for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]); i++)
        assert_value(&cfg, documented[i].key, documented[i].value);
    assert_true(cfg.permits_per_second == 100 && cfg.burst_capacity == 200);
    assert_true(cfg.enable_anti_brush && cfg.anti_brush_threshold == 5);

    struct kv pairs[128];
    size_t n = read_pairs(SHIPPED_CONF, pairs, 128);
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++) {
        char out[256];
        assert_int_equal(config_format(&cfg, required[r], out, sizeof(out)), 0);
        bool shipped = false;
        for (size_t i = 0; i < n; i++)
            shipped = shipped || strcmp(pairs[i].key, required[r]) == 0;
        if (!shipped)
            fail_msg("%s is missing from conf/seckill.conf", required[r]);
    }
    for (size_t d = 0; d < sizeof(documented) / sizeof(documented[0]); d++) {
        bool shipped = false;
        for (size_t i = 0; i < n; i++)
            shipped = shipped || strcmp(pairs[i].key, documented[d].key) == 0;
        if (!shipped)
            fail_msg("%s is missing from conf/seckill.conf", documented[d].key);
    }
    assert_int_equal(config_validate(&cfg, (char[CONFIG_ERR_LEN]){ 0 }, CONFIG_ERR_LEN), 0);
    config_free(&cfg);
}

/* ---- errors name the key ---------------------------------------------------------------- */

static void test_unknown_key_in_file(void **state)
{
    (void)state;
    struct tmpfile t;
    tmp_write(&t, "# a comment\nhttp.port = 8081\n\nhttp.colour = blue   # not a key\n"
                  "redis.port = 1\n");
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_load_file(&cfg, t.path, err, sizeof(err)), -1);
    assert_contains(err, "http.colour");
    assert_contains(err, ":4:");
    assert_contains(err, t.path);
    /* Loading stops at the bad line. */
    assert_true(cfg.redis_port == 16379);
    config_free(&cfg);
    tmp_remove(&t);

    /* And through config_set and the command line. */
    config_init(&cfg);
    assert_int_equal(config_set(&cfg, "redis.prot", "1", err, sizeof(err)), -1);
    assert_contains(err, "redis.prot");
    /* A prefix of a real key is not a key, nor is a key with different case. */
    assert_int_equal(config_set(&cfg, "http.por", "1", err, sizeof(err)), -1);
    assert_int_equal(config_set(&cfg, "HTTP.PORT", "1", err, sizeof(err)), -1);
    assert_int_equal(config_set(&cfg, "kafka.producerx.a", "1", err, sizeof(err)), -1);
    assert_contains(err, "kafka.producerx.a");
    config_free(&cfg);
}

static void test_bad_lines_in_file(void **state)
{
    (void)state;
    static const struct { const char *content; const char *mention; } cases[] = {
        { "http.port = 8080\njust words\n", ":2:" },
        { "http.port = 8080\nhttp.backlog = lots\n", "http.backlog" },
        { "\n\n\nlog.level = loud\n", "log.level" },
        { "seckill.enable-anti-brush = maybe\n", "seckill.enable-anti-brush" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tmpfile t;
        tmp_write(&t, cases[i].content);
        struct config cfg;
        config_init(&cfg);
        char err[CONFIG_ERR_LEN] = "";
        assert_int_equal(config_load_file(&cfg, t.path, err, sizeof(err)), -1);
        assert_contains(err, cases[i].mention);
        assert_contains(err, t.path);
        config_free(&cfg);
        tmp_remove(&t);
    }
    /* Line numbers count blank and comment lines. */
    struct tmpfile t;
    tmp_write(&t, "\n\n\nlog.level = loud\n");
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_load_file(&cfg, t.path, err, sizeof(err)), -1);
    assert_contains(err, ":4:");
    config_free(&cfg);
    tmp_remove(&t);
}

static void test_bad_values_name_the_key(void **state)
{
    (void)state;
    static const struct { const char *key, *value; } bad[] = {
        /* not an integer */
        { "http.port", "abc" },
        { "http.port", "" },
        { "http.port", "80x" },
        { "http.port", "+80" },
        { "http.port", " 80" },
        { "http.port", "8.0" },
        { "http.port", "1e3" },
        { "http.port", "0x50" },
        { "http.port", "-" },
        { "redis.timeout-ms", "99999999999999999999999" },
        /* out of range */
        { "http.port", "0" },
        { "http.port", "-1" },
        { "http.port", "65536" },
        { "redis.port", "70000" },
        { "seckill.rate-limit.burst-capacity", "0" },
        { "seckill.rate-limit.permits-per-second", "-5" },
        { "seckill.pre-reduce-timeout", "0" },
        { "consumer.batch-size", "100001" },
        /* not a boolean */
        { "seckill.enable-rate-limit", "maybe" },
        { "seckill.enable-rate-limit", "" },
        { "seckill.enable-rate-limit", "2" },
        { "http.trust-forwarded-for", "truee" },
        /* not one of the choices */
        { "log.level", "verbose" },
        { "log.level", "" },
        { "log.level", "info|warn" },
        { "log.level", "inf" },
        { "redis.appendfsync", "sometimes" },
        { "redis.appendfsync", "everysec " },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct config cfg, before;
        config_init(&cfg);
        config_init(&before);
        char err[CONFIG_ERR_LEN] = "";
        if (config_set(&cfg, bad[i].key, bad[i].value, err, sizeof(err)) == 0)
            fail_msg("%s = '%s' was accepted", bad[i].key, bad[i].value);
        assert_contains(err, bad[i].key);
        /* The rejected value left the old one in place. */
        char was[256];
        format_key(&before, bad[i].key, was, sizeof(was));
        assert_value(&cfg, bad[i].key, was);
        config_free(&cfg);
        config_free(&before);
    }
    /* The range limits themselves are fine. */
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_set(&cfg, "http.port", "1", err, sizeof(err)), 0);
    assert_int_equal(config_set(&cfg, "http.port", "65535", err, sizeof(err)), 0);
    assert_true(cfg.http_port == 65535);
    assert_int_equal(config_set(&cfg, "log.level", "debug", err, sizeof(err)), 0);
    assert_int_equal(config_set(&cfg, "redis.appendfsync", "always", err, sizeof(err)), 0);
    config_free(&cfg);
}

/* ---- precedence ----------------------------------------------------------------------- */

static void test_set_beats_env_beats_file(void **state)
{
    (void)state;
    struct tmpfile t;
    tmp_write(&t, "http.port = 1111\nredis.port = 2222\nmysql.port = 3333\n"
                  "kafka.producer.linger.ms = 2\n");
    char *envp[] = {
        "PATH=/usr/bin",
        "SECKILL_HTTP_PORT=4444",
        "SECKILL_REDIS_PORT=5555",
        "SECKILL_HTTP_PORTS=9", /* not a key: ignored */
        NULL,
    };
    char a0[] = "seckill-server", a1[] = "--set", a2[] = "http.port=6666", a3[] = "-c",
         a5[] = "positional", a6[] = "--set", a7[] = "kafka.producer.linger.ms=9";
    char *argv[] = { a0, a1, a2, a3, t.path, a5, a6, a7, NULL };
    int argc = 8;
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    int rc = config_from_args(&cfg, argc, argv, envp, err, sizeof(err));
    if (rc < 0)
        fail_msg("config_from_args: %s", err);
    /* -c FILE and --set k=v are consumed, the rest keeps its order. */
    assert_int_equal(rc, 2);
    assert_string_equal(argv[0], "seckill-server");
    assert_string_equal(argv[1], "positional");
    assert_null(argv[2]);
    /* The --set argument is given back unchanged. */
    assert_string_equal(a2, "http.port=6666");

    assert_true(cfg.http_port == 6666);  /* --set beats env and file */
    assert_true(cfg.redis_port == 5555); /* env beats file */
    assert_true(cfg.mysql_port == 3333); /* file beats default */
    assert_true(cfg.http_backlog == 4096); /* default */
    assert_value(&cfg, "kafka.producer.linger.ms", "9"); /* --set beats file */
    config_free(&cfg);
    tmp_remove(&t);
}

static void test_conf_from_env_and_missing_file(void **state)
{
    (void)state;
    struct tmpfile t;
    tmp_write(&t, "http.port = 1234\n");
    char conf_env[128];
    snprintf(conf_env, sizeof(conf_env), "SECKILL_CONF=%s", t.path);
    char *envp[] = { conf_env, NULL };
    char a0[] = "seckillctl";
    char *argv[] = { a0, NULL };
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_from_args(&cfg, 1, argv, envp, err, sizeof(err)), 1);
    assert_true(cfg.http_port == 1234);
    config_free(&cfg);

    /* -c beats SECKILL_CONF, and a missing -c file is an error naming it. */
    char a1[] = "-c", a2[] = "/nonexistent/sk-missing.conf";
    char *argv2[] = { a0, a1, a2, NULL };
    config_init(&cfg);
    assert_int_equal(config_from_args(&cfg, 3, argv2, envp, err, sizeof(err)), -1);
    assert_contains(err, "/nonexistent/sk-missing.conf");
    config_free(&cfg);

    config_init(&cfg);
    assert_int_equal(config_load_file(&cfg, "/nonexistent/sk-missing.conf", err, sizeof(err)), -1);
    assert_contains(err, "/nonexistent/sk-missing.conf");
    config_free(&cfg);

    /* -c without a file name, --set without key=value. */
    char *argv3[] = { a0, a1, NULL };
    config_init(&cfg);
    err[0] = '\0';
    assert_int_equal(config_from_args(&cfg, 2, argv3, envp, err, sizeof(err)), -1);
    assert_true(err[0] != '\0');
    config_free(&cfg);
    char s1[] = "--set", s2[] = "http.port";
    char *argv4[] = { a0, s1, s2, NULL };
    config_init(&cfg);
    err[0] = '\0';
    assert_int_equal(config_from_args(&cfg, 3, argv4, envp, err, sizeof(err)), -1);
    assert_contains(err, "http.port");
    config_free(&cfg);
    char *argv5[] = { a0, s1, NULL };
    config_init(&cfg);
    err[0] = '\0';
    assert_int_equal(config_from_args(&cfg, 2, argv5, envp, err, sizeof(err)), -1);
    assert_true(err[0] != '\0');
    config_free(&cfg);
    /* A bad --set names its key. */
    char s3[] = "seckill.enable-anti-brush=perhaps";
    char *argv6[] = { a0, s1, s3, NULL };
    config_init(&cfg);
    assert_int_equal(config_from_args(&cfg, 3, argv6, envp, err, sizeof(err)), -1);
    assert_contains(err, "seckill.enable-anti-brush");
    config_free(&cfg);
    tmp_remove(&t);
}

/* Outside the checkout, without -c or SECKILL_CONF, the binary finds the checkout's file
 * from its own location (this test runs from build[/asan]/test/common/). */
static void test_default_file_found_from_the_binary(void **state)
{
    (void)state;
    char cwd[4096], dir[] = "/tmp/sk-test-config-cwd-XXXXXX";
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chdir(dir), 0);
    char a0[] = "seckillctl";
    char *argv[] = { a0, NULL };
    char *envp[] = { "PATH=/usr/bin", NULL };
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    int rc = config_from_args(&cfg, 1, argv, envp, err, sizeof(err));
    config_free(&cfg);

    /* The working directory's conf/seckill.conf comes first. */
    assert_int_equal(mkdir("conf", 0700), 0);
    FILE *f = fopen("conf/seckill.conf", "w");
    assert_non_null(f);
    fputs("http.port = 4343\n", f);
    assert_int_equal(fclose(f), 0);
    config_init(&cfg);
    char err2[CONFIG_ERR_LEN] = "";
    int rc2 = config_from_args(&cfg, 1, argv, envp, err2, sizeof(err2));
    int64_t port = cfg.http_port;
    config_free(&cfg);
    assert_int_equal(unlink("conf/seckill.conf"), 0);
    assert_int_equal(rmdir("conf"), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rmdir(dir), 0);
    if (rc != 1)
        fail_msg("no conf/seckill.conf found from the binary: %s", err);
    if (rc2 != 1)
        fail_msg("%s", err2);
    assert_true(port == 4343);
}

static void test_env_mapping(void **state)
{
    (void)state;
    char *envp[] = {
        "SECKILL_HTTP_PORT=9090",
        "SECKILL_SECKILL_RATE_LIMIT_PERMITS_PER_SECOND=7",
        "SECKILL_HTTP_TRUST_FORWARDED_FOR=true",
        "SECKILL_SECKILL_ANTI_BRUSH_BAN_SECONDS=120",
        "SECKILL_LOG_LEVEL=debug",
        "SECKILL_MYSQL_PASSWORD=s3cr=t",
        "http.port=1",        /* the dotted name is not the env name */
        "SECKILL_http_port=2", /* nor is lower case */
        "XSECKILL_HTTP_PORT=3",
        NULL,
    };
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_apply_env(&cfg, envp, err, sizeof(err)), 0);
    assert_true(cfg.http_port == 9090);
    assert_true(cfg.permits_per_second == 7);
    assert_true(cfg.http_trust_forwarded_for);
    assert_true(cfg.anti_brush_ban_seconds == 120);
    assert_string_equal(cfg.log_level, "debug");
    assert_string_equal(cfg.mysql_password, "s3cr=t");
    /* Untouched keys keep their defaults; a NULL environment changes nothing. */
    assert_true(cfg.redis_port == 16379);
    assert_int_equal(config_apply_env(&cfg, NULL, err, sizeof(err)), 0);
    assert_true(cfg.http_port == 9090);
    config_free(&cfg);

    /* A bad environment value names the variable and the key. */
    char *bad[] = { "SECKILL_HTTP_PORT=eighty", NULL };
    config_init(&cfg);
    assert_int_equal(config_apply_env(&cfg, bad, err, sizeof(err)), -1);
    assert_contains(err, "SECKILL_HTTP_PORT");
    assert_contains(err, "http.port");
    assert_true(cfg.http_port == 8080);
    config_free(&cfg);

    /* No two keys of the shipped file share an environment name. */
    struct kv pairs[128];
    size_t n = read_pairs(SHIPPED_CONF, pairs, 128);
    char names[128][160];
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)snprintf(names[i], sizeof(names[i]), "SECKILL_");
        for (const char *p = pairs[i].key; *p; p++)
            names[i][k++] = (*p == '.' || *p == '-') ? '_' : (char)toupper((unsigned char)*p);
        names[i][k] = '\0';
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                fail_msg("%s and %s both map to %s", pairs[i].key, pairs[j].key, names[i]);
    }
}

/* ---- kafka pass-through ----------------------------------------------------------------- */

static void test_kafka_passthrough(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(cfg.kafka_producer_count, 0);
    assert_int_equal(config_load_file(&cfg, SHIPPED_CONF, err, sizeof(err)), 0);
    /* The shipped examples are stored without their prefix. */
    assert_value(&cfg, "kafka.producer.linger.ms", "1");
    assert_value(&cfg, "kafka.producer.message.timeout.ms", "5000");
    assert_value(&cfg, "kafka.consumer.session.timeout.ms", "10000");
    size_t producers = cfg.kafka_producer_count;
    bool found = false;
    for (size_t i = 0; i < cfg.kafka_producer_count; i++)
        if (strcmp(cfg.kafka_producer[i].key, "linger.ms") == 0) {
            assert_string_equal(cfg.kafka_producer[i].value, "1");
            found = true;
        }
    assert_true(found);

    /* Overriding replaces in place, a new key is added, producer and consumer are separate. */
    assert_int_equal(config_set(&cfg, "kafka.producer.linger.ms", "0", err, sizeof(err)), 0);
    assert_int_equal(cfg.kafka_producer_count, producers);
    assert_value(&cfg, "kafka.producer.linger.ms", "0");
    assert_int_equal(config_set(&cfg, "kafka.producer.compression.type", "lz4", err, sizeof(err)), 0);
    assert_int_equal(cfg.kafka_producer_count, producers + 1);
    assert_value(&cfg, "kafka.producer.compression.type", "lz4");
    char out[64];
    assert_int_equal(config_format(&cfg, "kafka.consumer.compression.type", out, sizeof(out)), -1);
    assert_int_equal(config_set(&cfg, "kafka.consumer.fetch.wait.max.ms", "10", err, sizeof(err)), 0);
    assert_value(&cfg, "kafka.consumer.fetch.wait.max.ms", "10");
    assert_value(&cfg, "kafka.producer.linger.ms", "0");

    /* An empty property name is refused, naming the key. */
    assert_int_equal(config_set(&cfg, "kafka.producer.", "1", err, sizeof(err)), -1);
    assert_contains(err, "kafka.producer.");
    config_free(&cfg);

    /* More than CONFIG_MAX_PASSTHROUGH properties is an error, not an overflow. */
    config_init(&cfg);
    int rc = 0;
    for (int i = 0; i <= CONFIG_MAX_PASSTHROUGH && rc == 0; i++) {
        char key[64];
        snprintf(key, sizeof(key), "kafka.consumer.p%d", i);
        rc = config_set(&cfg, key, "v", err, sizeof(err));
        if (i < CONFIG_MAX_PASSTHROUGH)
            assert_int_equal(rc, 0);
    }
    assert_int_equal(rc, -1);
    assert_contains(err, "kafka.consumer.p64");
    assert_int_equal(cfg.kafka_consumer_count, CONFIG_MAX_PASSTHROUGH);
    /* Overriding an existing one still works when full. */
    assert_int_equal(config_set(&cfg, "kafka.consumer.p3", "w", err, sizeof(err)), 0);
    assert_value(&cfg, "kafka.consumer.p3", "w");
    config_free(&cfg);

    /* Pass-through keys are not read from the environment (ambiguous names). */
    char *envp[] = { "SECKILL_KAFKA_PRODUCER_LINGER_MS=77", NULL };
    config_init(&cfg);
    assert_int_equal(config_apply_env(&cfg, envp, err, sizeof(err)), 0);
    assert_int_equal(cfg.kafka_producer_count, 0);
    config_free(&cfg);
}

/* ---- cross-checks ------------------------------------------------------------------------ */

static void test_validate_cross_checks(void **state)
{
    (void)state;
    static const struct {
        const char *sets[3][2];
        const char *mention; /* NULL: valid */
    } cases[] = {
        { { { NULL, NULL } }, NULL },
        /* pre-reduce-timeout (s) must exceed the request timeout (ms) */
        { { { "seckill.pre-reduce-timeout", "10" } }, "seckill.pre-reduce-timeout" },
        { { { "seckill.pre-reduce-timeout", "5" } }, "seckill.pre-reduce-timeout" },
        { { { "seckill.pre-reduce-timeout", "11" } }, NULL },
        { { { "http.request-timeout-ms", "30000" } }, "seckill.pre-reduce-timeout" },
        { { { "http.request-timeout-ms", "29999" } }, NULL },
        /* reconnect min/max */
        { { { "redis.reconnect-min-ms", "6000" } }, "redis.reconnect-max-ms" },
        { { { "redis.reconnect-min-ms", "5000" } }, NULL },
        { { { "redis.reconnect-max-ms", "99" } }, "redis.reconnect-max-ms" },
        { { { "consumer.retry-min-ms", "5001" } }, "consumer.retry-max-ms" },
        /* the request outlives one Redis command */
        { { { "redis.timeout-ms", "10000" } }, "http.request-timeout-ms" },
        /* required strings */
        { { { "kafka.brokers", "" } }, "kafka.brokers" },
        { { { "seckill.stock.prefix", "" } }, "seckill.stock.prefix" },
        { { { "kafka.dead-letter-topic", "seckill.orders" } }, "kafka.dead-letter-topic" },
        /* The producer's effective message timeout, whatever its name, stays 1 s +
         * redis.timeout-ms under the request timeout, itself under the reservation's. */
        { { { "kafka.producer.message.timeout.ms", "8001" } }, "kafka.producer.message.timeout.ms" },
        { { { "kafka.producer.message.timeout.ms", "8001" } }, "http.request-timeout-ms" },
        { { { "kafka.producer.message.timeout.ms", "8000" } }, NULL },
        { { { "kafka.producer.message.timeout.ms", "8001" }, { "redis.timeout-ms", "999" } }, NULL },
        { { { "kafka.producer.delivery.timeout.ms", "20000" } }, "kafka.producer.delivery.timeout.ms" },
        { { { "kafka.producer.delivery.timeout.ms", "300000" } }, "seckill.pre-reduce-timeout" },
        { { { "kafka.producer.delivery.timeout.ms", "8001" } }, "kafka.producer.delivery.timeout.ms" },
        { { { "kafka.producer.delivery.timeout.ms", "8000" } }, NULL },
        /* librdkafka takes 0 as "no timeout"; a non-number would fail only at start-up. */
        { { { "kafka.producer.message.timeout.ms", "0" } }, "kafka.producer.message.timeout.ms" },
        { { { "kafka.producer.delivery.timeout.ms", "5s" } }, "kafka.producer.delivery.timeout.ms" },
        /* Both aliases set: the later one is what librdkafka keeps. */
        { { { "kafka.producer.message.timeout.ms", "3000" },
            { "kafka.producer.delivery.timeout.ms", "20000" } },
          "kafka.producer.delivery.timeout.ms" },
        { { { "kafka.producer.delivery.timeout.ms", "20000" },
            { "kafka.producer.message.timeout.ms", "3000" } },
          NULL },
        /* Unset, the gateway's own default (5000) counts: 5000 + 1000 + 1000 > 6000. */
        { { { "http.request-timeout-ms", "6000" } }, "kafka.producer.message.timeout.ms" },
        { { { "http.request-timeout-ms", "7000" } }, NULL },
        /* A WAIT answers within half of redis.timeout-ms, or its connection is dropped. */
        { { { "redis.wait-replicas", "1" }, { "redis.wait-timeout-ms", "501" } }, "redis.wait-timeout-ms" },
        { { { "redis.wait-replicas", "1" }, { "redis.wait-timeout-ms", "500" } }, NULL },
        { { { "redis.wait-replicas", "0" }, { "redis.wait-timeout-ms", "900" } }, NULL },
        /* and the order is produced only after it: it counts in the request's chain */
        { { { "redis.wait-replicas", "1" }, { "kafka.producer.message.timeout.ms", "7800" } },
          "kafka.producer.message.timeout.ms" },
        { { { "redis.wait-replicas", "1" }, { "kafka.producer.message.timeout.ms", "7750" } }, NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct config cfg;
        config_init(&cfg);
        char err[CONFIG_ERR_LEN] = "";
        for (size_t s = 0; s < 3 && cases[i].sets[s][0]; s++)
            assert_int_equal(config_set(&cfg, cases[i].sets[s][0], cases[i].sets[s][1], err,
                                        sizeof(err)),
                             0);
        int rc = config_validate(&cfg, err, sizeof(err));
        if (cases[i].mention) {
            if (rc == 0)
                fail_msg("case %zu: config_validate accepted an invalid config", i);
            assert_contains(err, cases[i].mention);
        } else if (rc != 0) {
            fail_msg("case %zu: config_validate rejected a valid config: %s", i, err);
        }
        config_free(&cfg);
    }

    /* config_from_args validates too. */
    struct tmpfile t;
    tmp_write(&t, "seckill.pre-reduce-timeout = 30\n");
    char a0[] = "x", a1[] = "-c", a3[] = "--set", a4[] = "http.request-timeout-ms=60000";
    char *argv[] = { a0, a1, t.path, a3, a4, NULL };
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_from_args(&cfg, 5, argv, NULL, err, sizeof(err)), -1);
    assert_contains(err, "pre-reduce-timeout");
    config_free(&cfg);
    tmp_remove(&t);
}

/* ---- config_format ------------------------------------------------------------------------ */

static void test_format_round_trip(void **state)
{
    (void)state;
    /* Each type: what config_set takes, config_format gives back as the loader sees it. */
    static const struct { const char *key, *in, *out; } cases[] = {
        { "http.host", "0.0.0.0", "0.0.0.0" },                   /* string */
        { "mysql.password", "p@ss w=rd", "p@ss w=rd" },           /* string with = and space */
        { "http.port", "9000", "9000" },                          /* int */
        { "seckill.rate-limit.burst-capacity", "100000000", "100000000" },
        { "http.trust-forwarded-for", "true", "true" },           /* bool */
        { "http.trust-forwarded-for", "yes", "true" },
        { "http.trust-forwarded-for", "on", "true" },
        { "http.trust-forwarded-for", "1", "true" },
        { "seckill.enable-rate-limit", "false", "false" },
        { "seckill.enable-rate-limit", "no", "false" },
        { "seckill.enable-rate-limit", "off", "false" },
        { "seckill.enable-rate-limit", "0", "false" },
        { "log.level", "warn", "warn" },                          /* choice */
        { "redis.appendfsync", "no", "no" },
        { "kafka.producer.acks", "all", "all" },                  /* pass-through */
        { "kafka.consumer.auto.offset.reset", "earliest", "earliest" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct config cfg;
        config_init(&cfg);
        char err[CONFIG_ERR_LEN] = "";
        if (config_set(&cfg, cases[i].key, cases[i].in, err, sizeof(err)) != 0)
            fail_msg("%s = %s: %s", cases[i].key, cases[i].in, err);
        assert_value(&cfg, cases[i].key, cases[i].out);
        /* Feeding the formatted value back gives the same value. */
        char once[512];
        format_key(&cfg, cases[i].key, once, sizeof(once));
        struct config again;
        config_init(&again);
        assert_int_equal(config_set(&again, cases[i].key, once, err, sizeof(err)), 0);
        assert_value(&again, cases[i].key, once);
        config_free(&again);
        config_free(&cfg);
    }

    /* Every key of the shipped file, after a load, formats to a value the loader takes back
     * unchanged: a file written from config_format reproduces the configuration. */
    struct kv pairs[128];
    size_t n = read_pairs(SHIPPED_CONF, pairs, 128);
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    assert_int_equal(config_load_file(&cfg, SHIPPED_CONF, err, sizeof(err)), 0);
    assert_int_equal(config_set(&cfg, "http.port", "9999", err, sizeof(err)), 0);
    assert_int_equal(config_set(&cfg, "seckill.enable-anti-brush", "off", err, sizeof(err)), 0);
    char *dump = malloc(64 * 1024);
    assert_non_null(dump);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        char v[512];
        format_key(&cfg, pairs[i].key, v, sizeof(v));
        used += (size_t)snprintf(dump + used, 64 * 1024 - used, "%s = %s\n", pairs[i].key, v);
    }
    struct tmpfile t;
    tmp_write(&t, dump);
    struct config back;
    config_init(&back);
    assert_int_equal(config_load_file(&back, t.path, err, sizeof(err)), 0);
    for (size_t i = 0; i < n; i++) {
        char v[512];
        format_key(&cfg, pairs[i].key, v, sizeof(v));
        assert_value(&back, pairs[i].key, v);
    }
    assert_true(back.http_port == 9999);
    assert_false(back.enable_anti_brush);
    config_free(&back);
    config_free(&cfg);
    tmp_remove(&t);
    free(dump);

    /* Unknown keys do not format. */
    config_init(&cfg);
    char out[32];
    assert_int_equal(config_format(&cfg, "no.such.key", out, sizeof(out)), -1);
    /* A small buffer truncates safely. */
    assert_int_equal(config_format(&cfg, "consumer.group-id", out, 8), 0);
    assert_string_equal(out, "seckill");
    config_free(&cfg);
}

static void test_file_syntax(void **state)
{
    (void)state;
    struct tmpfile t;
    tmp_write(&t, "# comment only\n"
                  "   \n"
                  "\thttp.host\t=\t10.0.0.1\t# trailing comment\n"
                  "mysql.password = a=b\n"
                  "http.port=8181\n"
                  "http.port = 8282\n" /* later lines win */
                  "mysql.user =\n");   /* empty value is a value */
    struct config cfg;
    config_init(&cfg);
    char err[CONFIG_ERR_LEN] = "";
    if (config_load_file(&cfg, t.path, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg.http_host, "10.0.0.1");
    assert_string_equal(cfg.mysql_password, "a=b");
    assert_true(cfg.http_port == 8282);
    assert_string_equal(cfg.mysql_user, "");
    /* ...but an empty user does not validate. */
    assert_int_equal(config_validate(&cfg, err, sizeof(err)), -1);
    assert_contains(err, "mysql.user");
    config_free(&cfg);
    tmp_remove(&t);
}

/* A value must reach the program whole whichever source it comes from: a '#' inside a
 * secret used to end it in the file only. In the file, '#' starts a comment only at the
 * start of a value or after a space or tab; double quotes hold anything else. */
static void test_sources_agree_on_values(void **state)
{
    (void)state;
    static const struct { const char *want, *file; } cases[] = {
        { "abc#def", "abc#def" },
        { "abc#def", "\"abc#def\"" },
        { "a#b#c", "a#b#c   # a comment after the value" },
        { "0123456789#0123456789#0123456789#", "0123456789#0123456789#0123456789#\t#c" },
        { "p a #ss", "\"p a #ss\"" },
        { " lead and trail ", "\" lead and trail \"  # kept" },
        { "#starts", "\"#starts\"" },
        { "q\"uo\\te", "\"q\\\"uo\\\\te\"" },
        { "\"", "\"\\\"\"" },
        { "", "\"\"" },
        { "x\"y", "x\"y" },       /* a quote inside an unquoted value is an ordinary byte */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "seckill.token-secret = %s\nmysql.password=%s\n",
                 cases[i].file, cases[i].file);
        struct tmpfile t;
        tmp_write(&t, text);
        struct config file, env, set;
        char err[CONFIG_ERR_LEN] = "";
        config_init(&file);
        if (config_load_file(&file, t.path, err, sizeof(err)) != 0)
            fail_msg("case %zu (%s): %s", i, cases[i].file, err);
        tmp_remove(&t);

        char e1[600], e2[600];
        snprintf(e1, sizeof(e1), "SECKILL_SECKILL_TOKEN_SECRET=%s", cases[i].want);
        snprintf(e2, sizeof(e2), "SECKILL_MYSQL_PASSWORD=%s", cases[i].want);
        char *envp[] = { e1, e2, NULL };
        config_init(&env);
        assert_int_equal(config_apply_env(&env, envp, err, sizeof(err)), 0);

        char s1[600], s2[600];
        snprintf(s1, sizeof(s1), "seckill.token-secret=%s", cases[i].want);
        snprintf(s2, sizeof(s2), "mysql.password=%s", cases[i].want);
        char a0[] = "x", a1[] = "-c", a2[] = "/dev/null", a3[] = "--set", a5[] = "--set";
        char *argv[] = { a0, a1, a2, a3, s1, a5, s2, NULL };
        config_init(&set);
        if (config_from_args(&set, 7, argv, NULL, err, sizeof(err)) < 0)
            fail_msg("case %zu: --set: %s", i, err);

        const struct config *all[] = { &file, &env, &set };
        for (size_t k = 0; k < 3; k++) {
            if (strcmp(all[k]->token_secret, cases[i].want) != 0 ||
                strcmp(all[k]->mysql_password, cases[i].want) != 0)
                fail_msg("case %zu, source %zu: '%s' / '%s', expected '%s'", i, k,
                         all[k]->token_secret, all[k]->mysql_password, cases[i].want);
        }
        config_free(&file);
        config_free(&env);
        config_free(&set);
    }

    /* A quote that opens a value must close it, with nothing but a comment after it. */
    static const char *const bad[] = {
        "mysql.password = \"open\n",
        "mysql.password = \"a\" b\n",
        "mysql.password = \"a\\n\"\n", /* only \" and \\ are escapes */
        "mysql.password = \"a\\\"\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tmpfile t;
        tmp_write(&t, bad[i]);
        struct config cfg;
        config_init(&cfg);
        char err[CONFIG_ERR_LEN] = "";
        if (config_load_file(&cfg, t.path, err, sizeof(err)) == 0)
            fail_msg("bad case %zu accepted: %s", i, bad[i]);
        assert_contains(err, ":1:");
        assert_contains(err, "mysql.password");
        config_free(&cfg);
        tmp_remove(&t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_file_equals_defaults),
        cmocka_unit_test(test_documented_defaults),
        cmocka_unit_test(test_unknown_key_in_file),
        cmocka_unit_test(test_bad_lines_in_file),
        cmocka_unit_test(test_bad_values_name_the_key),
        cmocka_unit_test(test_set_beats_env_beats_file),
        cmocka_unit_test(test_conf_from_env_and_missing_file),
        cmocka_unit_test(test_default_file_found_from_the_binary),
        cmocka_unit_test(test_env_mapping),
        cmocka_unit_test(test_kafka_passthrough),
        cmocka_unit_test(test_validate_cross_checks),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_file_syntax),
        cmocka_unit_test(test_sources_agree_on_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
