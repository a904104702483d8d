"""Fuzz target of the Spark driver's lane registry (``blindjoin.spark``): its request-line
reader and its answer to every request line a task, or anyone who reaches its port, may send.

One input is a run and the lines sent to its registry:

* byte 0 gives the run's buckets (1 + byte mod 16), byte 1 its lanes (1 + byte mod 4);
* the rest is what one connection sends: ``_read_line`` reads it over a socket pair and must
  return exactly the bytes before the first newline when there is one within the run's line
  limit, else ``None``;
* then every line of the rest (at most 64) is a request to the registry state of the run
  (token ``t``), in order: each reply must be ``None`` for a line that is not JSON, else one
  JSON line that is a status word, the run's bucket counts or the plan lane 0 gave. After the
  last line the driver reads what the lanes left (the plan's counts, each lane's statistics,
  the lanes' error) as ``_run`` does: nothing may raise.

Any exception, or an answer that breaks these rules, is a crash. Run with atheris
(``bash scripts/fuzz.sh spark_registry``, ``docs/FUZZING.md``); ``--seeds DIR`` writes the seed
corpus; the Python tests run the target on the corpus and on mutants of it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

import blindjoin.spark as spark

TOKEN = "t"
MAX_LINES = 64
# The most of an input the socket pair carries (below its buffer, so one thread suffices).
MAX_WIRE = 1 << 16
WORDS = {"ok", "again", "refused", "wait", "failed"}


def _reader_check(rest: bytes, limit: int) -> None:
    """``_read_line`` over a socket pair returns exactly the first line within the limit."""
    wire = rest[:MAX_WIRE]
    a, b = socket.socketpair()
    try:
        a.sendall(wire)
        a.shutdown(socket.SHUT_WR)
        got = spark._read_line(b, limit, 5.0)
    finally:
        a.close()
        b.close()
    end = wire.find(b"\n")
    want = wire[:end] if 0 <= end <= limit else None
    if got != want:
        raise AssertionError(f"_read_line returned {got!r:.80} for {want!r:.80}")


def _driver_view(lanes: spark._Lanes) -> None:
    """What ``_run`` reads from the registry after the barrier stage."""
    if lanes.plan is not None:
        for k in spark._PLAN_KEYS:
            if type(lanes.plan[k]) is not int or lanes.plan[k] < 0:
                raise AssertionError(f"plan {k} = {lanes.plan[k]!r}")
    for d in lanes.done.values():
        for name in ("out", "bytes_sent", "bytes_received", "matched", "rows"):
            int(d.get(name, 0))
        dict({"lane": 0, **d})
    e = lanes.error()
    if e is not None and not isinstance(e, spark.BlindjoinError):
        raise AssertionError(f"the lanes' error is a {type(e).__name__}")
    if not lanes.claimed <= set(range(lanes.lanes)) or any(
        not 0 <= w < lanes.lanes for w in (*lanes.counts, *lanes.done)
    ):
        raise AssertionError("state kept for a lane outside the run")
    if len(lanes.errors) > lanes.lanes:
        raise AssertionError(f"{len(lanes.errors)} errors kept for {lanes.lanes} lanes")


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    buckets, count = 1 + data[0] % 16, 1 + data[1] % 4
    rest = data[2:]
    limit = spark._line_limit(buckets)
    _reader_check(rest, limit)
    lanes = spark._Lanes(buckets, count, TOKEN)
    for line in rest.split(b"\n")[:MAX_LINES]:
        if len(line) > limit:
            continue
        reply = lanes.answer(line)
        try:
            json.loads(line)
            is_json = True
        except (ValueError, RecursionError):
            is_json = False
        if reply is None:
            if is_json:
                raise AssertionError(f"no reply to the JSON line {line!r:.80}")
            continue
        if not is_json or not reply.endswith(b"\n") or reply.count(b"\n") != 1:
            raise AssertionError(f"reply {reply!r:.80} to {line!r:.80}")
        r = json.loads(reply)
        ok = (
            r in WORDS
            if isinstance(r, str)
            else (
                len(r) == buckets and all(type(c) is int and c >= 0 for c in r)
                if isinstance(r, list)
                else r == lanes.plan
            )
        )
        if not ok:
            raise AssertionError(f"reply {reply!r:.80} to {line!r:.80}")
    _driver_view(lanes)


def _line(**msg: Any) -> bytes:
    return json.dumps({**msg, "token": TOKEN}).encode()


def seeds() -> dict[str, bytes]:
    """The seed corpus: a whole run's exchange for 2 lanes and 4 buckets, and the requests the
    registry refuses."""
    stats = {
        "bytes_sent": 1200,
        "bytes_received": 900,
        "distinct": 6,
        "matched": 2,
        "seconds": 0.25,
        "rows": 3,
        "out": 2,
        "phases": {"rows": 0.01, "connect": 0.02, "sizes": 0.0, "buckets": 0.2, "output": 0.0},
    }
    plan = {"own_size": 12, "peer_size": 9, "own_max": 5, "peer_max": 4, "dummies": 8}
    run = [
        _line(kind="claim", lane=0),
        _line(kind="claim", lane=1),
        _line(kind="counts", lane=0, counts=[[0, 5], [2, 7]]),
        _line(kind="get counts", lane=0),
        _line(kind="counts", lane=1, counts=[[1, 3], [3, 0]]),
        _line(kind="get counts", lane=0),
        _line(kind="get plan", lane=1),
        _line(kind="plan", lane=0, plan=plan),
        _line(kind="get plan", lane=1),
        _line(kind="done", lane=0, stats=stats),
        _line(kind="done", lane=1, stats=stats),
    ]
    head = bytes([3, 1])
    out = {
        "run": head + b"\n".join(run) + b"\n",
        "run-retried-lane": head + b"\n".join([*run[:2], _line(kind="claim", lane=1)]),
        "lane-errors": head
        + b"\n".join(
            [
                _line(kind="error", lane=1, **{"class": "PeerError", "message": "lane 1: gone"}),
                _line(kind="error", lane=0, **{"class": "InputError", "message": "lane 0: x"}),
                _line(kind="error", lane=0, **{"class": "InputError", "message": "again"}),
                _line(kind="get plan", lane=1),
            ]
        ),
        "refused": head
        + b"\n".join(
            [
                json.dumps({"kind": "claim", "lane": 0, "token": "u"}).encode(),
                _line(kind="claim", lane=2),
                _line(kind="claim", lane=True),
                _line(kind="counts", lane=0, counts=[[4, 1]]),
                _line(kind="counts", lane=0, counts=[[0, -1]]),
                _line(kind="plan", lane=1, plan=plan),
                _line(kind="plan", lane=0, plan={**plan, "own_max": "5"}),
                _line(kind="done", lane=0, stats={**stats, "out": "2"}),
                _line(kind="done", lane=0, stats={**stats, "phases": {"a": float("inf")}}),
                _line(kind="error", lane=0, **{"class": 1, "message": "x"}),
                _line(kind="what", lane=0),
            ]
        ),
        "not-json": head + b'{"token": "t", "kind": "claim", "lane": 0\n' + b"[" * 3000 + b"\n",
        "line-too-long": bytes([0, 0]) + b" " * 5000 + b"\n" + _line(kind="claim", lane=0),
        "no-newline": head + _line(kind="claim", lane=0),
    }
    return out


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, data in seeds().items():
            with open(os.path.join(sys.argv[2], name), "wb") as f:
                f.write(data)
        return
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
