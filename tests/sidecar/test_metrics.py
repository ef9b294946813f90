"""The service's metrics that need no server: CPU by thread role, read from the threads themselves."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from fingerprint_indexer.sidecar.metrics import Metrics, thread_cpu_seconds, thread_role


def test_threads_are_given_the_role_their_name_says() -> None:
    assert [thread_role(n) for n in ("fingerprint_0", "store_0", "es-state_0", "spool_0", "MainThread",
                                     "Thread-3")] == ["fingerprint", "decide", "decide", "spool",
                                                      "event_loop", "other"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread CPU is read from Linux's /proc")
def test_a_busy_thread_counts_under_its_role() -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(10_000))

    before = thread_cpu_seconds().get("fingerprint", 0.0)
    t = threading.Thread(target=spin, name="fingerprint_9")
    t.start()
    try:
        deadline = time.monotonic() + 20
        while thread_cpu_seconds().get("fingerprint", 0.0) - before < 0.2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert thread_cpu_seconds().get("fingerprint", 0.0) - before >= 0.2
        text = Metrics().render()[0].decode()
        assert 'fpi_thread_cpu_seconds_total{role="fingerprint"}' in text
    finally:
        stop.set()
        t.join()


def test_a_write_step_counts_the_cpu_of_its_block_not_its_waits() -> None:
    m = Metrics()

    def counted(step: str) -> float:
        return m.write_cpu.labels(step)._value.get()  # type: ignore[attr-defined, no-any-return]

    with m.write_step("read"):
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.05:
            sum(range(1_000))
    with m.write_step("encode"):
        time.sleep(0.2)  # waiting is no CPU
    assert counted("read") >= 0.05
    assert counted("encode") < 0.05
    assert counted("prepare") == 0.0
    text = Metrics().render()[0].decode()  # every step is shown from the start, at zero
    assert all(f'fpi_write_cpu_seconds_total{{step="{s}"}} 0.0' in text
               for s in ("read", "prepare", "apply", "encode", "answer"))
