"""A durable on-disk spool of Elasticsearch writes that could not be delivered yet.

Layout of the spool directory::

    seg-<20 digits>.log   append-only segments of frames: <u32 length><u32 CRC-32><payload>
    cursor                {"segment": n, "offset": bytes}: the first frame not yet delivered
    lock                  flock held by the owning process (two services on one spool would corrupt it)

``append`` writes a frame and fsyncs before returning, so an acknowledgement given after it survives a
SIGKILL or power loss. ``peek`` returns the oldest undelivered frame; ``ack`` moves the cursor past it
(written to a temporary file, fsynced and renamed, so the cursor is never torn) and deletes finished
segments. Replay is at-least-once; callers make it idempotent (every write carries a document id).
On open, a torn frame at the tail of the newest segment (a write that was never acknowledged) is cut off.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

from fingerprint_indexer.errors import FingerprintIndexerError

HEADER = struct.Struct("<II")
MAX_FRAME = 1 << 30


class SpoolFull(FingerprintIndexerError):
    """The spool holds more undelivered bytes than its limit: the caller should answer 429."""


class SpoolUnavailable(FingerprintIndexerError):
    """The spool could not be written (disk full, I/O or fsync error): nothing was acknowledged, and the
    caller should answer 503; the spool's file is left as it was before the write."""


class SpoolLocked(FingerprintIndexerError):
    """Another process owns this spool directory."""


