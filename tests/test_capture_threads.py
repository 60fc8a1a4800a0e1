"""Captures never mix: each sees the compiles of its own thread while it is open, closing
one never removes another's listener, and once all are closed torch's trace logger (and
the loggers and callbacks of ``capture/hooks.py``) are exactly as they were."""

from __future__ import annotations

import logging
import threading

import pytest
import torch

import ipycompile
from ipycompile.capture.hooks import CUDAGRAPH_LOGGERS

TRACE = logging.getLogger("torch.__trace")


def _state():
    loggers = [TRACE] + [logging.getLogger(n) for n in CUDAGRAPH_LOGGERS]
    logging_state = [(lg.level, list(lg.handlers), lg.propagate, lg.disabled) for lg in loggers]
    from torch._dynamo import callback_handler

    callbacks = (len(callback_handler.start_callbacks), len(callback_handler.end_callbacks))
    return logging_state, callbacks


def _named(name):
    """A fresh function called ``name`` (its code name is what the report shows)."""
    namespace = {"torch": torch}
    exec(f"def {name}(x):\n    return torch.sin(x) * 2 + 1\n", namespace)
    return torch.compile(namespace[name], backend="eager")


def _functions(cap):
    return sorted(c.function for c in cap.report.compiles)


def _in_thread(target, *args):
    errors = []

    def run():
        try:
            target(*args)
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    t = threading.Thread(target=run)
    t.start()
    return t, errors


def _join(*pairs):
    for t, errors in pairs:
        t.join(timeout=120)
        assert not t.is_alive()
        if errors:
            raise errors[0]


def test_two_threads_at_once_each_see_only_their_own_compiles():
    torch._dynamo.reset()
    before = _state()
    barrier = threading.Barrier(2, timeout=60)
    caps = {}

    def work(tag):
        f, g = _named(f"{tag}_one"), _named(f"{tag}_two")
        with ipycompile.capture() as cap:
            caps[tag] = cap
            barrier.wait()  # both captures are open before either compiles
            f(torch.randn(3))
            barrier.wait()
            g(torch.randn(3))
            barrier.wait()  # both compiled before either closes

    _join(_in_thread(work, "left"), _in_thread(work, "right"))
    assert _state() == before
    assert _functions(caps["left"]) == ["left_one", "left_two"]
    assert _functions(caps["right"]) == ["right_one", "right_two"]


def test_closing_the_first_opened_never_takes_the_other_s_compiles():
    """Opened a then b, a closed first: b still sees both of its compiles, and nothing of
    a's stays on the logger."""
    torch._dynamo.reset()
    before = _state()
    opened, a_closed, b_done = threading.Event(), threading.Event(), threading.Event()
    caps = {}

    def a():
        with ipycompile.capture() as cap:
            caps["a"] = cap
            _named("a_fn")(torch.randn(2))
            opened.set()
            assert b_open.wait(60)
        a_closed.set()

    b_open = threading.Event()

    def b():
        assert opened.wait(60)
        with ipycompile.capture() as cap:
            caps["b"] = cap
            b_open.set()
            _named("b_first")(torch.randn(2))
            assert a_closed.wait(60)
            _named("b_second")(torch.randn(2))
        b_done.set()

    _join(_in_thread(a), _in_thread(b))
    assert _state() == before
    assert _functions(caps["a"]) == ["a_fn"]
    assert _functions(caps["b"]) == ["b_first", "b_second"]
    _named("after_all")(torch.randn(2))  # no listener is left to hear it
    assert _functions(caps["a"]) == ["a_fn"] and _functions(caps["b"]) == ["b_first", "b_second"]


def test_captures_closed_out_of_order_on_one_thread():
    torch._dynamo.reset()
    before = _state()
    a, b = ipycompile.capture(), ipycompile.capture()
    a.__enter__()
    b.__enter__()
    _named("both_see")(torch.randn(2))
    a.__exit__(None, None, None)  # the first opened closes first
    assert TRACE.handlers != before[0][0][1]  # b still listens
    _named("only_b")(torch.randn(2))
    b.__exit__(None, None, None)
    assert _state() == before
    assert _functions(a) == ["both_see"]
    assert _functions(b) == ["both_see", "only_b"]


def test_nested_on_one_thread_the_outer_sees_the_inner_while_another_thread_is_apart():
    """Nested on one thread: the outer sees everything of its thread, the inner's compiles
    included; a capture on another thread at the same time sees none of them."""
    torch._dynamo.reset()
    before = _state()
    barrier = threading.Barrier(2, timeout=60)
    caps = {}

    def nested():
        with ipycompile.capture() as outer:
            caps["outer"] = outer
            barrier.wait()
            _named("outer_fn")(torch.randn(2))
            with ipycompile.capture() as inner:
                caps["inner"] = inner
                _named("inner_fn")(torch.randn(2))
            barrier.wait()

    def other():
        with ipycompile.capture() as cap:
            caps["other"] = cap
            barrier.wait()
            _named("other_fn")(torch.randn(2))
            barrier.wait()

    _join(_in_thread(nested), _in_thread(other))
    assert _state() == before
    assert _functions(caps["outer"]) == ["inner_fn", "outer_fn"]
    assert _functions(caps["inner"]) == ["inner_fn"]
    assert _functions(caps["other"]) == ["other_fn"]


