"""Fixtures of the chaos suite (see chaoslib.py and docs/chaos.md).

Needs the backing services of the stack (scripts/stack.sh up --services-only, or
test/chaos/run.sh which starts them when they are down) and the binaries
(SECKILL_BIN, as in the integration suite). Each scenario stops, freezes or kills one of
them on purpose and brings it back; a fixture puts every service back up after each
scenario, whatever happened.
"""

import pytest

import chaoslib
from strictoutcomes import pytest_runtest_makereport  # noqa: F401 - a hook: xpass fails

RESULTS = []


@pytest.fixture(scope="session")
def services():
    """The integration suite's check that the services answer and the binaries exist,
    then the chaos topic and its dead-letter topic (created once, kept)."""
    svc = chaoslib.check_services()
    stack = chaoslib.Stack()
    topic_conf = chaoslib.OUT / "topics.conf"
    chaoslib.OUT.mkdir(parents=True, exist_ok=True)
    chaoslib.stacklib.write_conf(topic_conf, chaoslib.CHAOS_CONF)
    stack.sh("kafka", "create-topics", conf=topic_conf)
    RESULTS.clear()
    return dict(svc, stack=stack)


@pytest.fixture
def chaos(services):
    """Runs one scenario: chaos(Scenario)."""
    stack = services["stack"]
    stack.ensure_up()

    def run(sc):
        chaoslib.run(sc, stack, services["redis"], services["mysql"], RESULTS)

    yield run
    stack.ensure_up()


def pytest_terminal_summary(terminalreporter):
    chaoslib.terminal_summary(terminalreporter, "chaos", RESULTS)
