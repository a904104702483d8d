"""End-to-end tests of ``blindjoin.spark``: two parties, each its own local[2] Spark (the
receiver in this process, the sender in a process of its own), exact matched rows against a join
in pandas, and runs that fail on both sides."""

from __future__ import annotations

import json
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spark_party import MARK, spark_session

import blindjoin
import blindjoin.spark

HERE = Path(__file__).resolve().parent

# How long a run may take before the test calls it a hang.
RUN_WAIT = 150


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive loopback ports nobody listens on."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n > 65535:
            continue
        socks = []
        try:
            for p in range(base, base + n):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError("no free port range")


class Sender:
    """The sender's process: one run per command, its outcome read back as a JSON line."""

    def __init__(self, log: Path) -> None:
        self.log = open(log, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "spark_party.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.result(180)
        assert ready == {"ready": True}, ready

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.lines.put(json.loads(line[len(MARK) :]))

    def start(self, data: Path, column: Any, **options: Any) -> None:
        assert self.proc.stdin is not None
        cmd = {"data": str(data), "column": column, "options": options}
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def result(self, timeout: float = RUN_WAIT) -> dict[str, Any]:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"the sender gave no result within {timeout} s; its log: {self.log.name}"
            ) from None

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def sender(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = Sender(tmp_path_factory.mktemp("spark-sender") / "sender.log")
    yield s
    s.close()


@pytest.fixture(scope="module")
def spark() -> Any:
    session = spark_session("blindjoin-test-receiver")
    yield session
    session.stop()


# -- Data ------------------------------------------------------------------------------------

FIRST = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hal", "Ida", "Jo"]
LAST = ["Smith", "Jones", "Brown", "Lee", "Khan", "Ng", "Ortiz", "Price"]


def variant(rng: random.Random, key: str) -> str:
    """The same key as a person might write it (case, surrounding spaces)."""
    k = key.upper() if rng.random() < 0.2 else key
    return (" " if rng.random() < 0.1 else "") + k + (" " if rng.random() < 0.1 else "")


def make_rows(rng: random.Random, n: int, emails: list[str], start_id: int) -> pd.DataFrame:
    email: list[str | None] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.03:
            email.append("")
        elif r < 0.05:
            email.append(None)
        elif r < 0.06:
            email.append("   ")
        else:
            email.append(variant(rng, rng.choice(emails)))
    first = [variant(rng, rng.choice(FIRST)) if rng.random() > 0.02 else "" for _ in range(n)]
    last = [rng.choice(LAST) for _ in range(n)]
    score = [None if rng.random() < 0.03 else rng.randrange(400) / 4 for _ in range(n)]
    return pd.DataFrame(
        {
            "id": range(start_id, start_id + n),
            "email": email,
            "first": first,
            "last": last,
            "score": score,
            "note": [f"row {i}" for i in range(n)],
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A receiver of 3000 rows and a sender of 2000 (duplicate keys on both sides, empty and
    missing keys), written as Parquet."""
    rng = random.Random(20261128)
    pool = [f"user{i}@example.org" for i in range(2400)]
    receiver = make_rows(rng, 3000, pool[:1800], 0)
    sender = make_rows(rng, 2000, pool[1200:], 100_000)
    d = tmp_path_factory.mktemp("spark-data")
    paths = {"receiver_path": d / "receiver.parquet", "sender_path": d / "sender.parquet"}
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("email", pa.string()),
            ("first", pa.string()),
            ("last", pa.string()),
            ("score", pa.float64()),
            ("note", pa.string()),
        ]
    )
    for frame, path in ((receiver, paths["receiver_path"]), (sender, paths["sender_path"])):
        pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
    return {"receiver": receiver, "sender": sender, **paths}


def lower(s: pd.Series) -> pd.Series:
    """``normalize="lower"``/``"email"`` on ASCII text: trimmed, lower case; empty is no key."""
    out = s.str.strip().str.lower()
    return out.where(out.notna() & (out != ""), None)


def keyed(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The rows' ids and normalised key columns, rows with any empty field dropped (text
    lower-cased, numbers as they are)."""
    k = pd.DataFrame(
        {c: lower(frame[c]) if frame[c].dtype != "float64" else frame[c] for c in columns}
    )
    k["id"] = frame["id"]
    return k.dropna(subset=columns)


def expected_ids(r: pd.DataFrame, s: pd.DataFrame, columns: list[str]) -> list[int]:
    """The receiver's rows whose key the sender has: an inner join in pandas."""
    theirs = keyed(s, columns)[columns].drop_duplicates()
    joined = keyed(r, columns).merge(theirs, on=columns, how="inner")
    return sorted(joined["id"].tolist())


def distinct_keys(frame: pd.DataFrame, columns: list[str]) -> int:
    return len(keyed(frame, columns)[columns].drop_duplicates())


def run_pair(
    spark: Any,
    sender: Sender,
    data: dict[str, Any],
    column: Any,
    *,
    receiver_opts: dict[str, Any] | None = None,
    sender_opts: dict[str, Any] | None = None,
    **common: Any,
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Runs the receiver here and the sender in its process; returns the receiver's
    ``(result, report)`` or exception, and the sender's outcome line."""
    port = free_ports(1)
    lanes = common.get("lanes", 1)
    base = free_ports(lanes)
    common = {"lane_ports": base, "deadline": 120, "idle_timeout": 30, **common}
    sender.start(
        data["sender_path"],
        column,
        connect=f"127.0.0.1:{port}",
        **{**common, **(sender_opts or {})},
    )
    df = spark.read.parquet(str(data["receiver_path"]))
    try:
        got: Any = blindjoin.spark.receive(
            df,
            column,
            listen=f"127.0.0.1:{port}",
            return_report=True,
            **{**common, **(receiver_opts or {})},
        )
    except blindjoin.BlindjoinError as e:
        got = e
    return got, sender.result(), {"df": df}


def check_exact(got: Any, out: dict[str, Any], data: dict[str, Any], columns: list[str]) -> None:
    assert not isinstance(got, BaseException), got
    assert "report" in out, out
    result, report = got
    df = out["df"]
    want = expected_ids(data["receiver"], data["sender"], columns)
    assert len(want) > 100 and len(set(want)) == len(want)
    # The matched rows: exactly the pandas join's, duplicates included, whole rows kept.
    assert result.schema == df.schema
    rows = result.collect()
    assert sorted(r["id"] for r in rows) == want
    source = data["receiver"].set_index("id")
    for r in rows[:200]:
        src = source.loc[r["id"]]
        assert (r["email"], r["first"], r["last"], r["note"]) == (
            None if pd.isna(src["email"]) else src["email"],
            src["first"],
            src["last"],
            src["note"],
        )
        assert r["score"] == src["score"] or (r["score"] is None and pd.isna(src["score"]))
    r_distinct = distinct_keys(data["receiver"], columns)
    s_distinct = distinct_keys(data["sender"], columns)
    assert report["intersection"]["rows"] == len(want)
    theirs = keyed(data["sender"], columns)[columns].drop_duplicates()
    ours = keyed(data["receiver"], columns)[columns].drop_duplicates()
    assert report["intersection"]["distinct_keys"] == len(ours.merge(theirs, on=columns))
    assert report["own_set_size"] == r_distinct
    assert report["peer_set_size"] == s_distinct
    assert report["input"]["rows"] == len(data["receiver"])
    assert report["input"]["rows"] - report["input"]["empty_keys"] == len(
        keyed(data["receiver"], columns)
    )
    sent = out["report"]
    assert sent["role"] == "sender" and report["role"] == "receiver"
    assert sent["own_set_size"] == s_distinct
    assert sent["peer_set_size"] == r_distinct
    assert sent["run_id"] == report["run_id"]
    assert sent["peer_max"] == report["own_max"] and sent["own_max"] == report["peer_max"]
    assert len(report["lane_stats"]) == report["lanes"] == sent["lanes"]


# -- Tests -----------------------------------------------------------------------------------


def test_kkrt16_rows_are_exact(spark: Any, sender: Sender, data: dict[str, Any]) -> None:
    got, out, extra = run_pair(
        spark, sender, data, "email", normalize="email", protocol="kkrt16", buckets=8, lanes=2
    )
    check_exact(got, {**out, **extra}, data, ["email"])


def test_ecdh_multi_column_key_rows_are_exact(
    spark: Any, sender: Sender, data: dict[str, Any]
) -> None:
    got, out, extra = run_pair(
        spark,
        sender,
        data,
        ["first", "last"],
        normalize="lower",
        protocol="ecdh",
        buckets=4,
        lanes=2,
    )
    check_exact(got, {**out, **extra}, data, ["first", "last"])


def test_a_number_key_in_one_lane_rows_are_exact(
    spark: Any, sender: Sender, data: dict[str, Any]
) -> None:
    # A double column: its matched rows are found again by their items (Spark's equality of
    # doubles is not the keys'), all buckets in one lane.
    got, out, extra = run_pair(spark, sender, data, "score", buckets=2, lanes=1)
    check_exact(got, {**out, **extra}, data, ["score"])


def test_buckets_that_differ_end_both_runs(
    spark: Any, sender: Sender, data: dict[str, Any]
) -> None:
    got, out, _ = run_pair(
        spark,
        sender,
        data,
        "email",
        normalize="email",
        lanes=2,
        receiver_opts={"buckets": 8},
        sender_opts={"buckets": 4},
    )
    assert isinstance(got, blindjoin.PeerError), got
    assert "buckets" in str(got) and "\n" not in str(got)
    assert out.get("peer") is True, out
    assert "buckets" in out["message"] and "\n" not in out["message"]


def test_a_failed_lane_ends_both_runs(spark: Any, sender: Sender, data: dict[str, Any]) -> None:
    # Lane 1's port is taken on the receiver's side: its task fails, the receiver's driver
    # tells the sender's, which cancels its job.
    base = free_ports(2)
    taken = socket.socket()
    taken.bind(("127.0.0.1", base + 1))
    taken.listen()
    try:
        started = time.monotonic()
        got, out, _ = run_pair(
            spark, sender, data, "email", normalize="email", buckets=4, lanes=2, lane_ports=base
        )
    finally:
        taken.close()
    assert isinstance(got, blindjoin.BlindjoinError), got
    assert str(got).startswith("lane 1: ") and "cannot listen" in str(got), got
    assert "\n" not in str(got)
    assert out.get("peer") is True, out
    assert "lane 1: " in out["message"] and "cannot listen" in out["message"], out
    assert time.monotonic() - started < RUN_WAIT


def test_more_lanes_than_slots_are_refused(spark: Any, data: dict[str, Any]) -> None:
    df = spark.read.parquet(str(data["receiver_path"]))
    with pytest.raises(ValueError, match=r"lanes=3 is more than the Spark cluster's 2 task slots"):
        blindjoin.spark.receive(df, "email", listen="127.0.0.1:9", buckets=8, lanes=3)
