/* seckill-admin's main: the admin HTTP API (admin.port) in a process of its own, over
 * the seckillctl commands (src/ctl) with their own MySQL and Redis connections. It has no
 * header: nothing calls into main. */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "admin/adminhttp.h"
#include "common/config.h"
#include "common/log.h"
#include "ctl/ctlrun.h"

extern char **environ;

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    /* A command runs to its end before the loop sees the signal: none is cut halfway. */
    event_base_loopbreak(arg);
}

int main(int argc, char **argv)
{
    log_set_name("seckill-admin");
    struct ctlrun ctl;
    memset(&ctl, 0, sizeof(ctl));
    config_init(&ctl.cfg);
    char err[CONFIG_ERR_LEN + 256];
    if (config_from_args(&ctl.cfg, argc, argv, environ, err, sizeof(err)) < 0) {
        fprintf(stderr, "seckill-admin: %s\n", err);
        config_free(&ctl.cfg);
        return 2;
    }
    if (config_admin_port(&ctl.cfg) == 0) {
        fprintf(stderr, "seckill-admin: admin.port: the admin API is off (0); set a port to serve it\n");
        config_free(&ctl.cfg);
        return 2;
    }
    enum log_level level;
    if (log_parse_level(ctl.cfg.log_level, &level) == 0)
        log_set_level(level);
    enum logline_format format;
    if (logline_parse_format(ctl.cfg.log_format, &format) == 0)
        log_set_format(format);
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    struct event_base *base = event_base_new();
    struct adminhttp *h = base ? adminhttp_new(base, &ctl, err, sizeof(err)) : NULL;
    if (!h) {
        LOG_ERROR("%s", base ? err : "out of memory");
    } else {
        struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, base);
        struct event *sigint = evsignal_new(base, SIGINT, on_signal, base);
        event_add(sigterm, NULL);
        event_add(sigint, NULL);
        LOG_INFO("ready: admin API on %s:%s", ctl.cfg.admin_host, ctl.cfg.admin_port);
        event_base_dispatch(base);
        event_free(sigterm);
        event_free(sigint);
        LOG_INFO("stopped");
        status = 0;
    }
    adminhttp_free(h);
    if (base)
        event_base_free(base);
    ctlrun_close(&ctl);
    mysql_library_end();
    return status;
}
