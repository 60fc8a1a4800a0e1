"""The suite's configuration: the tests folder on ``sys.path`` (for the shared helpers), the
fixtures the modules share, two settings of the pytest processes only, never of the processes the
tests start (cyclic garbage collected less often, below; torch's guard-latency profile skipped,
``no_guard_latency_profile``), and two causes of noise in the suite's output removed (nothing
that a test or torch warns about is hidden):

- torch's structured trace (the logger ``torch.__trace``, what ``TORCH_TRACE`` and
  ``ipycompile.capture()`` read) logs each event as an empty-message DEBUG record. pytest
  attaches its log capture to every non-propagating logger, so a failing test's "Captured
  log" section held hundreds of empty ``DEBUG torch.__trace:`` lines. Those records are
  machine data, not log text: pytest's capture handlers skip that one logger.
- At exit, IPython (the shells the tests start) clears its user namespace before Dynamo's
  cleanup hooks for code compiled in it run (``torch._dynamo.utils.CleanupManager``: when
  a compiled code object is freed, the globals Dynamo installed for it are deleted); each
  hook then fails to delete its global (``del scope["__builtins_dict___N"]``: a KeyError
  printed as "Exception ignored in ... ExactWeakKeyDictionary"). At the end of the
  session, ``ipycompile.reset()`` (``torch._dynamo.reset()``) frees the compiled code,
  and the hooks of code that is still alive are run then, while the namespaces are whole.
"""

import gc
import logging
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

# The suite's own processes (pytest and its workers) collect cyclic garbage less often: a worker holds
# torch, transformers and every module's compiled code (about a million tracked objects), and each full
# collection walks them all. On the modules that compile most this is 5% of their CPU (the young
# generation at 50,000 allocations, not 700). A test that needs garbage gone calls gc.collect(), as
# before; the processes the tests start (kernels, command lines, ranks) keep Python's defaults.
gc.set_threshold(50_000, 20, 20)

TRACE_LOGGER = "torch.__trace"


