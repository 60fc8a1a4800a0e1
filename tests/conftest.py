"""The suite's configuration: the tests folder on ``sys.path`` (for the shared helpers), and
two causes of noise in the suite's output removed (nothing that a test or torch warns about
is hidden):

- torch's structured trace (the logger ``torch.__trace``, what ``TORCH_TRACE`` and
  ``ipycompile.capture()`` read) logs each event as an empty-message DEBUG record. pytest
  attaches its log capture to every non-propagating logger, so a failing test's "Captured
  log" section held hundreds of empty ``DEBUG torch.__trace:`` lines. Those records are
  machine data, not log text: pytest's capture handlers skip that one logger.
- At exit, IPython (the shells the tests start) clears its user namespace before Dynamo's
  cleanup hooks for code compiled in it run; each hook then fails to delete the global it
  installed there (``del scope["__builtins_dict___N"]``: a KeyError printed as "Exception
  ignored in ... ExactWeakKeyDictionary"). ``torch._dynamo.reset()`` at the end of the
  session frees the compiled code first, so the hooks run while the namespaces are whole.
"""

import logging
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))

TRACE_LOGGER = "torch.__trace"


class _NotTorchsTrace(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != TRACE_LOGGER


def pytest_sessionstart(session):
    # the logging plugin registers itself after the conftests' pytest_configure: here it exists
    plugin = session.config.pluginmanager.get_plugin("logging-plugin")
    for name in ("caplog_handler", "report_handler", "log_file_handler", "log_cli_handler"):
        handler = getattr(plugin, name, None)
        if isinstance(handler, logging.Handler):
            handler.addFilter(_NotTorchsTrace())


def pytest_sessionfinish(session, exitstatus):
    torch = sys.modules.get("torch")
    if torch is not None and "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
