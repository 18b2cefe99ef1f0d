/* seckillctl's main: the global options (--json, -c, --set, help), the command table and
 * the dispatch to the command modules. It has no header: nothing calls into main. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctlactivityarchive.h"
#include "ctl/ctlactivitycancel.h"
#include "ctl/ctlactivityupdate.h"
#include "ctl/ctlaudit.h"
#include "ctl/ctllist.h"
#include "ctl/ctlactivitycreate.h"
#include "ctl/ctlactivityshow.h"
#include "ctl/ctlactivitywarmup.h"
#include "ctl/ctlbanadd.h"
#include "ctl/ctlbanlist.h"
#include "ctl/ctlbanremove.h"
#include "ctl/ctlbansync.h"
#include "ctl/ctlconfig.h"
#include "ctl/ctlcouponcreate.h"
#include "ctl/ctlcoupongrant.h"
#include "ctl/ctlcouponrevoke.h"
#include "ctl/ctlcouponshow.h"
#include "ctl/ctlcouponstatus.h"
#include "ctl/ctlorder.h"
#include "ctl/ctlordercancel.h"
#include "ctl/ctlcouponarchive.h"
#include "ctl/ctlcouponwarmup.h"
#include "ctl/ctlout.h"
#include "ctl/ctlrun.h"
#include "ctl/ctlstats.h"
#include "ctl/ctlverify.h"
#include "common/log.h"
#include "common/luascript.h"

extern char **environ;

struct ctl_command {
    const char *name;       /* the command words, "coupon create" */
    ctlrun_handler handler;
    const char *usage;      /* arguments, for the help text and usage errors */
};

static const struct ctl_command ctl_commands[] = {
    { "config get", ctlconfig_get, "KEY" },
    { "config check", ctlconfig_check, "" },
    { "coupon create", ctlcouponcreate_run,
      "--name N --type CASH|DISCOUNT|GIFT [--amount 10.00] [--rate 0.85] [--min-order 100.00] "
      "[--max-discount 50.00] --total N --start T --end T" },
    { "coupon grant", ctlcoupongrant_run, "--coupon ID --user UID [--ref REF]" },
    { "coupon revoke", ctlcouponrevoke_run, "USERCOUPON_ID [--reason TEXT]" },
    { "coupon show", ctlcouponshow_run, "ID" },
    { "coupon warmup", ctlcouponwarmup_run, "ID" },
    { "coupon deactivate", ctlcouponstatus_deactivate, "ID" },
    { "coupon activate", ctlcouponstatus_activate, "ID" },
    { "coupon archive", ctlcouponarchive_run, "ID" },
    { "activity create", ctlactivitycreate_run,
      "--coupon ID --stock N --start T --end T [--name N] [--buckets B] [--per-user N]" },
    { "activity warmup", ctlactivitywarmup_run, "ID" },
    { "activity update", ctlactivityupdate_run,
      "ID [--name N] [--start T] [--end T] [--stock +N|-N|N] [--per-user N]" },
    { "activity cancel", ctlactivitycancel_run, "ID" },
    { "activity show", ctlactivityshow_run, "ID" },
    { "activity archive", ctlactivityarchive_run, "ID" },
    { "ban add", ctlbanadd_run,
      "(--user UID | --ip ADDR[/PREFIX]) [--activity ID] (--for DURATION | --until T) [--reason TEXT]" },
    { "ban remove", ctlbanremove_run, "ID" },
    { "ban list", ctlbanlist_run, "[--activity ID] [--all]" },
    { "ban sync", ctlbansync_run, "" },
    { "order show", ctlorder_show_run, "ORDER_NO" },
    { "order cancel", ctlordercancel_run, "ORDER_NO [--reason TEXT]" },
    { "order list", ctllist_orders_run,
      "--activity ID [--status SUCCESS|CANCELLED|FAILED] [--user UID] [--after ID] [--limit N] "
      "[--format table|json|csv]" },
    { "coupon list", ctllist_coupons_run, "[--status S] [--after ID] [--limit N] [--format table|json|csv]" },
    { "activity list", ctllist_activities_run,
      "[--coupon ID] [--status S] [--after ID] [--limit N] [--format table|json|csv]" },
    { "audit list", ctllist_audit_run, "[--before ID] [--limit N] [--format table|json|csv]" },
    { "order find", ctlorder_find_run, "--activity ID --user UID" },
    { "verify", ctlverify_run, "ACTIVITY_ID" },
    { "stats", ctlstats_run, "" },
};

#define CTL_NCOMMANDS (sizeof(ctl_commands) / sizeof(ctl_commands[0]))