def test_an_exception_in_one_thread_s_capture_leaves_the_other_listening():
    torch._dynamo.reset()
    before = _state()
    failed, caps = threading.Event(), {}
    barrier = threading.Barrier(2, timeout=60)

    def failing():
        with pytest.raises(ValueError):
            with ipycompile.capture() as cap:
                caps["failing"] = cap
                barrier.wait()
                _named("fails_after")(torch.randn(2))
                raise ValueError("boom")
        failed.set()

    def steady():
        with ipycompile.capture() as cap:
            caps["steady"] = cap
            barrier.wait()
            assert failed.wait(60)
            _named("steady_fn")(torch.randn(2))

    _join(_in_thread(failing), _in_thread(steady))
    assert _state() == before
    assert _functions(caps["failing"]) == ["fails_after"]
    assert _functions(caps["steady"]) == ["steady_fn"]


def test_a_user_handler_added_while_a_capture_is_open_stays():
    """Closing puts back torch's logger as it was, less only ipycompile's listener: a
    handler someone else added meanwhile is not taken away."""
    before = _state()
    extra = logging.NullHandler()
    with ipycompile.capture():
        TRACE.addHandler(extra)
    try:
        assert TRACE.handlers == before[0][0][1] + [extra]
    finally:
        TRACE.removeHandler(extra)
    assert _state() == before


def test_torch_s_other_voices_are_heard_once_and_go_to_the_thread_that_spoke():
    """hooks.py's loggers and callbacks are process-wide: registered once while any capture
    is open, and what they hear goes to the captures of the thread it came from."""
    from torch._dynamo import callback_handler

    from ipycompile.capture.hooks import CUDAGRAPH_EVENT
    from ipycompile.capture.routing import ROUTER

    before = _state()
    barrier = threading.Barrier(2, timeout=60)
    caps, registered = {}, []

    def speak(tag):
        with ipycompile.capture() as cap:
            caps[tag] = cap
            barrier.wait()
            registered.append(sum(cb == ROUTER.hooks._start for cb in callback_handler.start_callbacks))
            # what torch's cudagraph_trees module logs when it skips CUDA graphs
            logging.getLogger(CUDAGRAPH_LOGGERS[1]).info("skipping cudagraphs due to %s", f"{tag} reasons")
            barrier.wait()

    _join(_in_thread(speak, "left"), _in_thread(speak, "right"))
    assert registered == [1, 1]
    assert _state() == before
    for tag, other in (("left", "right"), ("right", "left")):
        heard = [m[CUDAGRAPH_EVENT]["message"] for m, _ in caps[tag].records if CUDAGRAPH_EVENT in m]
        assert heard == [f"skipping cudagraphs due to {tag} reasons"], heard


def test_an_event_from_a_thread_without_a_capture_follows_its_compile_id():
    """As torch's own threads (autograd's device threads compiling a backward) log under
    the compile id of a forward a capture saw: that capture gets it, no other."""
    from torch._guards import CompileContext, compile_context
    from torch._logging import trace_structured

    torch._dynamo.reset()
    before = _state()
    with ipycompile.capture() as mine:
        _named("forward_fn")(torch.randn(2))
        (cid,) = [c.compile_id for c in mine.report.compiles]
        other_open, done = threading.Event(), threading.Event()
        others = {}

        def other():  # a capture of its own on another thread, open meanwhile
            with ipycompile.capture() as cap:
                others["cap"] = cap
                other_open.set()
                assert done.wait(60)

        def torch_thread():  # no capture here
            assert other_open.wait(60)
            ctx = CompileContext(torch._guards.CompileId(frame_id=cid.frame_id, frame_compile_id=cid.frame_compile_id))
            with compile_context(ctx):
                trace_structured("artifact", metadata_fn=lambda: {"name": "from_torch_thread", "encoding": "string"},
                                 payload_fn=lambda: "later")
            done.set()

        _join(_in_thread(other), _in_thread(torch_thread))

    def names(cap):
        return [m["artifact"]["name"] for m, _ in cap.records if "artifact" in m]

    assert "from_torch_thread" in names(mine)
    assert "from_torch_thread" not in names(others["cap"])
    assert _state() == before


def _log_without_compile_id(name):
    """What Triton's autotuner does at a kernel's first run on autograd's device thread: a
    chromium-style event torch logs with no compile id, from a thread with no capture."""
    from torch._logging import trace_structured

    trace_structured("artifact", metadata_fn=lambda: {"name": name, "encoding": "string"},
                     payload_fn=lambda: "x", expect_trace_id=False)


def _artifact_names(cap):
    return [m["artifact"]["name"] for m, _ in cap.records if "artifact" in m]


def test_an_event_without_compile_id_from_torchs_thread_goes_to_the_one_threads_captures():
    with ipycompile.capture() as outer, ipycompile.capture() as inner:
        _join(_in_thread(_log_without_compile_id, "autotune_from_device_thread"))
    assert "autotune_from_device_thread" in _artifact_names(outer)
    assert "autotune_from_device_thread" in _artifact_names(inner)


def test_with_captures_on_two_threads_an_event_without_compile_id_is_nobodys():
    opened, release, seen = threading.Event(), threading.Event(), {}

    def other():
        with ipycompile.capture() as cap:
            opened.set()
            release.wait(30)
        seen["other"] = _artifact_names(cap)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert opened.wait(30)
        with ipycompile.capture() as mine:
            _join(_in_thread(_log_without_compile_id, "whose_is_it"))
    finally:
        release.set()
        t.join(30)
    assert "whose_is_it" not in _artifact_names(mine) and "whose_is_it" not in seen["other"]
