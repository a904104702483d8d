"""The Spark driver's lane registry against hostile connections, without Spark: silent and
trickling connections hold only themselves, a line longer than the run allows is dropped,
requests that do not fit the run are refused, and the lanes' real exchange still completes."""

from __future__ import annotations

import importlib.util
import json
import random
import socket
import time
from pathlib import Path
from typing import Any

import blindjoin.spark as spark


class _Conf:
    def get(self, key: str, default: Any = None) -> Any:
        return {"spark.driver.host": "127.0.0.1"}.get(key, default)


class _Context:
    def getConf(self) -> _Conf:  # noqa: N802 (pyspark's name)
        return _Conf()


def _registry(buckets: int = 4, lanes: int = 2) -> spark._Registry:
    return spark._Registry(_Context(), buckets, lanes)


def test_silent_and_trickling_connections_do_not_stall_the_lanes() -> None:
    reg = _registry()
    try:
        held = []
        # 20 silent connections and one that trickles a byte every 100 ms.
        for _ in range(20):
            held.append(socket.create_connection(reg.address, timeout=5))
        trickle = socket.create_connection(reg.address, timeout=5)
        trickle.sendall(b'{"tok')
        held.append(trickle)
        to = (reg.address, reg.token)
        start = time.monotonic()
        assert spark._tell(to, {"kind": "claim", "lane": 0}) == "ok"
        assert spark._tell(to, {"kind": "claim", "lane": 0}) == "again"
        assert spark._tell(to, {"kind": "counts", "lane": 0, "counts": [[0, 5], [2, 7]]}) == "ok"
        assert spark._tell(to, {"kind": "get counts", "lane": 1}) == "wait"
        assert spark._tell(to, {"kind": "counts", "lane": 1, "counts": [[1, 3], [3, 0]]}) == "ok"
        assert spark._tell(to, {"kind": "get counts", "lane": 1}) == [5, 3, 7, 0]
        assert time.monotonic() - start < 5, "the lanes waited behind the held connections"
        # The trickling connection is cut at its deadline, whatever its pace.
        cut = False
        until = time.monotonic() + spark._REQUEST_SECONDS + 5
        while time.monotonic() < until:
            try:
                trickle.sendall(b"x")
                if trickle.recv(1, socket.MSG_DONTWAIT) == b"":
                    cut = True
                    break
            except BlockingIOError:
                pass
            except OSError:
                cut = True
                break
            time.sleep(0.1)
        assert cut, "the trickling connection was not cut"
        for c in held:
            c.close()
    finally:
        reg.close()


def test_requests_that_do_not_fit_the_run_are_refused() -> None:
    reg = _registry(buckets=4, lanes=2)
    try:
        t = reg.token
        refused = [
            "not a dict",
            {"token": "wrong", "kind": "claim", "lane": 0},
            {"token": t, "kind": "claim", "lane": 2},
            {"token": t, "kind": "claim", "lane": -1},
            {"token": t, "kind": "claim", "lane": True},
            {"token": t, "kind": "claim", "lane": "0"},
            {"token": t, "kind": "counts", "lane": 0, "counts": [[4, 1]]},
            {"token": t, "kind": "counts", "lane": 0, "counts": [[0, -1]]},
            {"token": t, "kind": "counts", "lane": 0, "counts": [[0]]},
            {"token": t, "kind": "counts", "lane": 0, "counts": "many"},
            {"token": t, "kind": "plan", "lane": 1, "plan": {}},
            {"token": t, "kind": "plan", "lane": 0, "plan": []},
            {"token": t, "kind": "done", "lane": 0, "stats": 5},
            {"token": t, "kind": "unknown", "lane": 0},
        ]
        for msg in refused:
            assert reg.handle(msg) == "refused", msg
        assert reg.claimed == set() and reg.counts == {} and reg.plan is None
        # A line longer than the run allows is dropped without an answer.
        with socket.create_connection(reg.address, timeout=5) as c:
            try:
                c.sendall(b"[" + b"0," * spark._line_limit(4) + b"0]\n")
                answer = c.recv(1)
            except ConnectionResetError:
                answer = b""
            assert answer == b""
        # A reply still comes for a well-formed request after all that.
        assert spark._tell((reg.address, t), {"kind": "claim", "lane": 1}) == "ok"
    finally:
        reg.close()


def test_the_registry_line_limit_fits_the_largest_run() -> None:
    buckets = 1 << 16
    counts = [[p, 2**40] for p in range(buckets)]
    line = json.dumps({"kind": "counts", "lane": 0, "counts": counts, "token": "t" * 32})
    assert len(line) <= spark._line_limit(buckets)