class _NotTorchsTrace(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != TRACE_LOGGER


#: The suite's longest modules, started first (in this order) when ``make test`` spreads the
#: modules over the cores (``pytest -n 2 --dist loadscope``: a module's tests stay in one worker,
#: with its shared servers and compiled models, and workers take modules in collection order).
#: Started last, one of them would run alone at the end while the other worker idles. The tutorials
#: (two kernels at a time) go first, and beside them the modules that mostly wait (on a browser, a
#: server, a sleeping cell: each half idle or more), whose idle core the tutorials' kernels then use;
#: the modules that compute come after. Of the waiting ones, test_progress.py (cells that sleep) goes
#: first: after the browser modules it ran beside the tutorials' last notebook alone, and the machine
#: was idle 52 core-seconds of a fresh-cache run on two cores; first, 30.
LONG_MODULES = (
    "test_tutorials.py", "test_progress.py", "test_saved_notebook.py", "test_browser.py", "test_doors.py",
    "test_gather.py", "test_doctor_corpus_real.py", "test_doctor_breaks.py", "test_models.py", "test_verify_fixes.py",
    "test_trace_cli.py", "test_trace_tlparse.py", "test_trace_ranks.py", "test_sweep.py",
)


def pytest_collection_modifyitems(session, config, items):
    first = {name: i for i, name in enumerate(LONG_MODULES)}
    # a stable sort: the listed modules first, the rest in pytest's own order
    items.sort(key=lambda item: first.get(item.path.name, len(first)))


def pytest_sessionstart(session):
    # the logging plugin registers itself after the conftests' pytest_configure: here it exists
    plugin = session.config.pluginmanager.get_plugin("logging-plugin")
    for name in ("caplog_handler", "report_handler", "log_file_handler", "log_cli_handler"):
        handler = getattr(plugin, name, None)
        if isinstance(handler, logging.Handler):
            handler.addFilter(_NotTorchsTrace())


def pytest_sessionfinish(session, exitstatus):
    import gc

    if "torch._dynamo" not in sys.modules:
        return
    ipycompile = sys.modules.get("ipycompile")
    if ipycompile is not None:
        ipycompile.reset()  # Dynamo's reset, and the compiled cells ipycompile keeps
    else:
        sys.modules["torch"]._dynamo.reset()
    gc.collect()
    # Some compiled code outlives the reset (nothing in Python refers to it, yet it is not
    # freed before the interpreter exits): run Dynamo's cleanup for it now, while the
    # namespaces it installed names in are whole, and drop the hooks that would run at exit.
    manager = sys.modules["torch._dynamo.utils"].CleanupManager.instance
    for hooks in list(manager.values.values()):
        for hook in hooks:
            try:
                hook()
            except KeyError:  # the name is gone already (its namespace was cleared)
                pass
    manager.clear()


import pytest  # noqa: E402


@pytest.fixture
def shows_html():
    """A test that reads a report's HTML bundle: where an IPython shell exists in this process
    (another test's terminal-style test shell, whose ``text/html`` formatter is off), HTML is
    turned on for the test, as a notebook frontend has it; a report gives no HTML to a shell
    that shows none (see ``ipycompile.views.notebook_bundle``)."""
    try:
        from IPython import get_ipython
    except ImportError:
        yield
        return
    shell = get_ipython()
    if shell is None:
        yield
        return
    types = list(shell.display_formatter.active_types)
    shell.display_formatter.active_types = [*types, "text/html"]
    try:
        yield
    finally:
        shell.display_formatter.active_types = types


# -- every page and report the suite writes: links with their targets, reports that load back the same ----------
_WRITTEN: dict[str, list[str]] = {}  # path -> its problems, for the writes of the running test


def _check_written(path: str) -> None:
    import written_checks

    try:
        _WRITTEN[path] = written_checks.problems(path)
    except Exception as exc:  # noqa: BLE001 - a check that fails is a problem of the write, reported with the test
        _WRITTEN[path] = [f"{path}: the check failed: {type(exc).__name__}: {exc}"]


@pytest.fixture(autouse=True)
def every_page_and_report_written_is_whole(request):
    """Each page or report the test writes (through ``report.files.atomic_writer``, in this process,
    or a page of ours under its ``tmp_path``, from a command line) is checked when it is written or
    when the test ends (``tests/written_checks.py``): a problem fails the test at its teardown."""
    import written_checks

    from ipycompile.report import files

    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    _WRITTEN.clear()
    files.WRITTEN_HOOKS.append(_check_written)
    try:
        yield
    finally:
        files.WRITTEN_HOOKS.remove(_check_written)
    if tmp is not None:
        for path in written_checks.unchecked_pages(tmp, set(_WRITTEN)):
            _check_written(path)
    found = [p for problems in _WRITTEN.values() for p in problems]
    _WRITTEN.clear()
    if found:
        pytest.fail("pages or reports written with problems:\n" + "\n".join(found[:20]), pytrace=False)


# -- the fixtures the modules share ------------------------------------------------------------
@pytest.fixture(scope="module")
def ip():
    """The process's one real IPython shell with ``%load_ext ipycompile`` and ``import torch`` run, for
    the module's tests (``tests/shells.py``); unloaded when the module ends. Names a test defines stay
    in its namespace: a test that needs them gone removes them."""
    import shells

    with shells.loaded() as shell:
        shell.run_cell("import torch")
        yield shell


@pytest.fixture
def clean_dynamo():
    """Dynamo reset before and after the test: nothing compiled by another test is reused or counted."""
    import torch

    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Debian's, through Playwright) for the worker's browser modules: each test
    opens a context of its own and closes it (``tests/browser_helpers.py``)."""
    from browser_helpers import chromium, require_browser

    require_browser()
    with chromium() as b:
        yield b


#: The modules that check torch itself (what it writes, what it compiles, against tlparse): torch runs
#: there exactly as it does for a user, its guard-latency profile included.
TORCH_AS_IS = ("test_capture.py", "test_models.py", "test_recorded_truth.py", "test_tlparse_truth.py",
               "test_gpu_truth.py", "test_roofline_truth.py")


@pytest.fixture(scope="module", autouse=True)
def no_guard_latency_profile(request):
    """Dynamo compiles a module's tests without torch's guard-latency profile: after building a frame's
    guards, torch times one check of them behind a cache flush (``profile_guard_manager``, a 32 MB buffer
    written afresh: ~8,000 page faults, 0.1-0.2 s of a loaded machine's wall time per compile) for its own
    metric, ``guard_latency_us``, which ipycompile does not read. The guards are built, checked and used as
    before; small compiles cost about half (on the modules that compile most, 18% less wall time and 60%
    less system time). Restored when the module ends. Not in :data:`TORCH_AS_IS`, nor in the processes the
    tests start (kernels, command lines, ranks): there torch is the user's."""
    import torch._dynamo.guards as guards

    timed = getattr(guards, "profile_guard_manager", None)
    if timed is None or request.path.name in TORCH_AS_IS:  # a torch without the profile, or a module that checks torch
        yield
        return
    guards.profile_guard_manager = lambda *args: 0.0
    try:
        yield
    finally:
        guards.profile_guard_manager = timed