static void ctl_usage(FILE *out)
{
    fprintf(out, "usage: seckillctl [-c FILE] [--set key=value] [--json] COMMAND ...\n\ncommands:\n");
    for (size_t i = 0; i < CTL_NCOMMANDS; i++)
        fprintf(out, "  %s%s%s\n", ctl_commands[i].name, ctl_commands[i].usage[0] ? " " : "",
                ctl_commands[i].usage);
    fprintf(out,
            "\nT is ISO-8601 (2026-12-01T20:00:00, optional .sss, Z or +08:00; local time\n"
            "without an offset), now, or relative: +30s, +10m, +2h, +1d (also -N).\n"
            "DURATION is a number and s, m, h or d: 30m, 2h, 7d.\n"
            "Exit status: 0 done, 1 operation or check failed, 2 bad command line.\n");
}

/* How many words of argv (from index 1) name the command, or 0 when it matches none. */
static int ctl_match(const struct ctl_command *cmd, int argc, char **argv)
{
    const char *p = cmd->name;
    int i = 1;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (i >= argc || strlen(argv[i]) != n || strncmp(argv[i], p, n) != 0)
            return 0;
        i++;
        p += n;
        if (*p == ' ')
            p++;
    }
    return i - 1;
}

/* The first argument that is not -c FILE / --set K=V: the command word, or NULL. */
static const char *ctl_first_word(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0 ||
            strcmp(argv[i], "--set") == 0) {
            i++;
            continue;
        }
        return argv[i];
    }
    return NULL;
}

static bool ctl_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    log_set_name("seckillctl");
    struct ctlrun ctl;
    memset(&ctl, 0, sizeof(ctl));

    /* --json is global and may come anywhere. */
    int out = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            ctl.json = true;
        else
            argv[out++] = argv[i];
    }
    argc = out;
    argv[argc] = NULL;

    const char *first = ctl_first_word(argc, argv);
    if (!first || strcmp(first, "help") == 0 || (first[0] == '-' && ctl_wants_help(argc, argv))) {
        ctl_usage(first ? stdout : stderr);
        return first ? CTLRUN_OK : CTLRUN_USAGE;
    }

    config_init(&ctl.cfg);
    char err[CONFIG_ERR_LEN];
    argc = config_from_args(&ctl.cfg, argc, argv, environ, err, sizeof(err));
    if (argc < 0) {
        fprintf(stderr, "seckillctl: %s\n", err);
        config_free(&ctl.cfg);
        /* A config that does not load is what `config check` exists to report. */
        return strcmp(first, "config") == 0 ? CTLRUN_FAIL : CTLRUN_USAGE;
    }
    enum log_level level;
    if (log_parse_level(ctl.cfg.log_level, &level) == 0)
        log_set_level(level);
    enum logline_format format;
    if (logline_parse_format(ctl.cfg.log_format, &format) == 0)
        log_set_format(format);

    const struct ctl_command *cmd = NULL;
    int words = 0;
    for (size_t i = 0; i < CTL_NCOMMANDS && !cmd; i++) {
        words = ctl_match(&ctl_commands[i], argc, argv);
        if (words > 0)
            cmd = &ctl_commands[i];
    }
    int rc;
    if (!cmd) {
        char known[256] = "";
        for (size_t i = 0; i < CTL_NCOMMANDS; i++) {
            size_t n = strcspn(ctl_commands[i].name, " ");
            if (strlen(argv[1]) == n && strncmp(argv[1], ctl_commands[i].name, n) == 0 &&
                ctl_commands[i].name[n] == ' ') {
                size_t used = strlen(known);
                snprintf(known + used, sizeof(known) - used, "%s%s", used ? ", " : "",
                         ctl_commands[i].name + n + 1);
            }
        }
        if (known[0] && argc > 2)
            rc = ctlout_usage_error(NULL, "%s: unknown command '%s' (one of: %s)", argv[1], argv[2], known);
        else if (known[0])
            rc = ctlout_usage_error(NULL, "%s: missing command (one of: %s)", argv[1], known);
        else
            rc = ctlout_usage_error(NULL, "unknown command '%s' (try: seckillctl help)", argv[1]);
    } else if (ctl_wants_help(argc, argv)) {
        printf("usage: seckillctl %s %s\n", cmd->name, cmd->usage);
        rc = CTLRUN_OK;
    } else {
        ctl.command = cmd->name;
        ctl.usage = cmd->usage;
        rc = cmd->handler(&ctl, argc - 1 - words, argv + 1 + words);
        ctlaudit_record(&ctl, cmd->name, argc - 1 - words, argv + 1 + words, rc);
    }

    if (fflush(stdout) != 0 && rc == CTLRUN_OK)
        rc = CTLRUN_FAIL;
    ctlrun_close(&ctl);
    mysql_library_end();
    return rc;
}