def _fuzz_target() -> Any:
    path = Path(__file__).resolve().parents[1] / "fuzz" / "registry.py"
    spec = importlib.util.spec_from_file_location("blindjoin_fuzz_registry", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plans_statistics_and_errors_that_the_driver_could_not_read_are_refused() -> None:
    lanes = spark._Lanes(4, 2, "t")
    plan = {"own_size": 12, "peer_size": 9, "own_max": 5, "peer_max": 4, "dummies": 8}
    stats = {
        "bytes_sent": 10,
        "bytes_received": 9,
        "distinct": 6,
        "matched": 2,
        "seconds": 0.5,
        "rows": 3,
        "out": 2,
        "phases": {"rows": 0.1},
    }
    refused = [
        {"kind": "plan", "lane": 0, "plan": {**plan, "own_max": "5"}},
        {"kind": "plan", "lane": 0, "plan": {**plan, "dummies": -1}},
        {"kind": "plan", "lane": 0, "plan": {k: v for k, v in plan.items() if k != "peer_max"}},
        {"kind": "plan", "lane": 0, "plan": {**plan, "extra": 1}},
        {"kind": "done", "lane": 0, "stats": {**stats, "out": "2"}},
        {"kind": "done", "lane": 0, "stats": {**stats, "rows": True}},
        {"kind": "done", "lane": 0, "stats": {**stats, "seconds": float("nan")}},
        {"kind": "done", "lane": 0, "stats": {**stats, "phases": {"a": float("inf")}}},
        {"kind": "done", "lane": 0, "stats": {**stats, "phases": {str(i): 0 for i in range(17)}}},
        {"kind": "error", "lane": 0, "class": ["PeerError"], "message": "x"},
        {"kind": "error", "lane": 0, "class": "PeerError", "message": None},
    ]
    for msg in refused:
        assert lanes.handle({**msg, "token": "t"}) == "refused", msg
    assert lanes.plan is None and lanes.done == {} and lanes.errors == []
    assert lanes.handle({"kind": "plan", "lane": 0, "plan": plan, "token": "t"}) == "ok"
    assert lanes.handle({"kind": "done", "lane": 1, "stats": stats, "token": "t"}) == "ok"
    assert (lanes.plan, lanes.done) == (plan, {1: stats})
    # One error is kept per lane, however many a lane sends.
    for i in range(3):
        e = {"kind": "error", "lane": 1, "class": "PeerError", "message": f"m{i}", "token": "t"}
        assert lanes.handle(e) == "ok"
    assert lanes.errors == [(1, "PeerError", "m0")]
    # A line nested past the JSON decoder's depth gets no answer instead of ending the thread.
    assert lanes.answer(b"[" * 3000) is None
    assert lanes.answer(b'{"kind": "get plan", "lane": 0, "token": "t"}') == b'"failed"\n'


def test_the_fuzz_target_passes_its_seeds_and_their_mutants() -> None:
    target = _fuzz_target()
    seeds = target.seeds()
    assert set(seeds) == {
        "run",
        "run-retried-lane",
        "lane-errors",
        "refused",
        "not-json",
        "line-too-long",
        "no-newline",
    }
    # The whole run's exchange gets exactly the registry's replies, in order.
    lanes = spark._Lanes(4, 2, target.TOKEN)
    replies = [lanes.answer(line) for line in seeds["run"][2:].split(b"\n")[:-1]]
    plan = json.dumps(lanes.plan).encode() + b"\n"
    assert replies == [b'"ok"\n'] * 3 + [b'"wait"\n', b'"ok"\n', b"[5, 3, 7, 0]\n"] + [
        b'"wait"\n',
        b'"ok"\n',
        plan,
        b'"ok"\n',
        b'"ok"\n',
    ]
    lanes = spark._Lanes(4, 2, target.TOKEN)
    assert {lanes.answer(line) for line in seeds["refused"][2:].split(b"\n")} == {b'"refused"\n'}
    rng = random.Random(7)
    inputs = list(seeds.values())
    for _ in range(3000):
        data = bytearray(rng.choice(inputs))
        for _ in range(rng.randint(1, 8)):
            op = rng.randrange(4)
            at = rng.randrange(len(data) + 1)
            if op == 0 and at < len(data):
                data[at] = rng.randrange(256)
            elif op == 1:
                data[at:at] = bytes([rng.choice(b'\n{}[]":,0123456789-.etnrfu')])
            elif op == 2:
                del data[at : at + rng.randint(1, 16)]
            else:
                other = rng.choice(inputs)
                start = rng.randrange(len(other))
                data[at:at] = other[start : start + rng.randint(1, 64)]
        target.one_input(bytes(data))
