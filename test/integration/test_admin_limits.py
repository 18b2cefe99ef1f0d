"""seckill-admin's listener against slow clients (docs/protection.md, "HTTP limits";
docs/administration.md): the gateway's limits with the gateway's keys. Each admin here
starts with the descriptor limit a service manager gives by default, a soft limit of
1,024, as the outside reproduction did; the slow clients send one header byte now and
then and never a whole request, and carry no token.

- It raises the soft limit, so 1,100 slow clients leave room for an authorized request,
  answered at once, with the admin's CPU near idle.
- Where the hard limit is 1,024 too, descriptors run out: accepting pauses instead of
  retrying accept() on one core, and the slow clients are closed at the header deadline,
  after which the admin answers again.
- A slow client is closed http.header-timeout-ms after its accept, not before."""

import os
import resource
import time

import pytest

from adminhttp import Admin
from stack import free_port, poll_until
from dribble import Dribblers, cpu_seconds, raise_nofile

TOKEN = "t0k3n-for-the-admin-limit-tests-0123456789"
SERVICE_SOFT_LIMIT = 1024
SLOW_CLIENTS = 1100
# Timer and scheduling slack of an ASan build on a busy two-core machine.
LATE = 1.0
# Of one core, while the slow clients dribble: libevent's accept loop at EMFILE took 89 %.
CPU_BUSY = 0.4


def settings(**extra):
    return {"admin.port": free_port(), "admin.token": TOKEN, **extra}


def cpu_share(pid, seconds):
    before, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)  # a measuring window, not a wait for a state
    return (cpu_seconds(pid) - before) / (time.monotonic() - t0)


@pytest.fixture(autouse=True)
def descriptors():
    raise_nofile(SLOW_CLIENTS + 200)


def test_slow_clients_leave_the_admin_usable(admin_with):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    admin = admin_with(settings(), nofile=(SERVICE_SOFT_LIMIT, hard))
    api = Admin(f"http://127.0.0.1:{admin.port}", TOKEN)
    slow = Dribblers(admin.port, SLOW_CLIENTS, every=1.0)
    try:
        started = time.monotonic()
        r = api.get("/admin/stats", timeout=5)
        took = time.monotonic() - started
        assert r.code == 200 and r["success"], repr(r)
        assert took < 1.0, f"GET /admin/stats took {took:.2f} s behind {SLOW_CLIENTS} slow clients"
        share = cpu_share(admin.pid, 2.0)
        assert share < CPU_BUSY, f"the admin used {share:.0%} of a core while slow clients dribbled"
        assert slow.open_count() == SLOW_CLIENTS, "slow clients were closed before their header deadline"
    finally:
        slow.finish()


def test_out_of_descriptors_pauses_accepting_until_the_header_deadline(admin_with):
    header_timeout_ms = 3000
    limit = 256
    admin = admin_with(settings(**{"http.header-timeout-ms": header_timeout_ms}), nofile=(limit, limit))
    api = Admin(f"http://127.0.0.1:{admin.port}", TOKEN)
    # More than the admin has descriptors; those it cannot accept wait in its backlog.
    slow = Dribblers(admin.port, limit + 50, every=1.0)
    try:
        poll_until(lambda: len(os.listdir(f"/proc/{admin.pid}/fd")) >= limit - 4, 5, "the admin out of descriptors")
        share = cpu_share(admin.pid, 1.0)
        assert share < CPU_BUSY, f"the admin used {share:.0%} of a core with no descriptor left"
        assert "accepting paused" in admin.log_text(since_start=True)
        # The slow clients are closed at their deadline, those of the backlog one deadline
        # later; then the admin answers again.
        poll_until(lambda: slow.open_count() == 0, 2 * header_timeout_ms / 1000 + 3 * LATE,
                   "every slow client closed")
        r = api.get("/admin/stats", timeout=5)
        assert r.code == 200 and r["success"], repr(r)
    finally:
        slow.finish()


def test_a_slow_client_is_closed_at_the_header_deadline(admin_with):
    header_timeout_ms = 1000
    admin = admin_with(settings(**{"http.header-timeout-ms": header_timeout_ms}))
    slow = Dribblers(admin.port, 5, every=0.2)
    try:
        poll_until(lambda: slow.open_count() == 0, header_timeout_ms / 1000 + 3 * LATE, "the slow clients closed")
        lifetimes = slow.lifetimes()
        assert all(header_timeout_ms / 1000 - 0.05 <= t <= header_timeout_ms / 1000 + LATE for t in lifetimes), \
            lifetimes
    finally:
        slow.finish()
