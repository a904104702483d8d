"""The Spark driver's lane registry against hostile connections, without Spark: silent and
trickling connections hold only themselves, a line longer than the run allows is dropped,
requests that do not fit the run are refused, and the lanes' real exchange still completes."""

from __future__ import annotations

import json
import socket
import time
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
