/* The admin's workers: a command that does not end holds back no other, every job comes
 * back once through the loop with the handler's outcome, and freeing the pool lets the
 * commands still running or queued finish and hands them back. The handlers here touch no
 * backend, so no connection is opened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <mysql.h>

#include "admin/adminpool.h"
#include "common/config.h"

static atomic_bool release_slow;
static int returned;

static int slow_handler(struct ctlrun *ctl, int argc, char **argv)
{
    (void)ctl;
    (void)argc;
    (void)argv;
    while (!atomic_load(&release_slow)) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    return CTLRUN_OK;
}

static int quick_handler(struct ctlrun *ctl, int argc, char **argv)
{
    (void)ctl;
    (void)argc;
    (void)argv;
    return CTLRUN_USAGE;
}

static void on_done(struct adminpool_job *job)
{
    returned++;
    *(int *)job->arg += 1;
}

/* Runs the loop until *count reaches want or about two seconds pass. */
static void loop_until(struct event_base *base, const int *count, int want)
{
    for (int i = 0; i < 2000 && *count < want; i++) {
        struct timeval ms = { 0, 1000 };
        event_base_loopexit(base, &ms);
        event_base_dispatch(base);
    }
}

static void test_a_long_command_holds_back_no_other(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    struct event_base *base = event_base_new();
    char err[256];
    struct adminpool *p = adminpool_new(base, &cfg, 2, on_done, err, sizeof(err));
    assert_non_null(p);
    atomic_store(&release_slow, false);
    returned = 0;
    int slow_back = 0, quick_back = 0;
    struct adminpool_job slow = { .command = "slow", .handler = slow_handler, .arg = &slow_back };
    struct adminpool_job quick[3];
    adminpool_submit(p, &slow);
    for (int i = 0; i < 3; i++) {
        quick[i] = (struct adminpool_job){ .command = "quick", .handler = quick_handler, .arg = &quick_back };
        adminpool_submit(p, &quick[i]);
    }
    assert_int_equal(adminpool_pending(p), 4);

    loop_until(base, &quick_back, 3);
    assert_int_equal(quick_back, 3);
    assert_int_equal(slow_back, 0);
    assert_int_equal(adminpool_pending(p), 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(quick[i].outcome, CTLCALL_INVALID);

    atomic_store(&release_slow, true);
    loop_until(base, &slow_back, 1);
    assert_int_equal(slow_back, 1);
    assert_int_equal(slow.outcome, CTLCALL_DONE);
    assert_int_equal(adminpool_pending(p), 0);
    assert_int_equal(returned, 4);
    adminpool_free(p);
    event_base_free(base);
    config_free(&cfg);
}

static void test_free_finishes_what_was_submitted(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    struct event_base *base = event_base_new();
    char err[256];
    struct adminpool *p = adminpool_new(base, &cfg, 1, on_done, err, sizeof(err));
    assert_non_null(p);
    atomic_store(&release_slow, true);
    returned = 0;
    int back = 0;
    struct adminpool_job jobs[5];
    for (int i = 0; i < 5; i++) {
        jobs[i] = (struct adminpool_job){ .command = "quick", .handler = i % 2 ? quick_handler : slow_handler,
                                          .arg = &back };
        adminpool_submit(p, &jobs[i]);
    }
    adminpool_free(p);  /* no loop ran: every job comes back from here */
    assert_int_equal(back, 5);
    assert_int_equal(returned, 5);
    event_base_free(base);
    config_free(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_long_command_holds_back_no_other),
        cmocka_unit_test(test_free_finishes_what_was_submitted),
    };
    mysql_library_init(0, NULL, NULL);  /* as seckill-admin's main does before its workers */
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    mysql_library_end();
    return failed;
}