@dataclass(frozen=True, order=True)
class Position:
    segment: int
    offset: int


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    """Append-only, fsynced, ordered queue of byte payloads. Methods are thread-safe."""

    def __init__(self, directory: str | Path, limit_bytes: int, segment_bytes: int = 16 << 20) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.limit_bytes, self.segment_bytes = limit_bytes, segment_bytes
        self._lock = threading.Lock()
        self._lock_fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise SpoolLocked(f"spool {self.dir} is in use by another process") from None
        self.cursor = self._read_cursor()
        self.depth, self.pending_bytes, self.dropped_torn = 0, 0, 0
        self._recover()
        self._writer = open(self._segment_path(self._write_segment), "ab")  # noqa: SIM115 - kept open

    # --------------------------------------------------------------------------------------- files
    def _segment_path(self, n: int) -> Path:
        return self.dir / f"seg-{n:020d}.log"

    def _segments(self) -> list[int]:
        return sorted(int(p.name[4:-4]) for p in self.dir.glob("seg-*.log"))

    def _read_cursor(self) -> Position:
        try:
            data = json.loads((self.dir / "cursor").read_text())
            return Position(int(data["segment"]), int(data["offset"]))
        except FileNotFoundError:
            segs = self._segments()
            return Position(segs[0] if segs else 1, 0)

    def _write_cursor(self, pos: Position) -> None:
        tmp = self.dir / "cursor.tmp"
        with open(tmp, "w") as f:
            json.dump({"segment": pos.segment, "offset": pos.offset}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.dir / "cursor")
        _fsync_dir(self.dir)

    def _scan(self, n: int, start: int) -> tuple[int, int, int]:
        """(frames, payload bytes, end of the last whole frame) of segment ``n`` from ``start``."""
        frames = size = 0
        end = start
        with open(self._segment_path(n), "rb") as f:
            f.seek(start)
            while True:
                head = f.read(HEADER.size)
                if len(head) < HEADER.size:
                    break
                length, crc = HEADER.unpack(head)
                if length > MAX_FRAME:
                    break
                payload = f.read(length)
                if len(payload) < length or zlib.crc32(payload) != crc:
                    break
                frames += 1
                size += length
                end += HEADER.size + length
        return frames, size, end

    def _recover(self) -> None:
        segs = [s for s in self._segments() if s >= self.cursor.segment]
        for s in self._segments():
            if s < self.cursor.segment:
                self._segment_path(s).unlink()
        if not segs:
            self._write_segment = self.cursor.segment
            self._segment_path(self._write_segment).touch()
            self.cursor = Position(self._write_segment, 0)
            return
        for s in segs:
            start = self.cursor.offset if s == self.cursor.segment else 0
            frames, size, end = self._scan(s, start)
            self.depth += frames
            self.pending_bytes += size
            actual = self._segment_path(s).stat().st_size
            if end < actual:  # a torn or corrupt tail: never acknowledged, so it is cut off
                self.dropped_torn += 1
                with open(self._segment_path(s), "r+b") as f:
                    f.truncate(end)
                    os.fsync(f.fileno())
        self._write_segment = segs[-1]

    # ----------------------------------------------------------------------------------------- API
    def append(self, payload: bytes) -> None:
        """Write one frame and fsync it; raises :class:`SpoolFull` past the limit and
        :class:`SpoolUnavailable` when the disk refuses the write (a partial frame is cut off again, so
        later frames never sit behind a torn one)."""
        with self._lock:
            if self.pending_bytes + len(payload) > self.limit_bytes and self.depth > 0:
                raise SpoolFull(f"spool holds {self.pending_bytes} bytes (limit {self.limit_bytes})")
            try:
                if self._writer.tell() >= self.segment_bytes:
                    self._writer.close()
                    self._write_segment += 1
                    self._writer = open(self._segment_path(self._write_segment), "ab")  # noqa: SIM115
                    _fsync_dir(self.dir)
                start = self._writer.tell()
                try:
                    self._writer.write(HEADER.pack(len(payload), zlib.crc32(payload)) + payload)
                    self._writer.flush()
                    os.fdatasync(self._writer.fileno())
                except OSError:
                    self._cut_back(start)
                    raise
            except OSError as exc:
                raise SpoolUnavailable(f"spool {self.dir} cannot be written: "
                                       f"{exc.strerror or type(exc).__name__}") from exc
            self.depth += 1
            self.pending_bytes += len(payload)

    def _cut_back(self, end: int) -> None:
        """After a failed write: drop whatever reached the segment past ``end`` (best effort; a tail that
        cannot be cut is a torn frame, cut off at the next open)."""
        with contextlib.suppress(OSError):
            self._writer.close()
        with contextlib.suppress(OSError), open(self._segment_path(self._write_segment), "r+b") as f:
            f.truncate(end)
        self._writer = open(self._segment_path(self._write_segment), "ab")  # noqa: SIM115

    def would_overflow(self, n_bytes: int) -> bool:
        return self.depth > 0 and self.pending_bytes + n_bytes > self.limit_bytes

    def peek(self) -> tuple[Position, bytes] | None:
        """The oldest undelivered payload and the position just after it, or None when empty."""
        got = self.peek_many(1, 0)
        return got[0] if got else None

    def peek_many(self, max_records: int, max_bytes: int) -> list[tuple[Position, bytes]]:
        """The oldest undelivered payloads (at least one when any), up to ``max_records`` or until
        ``max_bytes`` is reached, each with the position just after it; nothing is consumed."""
        out: list[tuple[Position, bytes]] = []
        size = 0
        with self._lock:
            pos = self.cursor
            while len(out) < min(max_records, self.depth) and (not out or size < max_bytes):
                with open(self._segment_path(pos.segment), "rb") as f:
                    f.seek(pos.offset)
                    while len(out) < min(max_records, self.depth) and (not out or size < max_bytes):
                        head = f.read(HEADER.size)
                        if len(head) < HEADER.size:
                            break
                        length, _crc = HEADER.unpack(head)
                        payload = f.read(length)
                        pos = Position(pos.segment, pos.offset + HEADER.size + length)
                        out.append((pos, payload))
                        size += length
                if len(out) < min(max_records, self.depth):  # end of this segment: on to the next
                    if pos.segment >= self._write_segment:
                        break
                    pos = Position(pos.segment + 1, 0)
        return out

    def ack(self, after: Position, payload_len: int, records: int = 1) -> None:
        """Mark everything before ``after`` delivered (durably): ``records`` frames of ``payload_len``."""
        with self._lock:
            self._advance(after, records, payload_len)

    def _advance(self, pos: Position, frames: int, size: int = 0) -> None:
        old = self.cursor
        self._write_cursor(pos)
        self.cursor = pos
        self.depth -= frames
        self.pending_bytes -= size
        for s in range(old.segment, pos.segment):
            self._segment_path(s).unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            if not self._writer.closed:
                self._writer.close()
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1
