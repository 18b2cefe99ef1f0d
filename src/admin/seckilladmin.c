/* seckill-admin's main: the admin HTTP API (admin.port) in a process of its own, over
 * the seckillctl commands (src/ctl), run by worker threads with their own MySQL and Redis
 * connections. It has no header: nothing calls into main. */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "admin/adminhttp.h"
#include "common/config.h"
#include "common/log.h"
#include "ctl/ctlrun.h"

extern char **environ;

/* Shutdown: stop accepting, let every command already read run to its end (none is cut
 * halfway) and answer it, then leave the loop once the answers are written. */
struct admin_drain {
    struct event_base *base;
    struct adminhttp *http;
    struct event *tick;
};

/* Time the loop keeps running after the last answer, to write it out. */
static const struct timeval admin_flush = { 0, 200 * 1000 };

static void on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct admin_drain *d = arg;
    if (adminhttp_pending(d->http) == 0) {
        event_del(d->tick);
        event_base_loopexit(d->base, &admin_flush);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct admin_drain *d = arg;
    if (evtimer_pending(d->tick, NULL))
        return;
    LOG_INFO("signal %d: finishing %zu requests", (int)sig, adminhttp_pending(d->http));
    adminhttp_stop_accepting(d->http);
    struct timeval every = { 0, 20 * 1000 };
    event_add(d->tick, &every);
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
    /* Before any thread: the workers' mysql_init would run it unlocked. */
    if (mysql_library_init(0, NULL, NULL) != 0) {
        LOG_ERROR("mysql_library_init failed");
        config_free(&ctl.cfg);
        return 1;
    }

    int status = 1;
    struct event_base *base = event_base_new();
    struct adminhttp *h = base ? adminhttp_new(base, &ctl.cfg, err, sizeof(err)) : NULL;
    if (!h) {
        LOG_ERROR("%s", base ? err : "out of memory");
    } else {
        struct admin_drain drain = { base, h, event_new(base, -1, EV_PERSIST, on_drain_tick, &drain) };
        struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, &drain);
        struct event *sigint = evsignal_new(base, SIGINT, on_signal, &drain);
        event_add(sigterm, NULL);
        event_add(sigint, NULL);
        LOG_INFO("ready: admin API on %s:%s (%lld workers)", ctl.cfg.admin_host, ctl.cfg.admin_port,
                 (long long)ctl.cfg.admin_workers);
        event_base_dispatch(base);
        event_free(drain.tick);
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
