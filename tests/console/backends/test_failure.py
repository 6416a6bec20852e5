"""A failed start's root cause: the first fatal/ERROR line of the log, not its last lines."""

from __future__ import annotations

from console.backends import get_adapter
from console.backends.failure import root_cause

# The shape of a vLLM start that died in its engine core (lines as vLLM 0.32 prints them).
VLLM_CRASH = [
    "(APIServer pid=10) INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.32.0",
    "(EngineCore_DP0 pid=11) INFO 12-01 10:00:20 [core.py:90] Initializing a V1 LLM engine",
    "(EngineCore_DP0 pid=11) ERROR 12-01 10:00:40 [core.py:843] EngineCore failed to start.",
    "(EngineCore_DP0 pid=11) ERROR 12-01 10:00:40 [core.py:843] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=11) ERROR 12-01 10:00:40 [core.py:843]   File "x.py", line 1, in f',
    "(EngineCore_DP0 pid=11) ERROR 12-01 10:00:40 [core.py:843] OSError: /nope is not a directory",
    "(APIServer pid=10) Traceback (most recent call last):",
    '(APIServer pid=10)   File "api_server.py", line 9, in run',
    "(APIServer pid=10) RuntimeError: Engine core initialization failed. See root cause above.",
]


def test_the_failing_processs_first_error_and_its_exception_are_the_root_cause() -> None:
    cause, hint = get_adapter("vllm").diagnose_failure(VLLM_CRASH)
    assert cause.startswith("(EngineCore_DP0 pid=11) ERROR") and "failed to start" in cause
    assert cause.endswith("OSError: /nope is not a directory") and hint == ""


def test_a_fatal_python_error_comes_first_and_a_bare_traceback_gives_its_exception() -> None:
    lines = ["INFO loading", "Fatal Python error: _Py_CheckRecursiveCall: Cannot recover", "x"]
    assert root_cause(lines).startswith("Fatal Python error")
    bare = ["Traceback (most recent call last):", '  File "m.py"', "ValueError: bad port 'x'"]
    assert root_cause(bare) == "ValueError: bad port 'x'"
    assert root_cause(["INFO all good", "INFO still good"]) == ""


def test_a_followed_start_that_exits_carries_the_root_cause_and_hint() -> None:
    from console.service.lifecycle import Lifecycle
    from console.service.supervisor import SupervisorState

    adapter = get_adapter("vllm")
    machine = Lifecycle(adapter.parse_log, diagnose=adapter.diagnose_failure)
    machine.starting("starting vllm")
    for line in VLLM_CRASH[:3]:
        machine.feed_log(line)
    machine.feed_supervisor(SupervisorState("exited", pid=1, exit_code=1))
    assert machine.current.state == "failed" and "failed to start" in machine.current.root_cause
    # the authoritative log read from the host afterwards (all of it) refines the cause
    serve = [
        "Traceback (most recent call last):",
        "importlib.metadata.PackageNotFoundError: No package metadata was found for vllm",
    ]
    machine.with_log_tail(serve)
    event = machine.current
    assert event.root_cause.endswith("No package metadata was found for vllm")
    assert "vllm.entrypoints.openai.api_server" in event.hint and event.log_tail == tuple(serve)
