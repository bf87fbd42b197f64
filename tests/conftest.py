"""Shared by the test folders. `make test` runs tests/soc and tests/system in
one pytest run on TEST_JOBS workers (pytest-xdist, --dist loadgroup): a
test marked long(MINUTES) (its wall time on one host core, roughly)
starts first, the longest first, so that the last minutes are not one
worker's long test alone; tests that share a module fixture carry an
xdist_group and stay on one worker.

A test marked slow is a long run: the whole quick evaluation, Linux on the
RTL SoC, runs at scale, a second check of what another test already checks
once. make test leaves them out (-m "not slow"), to stay within its budget;
make test-long runs them, and CI (.ci/run) runs both."""


def pytest_configure(config):
    config.addinivalue_line("markers", "long(minutes): takes minutes; scheduled first, "
                            "the longest first")
    config.addinivalue_line("markers", "slow: a long run; make test-long runs it, make test "
                            "does not")


def minutes(item):
    m = item.get_closest_marker("long")
    return (m.args[0] if m.args else 1) if m else 0


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: -minutes(item))
