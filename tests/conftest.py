"""No silent skip: every test `make test` runs either runs or fails.

A skipped test fails the run unless tests/skips_allowed.yml lists it (its node id, or a prefix of it ending in "::" or
".py") with the reason it may be skipped. Every skip is printed at the end, allowed or not, with its reason.
"""

import os

import yaml

ALLOWED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "skips_allowed.yml")
_SKIPS = []


def allowed_skips(path=ALLOWED_FILE):
    """{node id or prefix: reason}; an entry without a reason is refused."""
    with open(path) as f:
        entries = yaml.safe_load(f) or []
    out = {}
    for entry in entries:
        if not isinstance(entry, dict) or not str(entry.get("test", "")).strip() or not str(
                entry.get("reason", "")).strip():
            raise ValueError("%s: every entry needs a test and a reason: %r" % (path, entry))
        out[entry["test"]] = entry["reason"]
    return out


def is_allowed(nodeid, allowed):
    return any(nodeid == test or (test.endswith(("::", ".py")) and nodeid.startswith(test)) for test in allowed)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPS.append((report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus):
    allowed = allowed_skips()
    unallowed = [(n, r) for n, r in _SKIPS if not is_allowed(n, allowed)]
    if unallowed and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if not _SKIPS:
        return
    allowed = allowed_skips()
    terminalreporter.section("skips (tests/skips_allowed.yml)")
    for nodeid, reason in _SKIPS:
        verdict = "allowed" if is_allowed(nodeid, allowed) else "NOT ALLOWED"
        terminalreporter.line("%s %s: %s" % (verdict, nodeid, reason))
    unallowed = sum(1 for n, _r in _SKIPS if not is_allowed(n, allowed))
    if unallowed:
        terminalreporter.line("%d skipped test(s) not on the allow-list: the run fails" % unallowed, red=True)
