"""A hook both suites' conftests import: a test marked xfail that passes fails, even with
strict=False on its mark (xfail_strict in test/pytest.ini covers the rest). A JUnit report
shows such a pass as a plain pass, so scripts/test.sh could not count it otherwise."""

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.passed and hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        rep.longrepr = f"[XPASS] {item.nodeid}: marked xfail ({rep.wasxfail}) but passed"
        del rep.wasxfail
