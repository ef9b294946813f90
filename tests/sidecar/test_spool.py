"""The durable spool: order, restart, torn tails, limits, segment clean-up, one owner, SIGKILL."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fingerprint_indexer.sidecar.spool import Spool, SpoolFull, SpoolLocked


def drain(spool: Spool) -> list[bytes]:
    out = []
    while (rec := spool.peek()) is not None:
        pos, payload = rec
        out.append(payload)
        spool.ack(pos, len(payload))
    return out


def test_order_and_restart(tmp_path: Path) -> None:
    s = Spool(tmp_path, limit_bytes=1 << 20, segment_bytes=64)  # tiny segments: many rotations
    for i in range(50):
        s.append(f"rec-{i}".encode())
    first = []
    for _ in range(20):
        rec = s.peek()
        assert rec is not None
        first.append(rec[1])
        s.ack(rec[0], len(rec[1]))
    s.close()
    s = Spool(tmp_path, limit_bytes=1 << 20, segment_bytes=64)
    assert s.depth == 30
    batch = s.peek_many(7, 1 << 20)  # spans segments
    assert len(batch) == 7 and s.depth == 30  # peeking consumes nothing
    s.ack(batch[-1][0], sum(len(p) for _, p in batch), len(batch))
    rest = [p for _, p in batch] + drain(s)
    assert first + rest == [f"rec-{i}".encode() for i in range(50)]
    assert s.depth == 0 and s.pending_bytes == 0
    assert len(list(tmp_path.glob("seg-*.log"))) == 1  # delivered segments are deleted
    s.append(b"after")
    assert drain(s) == [b"after"]
    s.close()


def test_torn_tail_is_cut_off(tmp_path: Path) -> None:
    s = Spool(tmp_path, limit_bytes=1 << 20)
    for i in range(3):
        s.append(b"x" * 100 + bytes([i]))
    s.close()
    seg = sorted(tmp_path.glob("seg-*.log"))[-1]
    with open(seg, "ab") as f:
        f.write(b"\x10\x00\x00\x00\x00\x00")  # a frame header cut short by a crash
    s = Spool(tmp_path, limit_bytes=1 << 20)
    assert (s.depth, s.dropped_torn) == (3, 1)
    s.append(b"next")
    assert drain(s)[-1] == b"next"
    s.close()


def test_corrupt_frame_is_not_replayed(tmp_path: Path) -> None:
    s = Spool(tmp_path, limit_bytes=1 << 20)
    s.append(b"good")
    s.append(b"will be damaged")
    s.close()
    seg = sorted(tmp_path.glob("seg-*.log"))[-1]
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF
    seg.write_bytes(bytes(data))
    s = Spool(tmp_path, limit_bytes=1 << 20)
    assert drain(s) == [b"good"]
    s.close()


def test_limit_and_single_owner(tmp_path: Path) -> None:
    s = Spool(tmp_path, limit_bytes=250)
    s.append(b"a" * 200)
    with pytest.raises(SpoolFull):
        s.append(b"b" * 100)
    with pytest.raises(SpoolLocked):
        Spool(tmp_path, limit_bytes=250)
    drain(s)
    s.append(b"b" * 100)  # room again once delivered
    s.close()
    Spool(tmp_path, limit_bytes=250).close()  # the lock is released on close


CHILD = textwrap.dedent("""
    import sys
    from fingerprint_indexer.sidecar.spool import Spool
    s = Spool(sys.argv[1], limit_bytes=1 << 30, segment_bytes=4096)
    i = 0
    while True:
        s.append(b"%d" % i + b"." * 500)
        print(i, flush=True)  # acknowledged only after append returned (fsynced)
        i += 1
""")


def test_sigkill_loses_no_acknowledged_record(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked = []
    deadline = time.monotonic() + 30
    while len(acked) < 300 and time.monotonic() < deadline:
        acked.append(int(proc.stdout.readline()))
    proc.kill()
    proc.wait(timeout=10)
    acked += [int(line) for line in proc.stdout.read().split()]
    assert len(acked) >= 300
    s = Spool(tmp_path, limit_bytes=1 << 30, segment_bytes=4096)
    got = [int(p.split(b".")[0]) for p in drain(s)]
    s.close()
    assert got[: len(acked)] == acked  # every acknowledged record, in order (plus maybe one unacked)
    assert len(got) - len(acked) <= 1
