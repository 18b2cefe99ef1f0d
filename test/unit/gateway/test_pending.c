/* pending: a request is answered exactly once — by its owner, at its deadline, or at
 * shutdown — and never after its owner cleared it. Requests are stand-in pointers: the
 * answer function under test records them instead of sending anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <string.h>

#include "gateway/pending.h"

#define TIMEOUT_MS 1000

static char fake[8];  /* fake + i stands for request i */
#define REQ(i) ((struct evhttp_request *)(void *)(fake + (i)))

static struct {
    struct evhttp_request *req;
    bool closing;
} answers[16];
static size_t answered;

static void record(struct evhttp_request *req, const char *message, bool closing)
{
    assert_non_null(message);
    assert_true(answered < 16);
    answers[answered].req = req;
    answers[answered].closing = closing;
    answered++;
}

static struct event_base *base;
static struct pending_set *set;

static int setup(void **state)
{
    (void)state;
    answered = 0;
    memset(answers, 0, sizeof(answers));
    base = event_base_new();
    set = pending_set_new(base, TIMEOUT_MS, "test deadline", record);
    return base && set ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pending_set_free(set);
    event_base_free(base);
    return 0;
}

static void test_deadline_answers_once(void **state)
{
    (void)state;
    struct pending p;
    struct evhttp_request *http = REQ(0);
    pending_start(set, &p, &http, NULL);
    assert_int_equal(pending_expire_due(set, p.deadline_us - 1), 0);
    assert_int_equal(answered, 0);
    assert_int_equal(pending_expire_due(set, p.deadline_us), 1);
    assert_int_equal(answered, 1);
    assert_ptr_equal(answers[0].req, REQ(0));
    assert_false(answers[0].closing);
    assert_null(http);  /* the owner's late callback finds nothing to answer */
    assert_int_equal(pending_expire_due(set, p.deadline_us + 10 * 1000000), 0);
    assert_int_equal(pending_close(set), 0);
    assert_int_equal(answered, 1);
    assert_int_equal(pending_timeouts(set), 1);
    pending_end(&p);
    pending_end(&p);  /* twice is harmless */
    assert_int_equal(pending_count(set), 0);
}

static void test_owner_answer_wins(void **state)
{
    (void)state;
    struct pending p;
    struct evhttp_request *http = REQ(1);
    pending_start(set, &p, &http, NULL);
    http = NULL;  /* the owner replied */
    assert_int_equal(pending_expire_due(set, p.deadline_us), 0);
    assert_int_equal(pending_close(set), 0);
    assert_int_equal(answered, 0);
    pending_end(&p);
    assert_int_equal(pending_count(set), 0);
}

static void test_ended_is_never_answered(void **state)
{
    (void)state;
    struct pending p;
    struct evhttp_request *http = REQ(2);
    pending_start(set, &p, &http, NULL);
    assert_int_equal(pending_count(set), 1);
    pending_end(&p);
    assert_int_equal(pending_count(set), 0);
    assert_int_equal(pending_expire_due(set, p.deadline_us + 1), 0);
    assert_int_equal(pending_close(set), 0);
    assert_int_equal(answered, 0);
}

static struct pending *hooked;
static void hook(struct pending *p) { hooked = p; }

static void test_hook_decides_and_shutdown_still_answers(void **state)
{
    (void)state;
    struct pending p;
    struct evhttp_request *http = REQ(3);
    hooked = NULL;
    pending_start(set, &p, &http, hook);
    assert_int_equal(pending_expire_due(set, p.deadline_us), 1);
    assert_ptr_equal(hooked, &p);
    assert_int_equal(answered, 0);
    assert_ptr_equal(http, REQ(3));  /* still the owner's to answer */
    hooked = NULL;
    assert_int_equal(pending_expire_due(set, p.deadline_us + 10 * 1000000), 0);
    assert_null(hooked);  /* the hook runs once */
    assert_int_equal(pending_close(set), 1);
    assert_int_equal(answered, 1);
    assert_ptr_equal(answers[0].req, REQ(3));
    assert_true(answers[0].closing);
    assert_null(http);
    pending_end(&p);
    assert_int_equal(pending_count(set), 0);
}

static void test_deadlines_in_start_order(void **state)
{
    (void)state;
    struct pending a, b;
    struct evhttp_request *ha = REQ(4), *hb = REQ(5);
    pending_start(set, &a, &ha, NULL);
    pending_start(set, &b, &hb, NULL);
    assert_true(b.deadline_us >= a.deadline_us);
    assert_int_equal(pending_expire_due(set, a.deadline_us), b.deadline_us == a.deadline_us ? 2 : 1);
    assert_null(ha);
    assert_int_equal(pending_expire_due(set, b.deadline_us), b.deadline_us == a.deadline_us ? 0 : 1);
    assert_null(hb);
    assert_int_equal(answered, 2);
    assert_ptr_equal(answers[0].req, REQ(4));
    assert_ptr_equal(answers[1].req, REQ(5));
    pending_end(&a);
    pending_end(&b);
}

static void test_close_answers_waiting_and_later_starts(void **state)
{
    (void)state;
    struct pending a, b, c;
    struct evhttp_request *ha = REQ(6), *hb = REQ(7), *hc = REQ(0);
    pending_start(set, &a, &ha, NULL);
    pending_start(set, &b, &hb, NULL);
    hb = NULL;  /* answered by its owner */
    assert_int_equal(pending_close(set), 1);
    assert_null(ha);
    assert_int_equal(answered, 1);
    assert_ptr_equal(answers[0].req, REQ(6));
    assert_true(answers[0].closing);
    pending_start(set, &c, &hc, NULL);  /* a request arriving after the close */
    assert_null(hc);
    assert_int_equal(answered, 2);
    assert_true(answers[1].closing);
    pending_end(&c);
    pending_end(&a);
    pending_end(&b);
    assert_int_equal(pending_count(set), 0);
}

/* The set's own timer, on a loop: the oldest request is answered at its deadline. */
static void test_timer_fires_at_the_deadline(void **state)
{
    (void)state;
    struct pending_set *quick = pending_set_new(base, 10, "test deadline", record);
    assert_non_null(quick);
    struct pending p;
    struct evhttp_request *http = REQ(1);
    pending_start(quick, &p, &http, NULL);
    while (http)
        assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
    assert_int_equal(answered, 1);
    assert_ptr_equal(answers[0].req, REQ(1));
    pending_end(&p);
    pending_set_free(quick);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deadline_answers_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner_answer_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ended_is_never_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hook_decides_and_shutdown_still_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlines_in_start_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_answers_waiting_and_later_starts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timer_fires_at_the_deadline, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
