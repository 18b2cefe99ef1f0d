/* libFuzzer harness for the config loader: the bytes are a config file (through
 * fmemopen, so the real line reader runs) and, line by line, an environment for
 * config_apply_env and a command line for config_from_args. config_init and config_free
 * run every time, so LeakSanitizer sees any string a failed or repeated set leaves behind.
 *
 * Property: what `seckillctl config get` prints (config_format) loads back to the same
 * value. The keys checked are the ones the input set, found the way the loader finds
 * them; a file that loaded is rewritten as "key=value" lines (never longer than the
 * originals), loaded into a fresh config, and every key and config_validate must agree. */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the code promises did not hold: a crash that libFuzzer saves as a reproducer. */
#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

#define ENV_MAX 256

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

struct keys {
    char **names;
    size_t count, cap;
};

/* The keys of the file's "key = value" lines, found the way the loader finds them. Only
 * called for a file that loaded, so there is no NUL and no line over 4 KiB. */
static void input_keys(char *buf, struct keys *k)
{
    for (char *line = buf; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            if (k->count == k->cap) {
                k->cap = k->cap ? 2 * k->cap : 16;
                k->names = realloc(k->names, k->cap * sizeof(*k->names));
                if (!k->names)
                    abort();
            }
            k->names[k->count++] = trim(line);
        }
        line = nl ? nl + 1 : NULL;
    }
}

static FILE *open_bytes(char *buf, size_t size)
{
    /* glibc takes a zero size as an empty file (POSIX before 2013 did not promise that). */
    return fmemopen(buf, size, "r");
}

/* A value as a file line holds it: plain when the loader reads it back whole, else
 * double-quoted. A value that needs the quotes came from a quoted line with the same
 * escapes, so the dump stays no longer than the input. Returns the bytes written. */
static size_t dump_value(char *out, const char *v)
{
    size_t len = strlen(v);
    bool quote = len > 0 && (v[0] == '"' || isspace((unsigned char)v[0]) ||
                             isspace((unsigned char)v[len - 1]));
    for (size_t i = 0; i < len && !quote; i++)
        quote = v[i] == '#' && (i == 0 || v[i - 1] == ' ' || v[i - 1] == '\t');
    if (!quote)
        return (size_t)sprintf(out, "%s", v);
    size_t n = 0;
    out[n++] = '"';
    for (size_t i = 0; i < len; i++) {
        if (v[i] == '"' || v[i] == '\\')
            out[n++] = '\\';
        out[n++] = v[i];
    }
    out[n++] = '"';
    out[n] = '\0';
    return n;
}

static void check_round_trip(const struct config *cfg, char **keys, size_t nkeys)
{
    size_t cap = 1, used = 0;
    for (size_t i = 0; i < nkeys; i++)
        cap += strlen(keys[i]) + 1 + 2 * 4096 + 2 + 1;
    char *dump = malloc(cap);
    if (!dump)
        abort();
    dump[0] = '\0';
    for (size_t i = 0; i < nkeys; i++) {
        char value[4096];
        if (config_format(cfg, keys[i], value, sizeof(value)) != 0)
            continue;
        used += (size_t)snprintf(dump + used, cap - used, "%s=", keys[i]);
        used += dump_value(dump + used, value);
        dump[used++] = '\n';
        dump[used] = '\0';
    }

    struct config again;
    char err[CONFIG_ERR_LEN], err2[CONFIG_ERR_LEN];
    config_init(&again);
    FILE *f = open_bytes(dump, used);
    CHECK(f != NULL);
    CHECK(config_load_stream(&again, f, "dump", err, sizeof(err)) == 0);
    fclose(f);
    for (size_t i = 0; i < nkeys; i++) {
        char a[4096], b[4096];
        int ra = config_format(cfg, keys[i], a, sizeof(a));
        int rb = config_format(&again, keys[i], b, sizeof(b));
        CHECK(ra == rb && (ra != 0 || strcmp(a, b) == 0));
    }
    CHECK(config_validate(cfg, err, sizeof(err)) == config_validate(&again, err2, sizeof(err2)));
    config_free(&again);
    free(dump);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    buf[size] = '\0';

    struct config cfg;
    char err[CONFIG_ERR_LEN];
    config_init(&cfg);
    FILE *f = open_bytes(buf, size);
    CHECK(f != NULL);
    int rc = config_load_stream(&cfg, f, "fuzz.conf", err, sizeof(err));
    fclose(f);
    if (rc == 0) {
        /* A NUL byte would end a line early and hide the rest of it from the checks (a
         * setting behind a comment, junk after a value): such a file is refused. */
        CHECK(memchr(data, '\0', size) == NULL);
        (void)config_validate(&cfg, err, sizeof(err));
        char *text = strdup(buf);
        if (!text)
            abort();
        struct keys keys = { NULL, 0, 0 };
        input_keys(text, &keys);
        check_round_trip(&cfg, keys.names, keys.count);
        free(keys.names);
        free(text);
    } else {
        /* A refused file says why, starting with the name and line. */
        CHECK(strncmp(err, "fuzz.conf:", 10) == 0);
    }
    config_free(&cfg);

    /* The same lines as environment entries ("SECKILL_HTTP_PORT=80"). */
    char *envp[ENV_MAX + 1];
    size_t n = 0;
    for (char *line = buf; line && n < ENV_MAX;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        envp[n++] = line;
        line = nl ? nl + 1 : NULL;
    }
    envp[n] = NULL;
    config_init(&cfg);
    if (config_apply_env(&cfg, envp, err, sizeof(err)) == 0)
        (void)config_validate(&cfg, err, sizeof(err));
    else
        CHECK(strncmp(err, "environment SECKILL_", 20) == 0);
    config_free(&cfg);

    /* And as a command line ("--set", "http.port=80", ...). The file stays /dev/null:
     * a -c from the input could name any file, /dev/zero included, which reads forever. */
    char *argv[ENV_MAX + 4];
    int argc = 0;
    argv[argc++] = "seckill";
    argv[argc++] = "-c";
    argv[argc++] = "/dev/null";
    for (size_t i = 0; i < n; i++)
        argv[argc++] = strcmp(envp[i], "-c") == 0 || strcmp(envp[i], "--config") == 0 ? "--set" : envp[i];
    argv[argc] = NULL;
    config_init(&cfg);
    int left = config_from_args(&cfg, argc, argv, NULL, err, sizeof(err));
    if (left >= 0) {
        /* What is left is the binary's own arguments, in order, without the config's. */
        CHECK(left >= 1 && left <= argc && argv[left] == NULL);
        for (int i = 1; i < left; i++)
            CHECK(strcmp(argv[i], "--set") != 0 && strcmp(argv[i], "-c") != 0);
    }
    config_free(&cfg);

    free(buf);
    return 0;
}
