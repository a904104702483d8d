"""Private set intersection on Spark DataFrames: a bucketed run whose lanes are Spark tasks.

Each party runs :func:`receive` or :func:`send` on its own Spark cluster, on a pyspark
DataFrame::

    import blindjoin.spark

    # the receiver: its driver listens on 7878, its lane tasks on 7900, 7901, …
    matched = blindjoin.spark.receive(customers, "email", normalize="email",
                                      listen="0.0.0.0:7878", lane_ports=7900,
                                      buckets=64, lanes=8, tls_cert=..., tls_key=...,
                                      peer_fingerprint="sha256:…")

    # the sender, on another cluster: reaches the receiver's driver and lane host
    report = blindjoin.spark.send(subscribers, "email", normalize="email",
                                  connect="receiver.example:7878", lane_ports=7900,
                                  buckets=64, lanes=8, tls_cert=..., tls_key=...,
                                  peer_fingerprint="sha256:…")

The run is the command's bucketed run (``blindjoin receive --buckets B --parallel K``): both
parties split their keys into B buckets by a hash keyed in the run's handshake, bucket p of one
side runs an ordinary PSI session with bucket p of the other, each padded with random dummies to
a public maximum, and K lanes (connections) run buckets w, w + K, w + 2K, … in order.

**How it runs on Spark.**

1. The driver opens the run's first connection (``listen`` or ``connect``) and runs the run
   handshake: protocol, κ, λ, B, K, the normalisation, the number of key columns and the lanes'
   base port must agree, or both parties stop with an error naming the field (``buckets``, …).
2. The executors hash every row's key with the command's normaliser and hasher (only the key
   columns go to Python, through an Arrow UDF); rows with a missing or empty key never match
   and are dropped. Each row's bucket comes from the run's key, and Spark moves the rows (their
   items, and for the receiver their key columns) so that partition w holds buckets w, w + K, ….
3. One barrier stage of K tasks (Spark starts them all at once) runs the lanes: task w counts
   the distinct items of its buckets, opens lane w (the receiver's task listens on port
   ``lane_ports + w`` of its executor, the sender's connects to ``lane_host:lane_ports + w``),
   lane 0 exchanges the parties' distinct counts from all lanes' counts (which pass through the
   driver) and checks every bucket against its public maximum, and each lane runs its buckets.
   A lane runs at most once in a run: a retried stage is refused (a re-run would let the
   receiver query the same buckets again).
4. The receiver's tasks return the key columns of their matched rows (or, for key columns that
   Spark compares otherwise than as the keys' text, such as floats, their items); the receiver's
   rows with those keys are its result, materialised (``localCheckpoint``) before the receiver's
   driver sends its final verdict, so a run that returns has a complete, confirmed result.
   ``df`` is read twice (once for the keys, once for the matched rows): cache it first if it is
   costly to compute, and it must give the same rows both times.

**Deployment.** Each party runs its own Spark cluster; the two only talk over the run's
connections. The receiver's driver listens on ``listen`` and its lane tasks on the port range
``lane_ports`` … ``lane_ports + K − 1`` of the host they run on, which the sender must reach at
``lane_host`` (default: the host of ``connect``): run the receiver's lanes on one executor host
(or put the range behind one address). The tasks also reach their own driver on a port it
opens on ``spark.driver.host``. The executors need ``blindjoin`` (and pyarrow) installed in
their Python, and, with TLS, the certificate files at the same paths as the driver. K must not
exceed the cluster's task slots (``sc.defaultParallelism / spark.task.cpus``): a barrier stage
needs all its tasks running at once, so a larger K is refused before connecting. Each lane's
task holds its rows' items (and the receiver's key columns) in memory: about n / K rows. On a
``local`` master the executors' Python is set to the driver's (``sys.executable``) unless
``PYSPARK_PYTHON`` or ``spark.pyspark.python`` says otherwise.

**What each side learns**: B, K, the lanes' base port and each other's number of distinct keys,
as in the command's bucketed run; every bucket's session announces only the public maximum
(a function of the distinct count, B and λ), so nothing per bucket beyond it. The receiver
learns its matched rows, the sender nothing else.

**Failures.** Any failure ends both runs with a one-line error: a failed lane task reports its
error to its driver, which tells the peer's driver on the run's first connection; a driver that
sees the peer's connection close cancels its own Spark job. A lane waits at most ``idle_timeout``
for the peer's lane to connect. The errors are those of :mod:`blindjoin`: :class:`PeerError` for
the peer and the connections (a lane's error starts with ``lane w:``), :class:`InputError` for
the data, :class:`BlindjoinError` for the rest.
"""

from __future__ import annotations

import functools
import json
import operator
import os
import secrets
import socket
import sys
import threading
import time
from typing import Any

import pyarrow as pa

from . import _blindjoin, _key_positions
from ._errors import BlindjoinError, InputError, PeerError

__all__ = ["receive", "send"]

_LABEL = "<Spark DataFrame>"

# Columns the run adds to the rows on their way to the lanes.
_PREFIX = "__blindjoin_"
_KEYS = _PREFIX + "keys"
_ITEM = "item"
_BUCKET = "bucket"
_ITEM_COLUMN = _PREFIX + _ITEM
_BUCKET_COLUMN = _PREFIX + _BUCKET

# How long a driver whose own job failed with the peer's or the connection's error waits for the
# peer's reason (the peer, where the failure began, sends it at once).
_PEER_REASON_WAIT = 10.0

_ERRORS = {"InputError": InputError, "PeerError": PeerError}

# The most distinct matched keys the receiver's matched rows are found with by a broadcast join.
_BROADCAST = 1 << 21


def _exact_type(t: Any) -> bool:
    """Whether Spark's equality of values of type ``t`` is the equality of their keys (the text
    the keys are hashed from): text and binary (compared as bytes), integers, dates, decimals
    (of one column, one scale) and booleans. Not floats (-0.0 equals 0.0), nor nested types."""
    from pyspark.sql import types as T

    return isinstance(
        t,
        (
            T.StringType,
            T.BinaryType,
            T.ByteType,
            T.ShortType,
            T.IntegerType,
            T.LongType,
            T.DateType,
            T.DecimalType,
            T.BooleanType,
        ),
    )


def _join_key(c: Any, t: Any) -> Any:
    """A key column as it is compared in the join: text as its bytes (whatever its collation)."""
    from pyspark.sql import types as T

    return c.cast("binary") if isinstance(t, T.StringType) else c


def _one_line(e: BaseException) -> str:
    """The first line of an error's text that says something."""
    for line in str(e).splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "^")):
            return line
    return type(e).__name__


def _column(df: Any, name: str) -> Any:
    """Column ``name`` of ``df``, the name taken as it is (dots and all)."""
    return df["`" + name.replace("`", "``") + "`"]


def _split_address(name: str, address: Any) -> tuple[str, int]:
    if not isinstance(address, str):
        raise TypeError(f"{name} must be an address such as \"0.0.0.0:7878\"")
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{name} must be host:port, not `{address}`")
    return host, int(port)


def _count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, not {value}")
    return value


def _local_python(sc: Any) -> None:
    """On a local master, runs the tasks in this interpreter (the one blindjoin is in) unless
    the user chose the executors' Python."""
    if not sc.master.startswith("local"):
        return
    if os.environ.get("PYSPARK_PYTHON") or sc.getConf().get("spark.pyspark.python", None):
        return
    sc.pythonExec = sys.executable


_DESIGNATORS: dict[int, list[int]] = {}


def _designators(spark: Any, lanes: int) -> list[int]:
    """For each lane w, a value that Spark's hash partitioning into ``lanes`` partitions sends to
    partition w (``pmod(hash(v), lanes) == w``; Spark's hash is fixed, so found once)."""
    if lanes in _DESIGNATORS:
        return _DESIGNATORS[lanes]
    found: dict[int, int] = {}
    start = 0
    while len(found) < lanes:
        rows = (
            spark.range(start, start + 64 * lanes)
            .selectExpr("id", f"pmod(hash(id), {lanes}) AS p")
            .collect()
        )
        for r in rows:
            found.setdefault(int(r["p"]), int(r["id"]))
        start += 64 * lanes
    _DESIGNATORS[lanes] = [found[w] for w in range(lanes)]
    return _DESIGNATORS[lanes]


# -- The lanes' registry on the driver -----------------------------------------------------

# Longest request or reply line between a task and the registry that does not carry counts.
_LINE = 1 << 12

# The most connections the registry serves at once (each on a thread of its own); more are
# closed at once. A run has at most a few per lane.
_HANDLERS = 64

# The whole time a connection may take to send its line (a connection that trickles is cut
# then, whatever its pace).
_REQUEST_SECONDS = 10.0


def _line_limit(buckets: int) -> int:
    """The longest line of a run of ``buckets`` buckets: a lane's counts (at most B pairs of two
    numbers) or the summed counts (B numbers), in JSON."""
    return _LINE + 48 * buckets


def _read_line(conn: socket.socket, limit: int, seconds: float) -> bytes | None:
    """One line of at most ``limit`` bytes from ``conn``, within ``seconds`` in all; ``None`` if
    the connection closes, stalls, trickles past the time or sends a longer line."""
    until = time.monotonic() + seconds
    data = bytearray()
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return None
        conn.settimeout(left)
        try:
            chunk = conn.recv(min(1 << 16, limit + 1 - len(data)))
        except OSError:
            return None
        if not chunk:
            return None
        end = chunk.find(b"\n")
        if end >= 0:
            data += chunk[:end]
            return bytes(data) if len(data) <= limit else None
        data += chunk
        if len(data) > limit:
            return None


# The plan lane 0 gives the registry (``SparkLane.agree``): these counts, each a non-negative
# integer.
_PLAN_KEYS = ("own_size", "peer_size", "own_max", "peer_max", "dummies")

# A lane's statistics at its end (``SparkLane.run``, the task's rows, output and phases): the
# counts are non-negative integers, ``seconds`` and each phase a non-negative number.
_STAT_COUNTS = ("distinct", "matched", "bytes_sent", "bytes_received", "rows", "out")


def _count_value(v: Any) -> bool:
    return type(v) is int and v >= 0


def _seconds_value(v: Any) -> bool:
    return type(v) in (int, float) and 0 <= v < float("inf")


def _is_plan(plan: Any) -> bool:
    return (
        isinstance(plan, dict)
        and set(plan) == set(_PLAN_KEYS)
        and all(_count_value(plan[k]) for k in _PLAN_KEYS)
    )


def _is_stats(stats: Any) -> bool:
    if not isinstance(stats, dict) or set(stats) != {*_STAT_COUNTS, "seconds", "phases"}:
        return False
    phases = stats["phases"]
    return (
        all(_count_value(stats[k]) for k in _STAT_COUNTS)
        and _seconds_value(stats["seconds"])
        and isinstance(phases, dict)
        and len(phases) <= 16
        and all(type(k) is str and _seconds_value(v) for k, v in phases.items())
    )


class _Lanes:
    """The registry's state and its answer to each decoded request, apart from the connections
    (``_Registry`` serves it; the fuzz target ``crates/blindjoin-py/fuzz/registry.py`` drives it
    directly). A request that does not fit the run (token, lane, shape of its counts, plan or
    statistics) is refused and changes nothing; a lane's error is kept once."""

    def __init__(self, buckets: int, lanes: int, token: str) -> None:
        self.token = token
        self.buckets = buckets
        self.lanes = lanes
        self.claimed: set[int] = set()
        self.counts: dict[int, list[list[int]]] = {}
        self.plan: dict[str, Any] | None = None
        self.done: dict[int, dict[str, Any]] = {}
        self.errors: list[tuple[int, str, str]] = []

    def answer(self, line: bytes) -> bytes | None:
        """The reply line to one request line, or ``None`` for a line that is not JSON (nested
        past the decoder's depth included); never raises."""
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            return None
        return json.dumps(self.handle(msg)).encode() + b"\n"

    def handle(self, msg: Any) -> Any:
        """The reply to one decoded request (never raises)."""
        try:
            return self._handle(msg)
        except (ValueError, TypeError, KeyError, IndexError, OverflowError):
            return "refused"

    def _handle(self, msg: Any) -> Any:
        if not isinstance(msg, dict) or msg.get("token") != self.token:
            return "refused"
        lane = msg.get("lane")
        kind = msg.get("kind")
        if type(lane) is not int or not 0 <= lane < self.lanes:
            return "refused"
        if kind == "claim":
            if lane in self.claimed:
                return "again"
            self.claimed.add(lane)
            return "ok"
        if kind == "counts":
            pairs = msg.get("counts")
            if not isinstance(pairs, list) or not all(
                isinstance(pc, list)
                and len(pc) == 2
                and all(type(v) is int for v in pc)
                and 0 <= pc[0] < self.buckets
                and pc[1] >= 0
                for pc in pairs
            ):
                return "refused"
            self.counts[lane] = pairs
            return "ok"
        if kind == "plan":
            plan = msg.get("plan")
            if lane != 0 or not _is_plan(plan):
                return "refused"
            self.plan = plan
            return "ok"
        if kind in ("get counts", "get plan"):
            if self.errors:
                return "failed"
            if kind == "get plan":
                return self.plan if self.plan is not None else "wait"
            if len(self.counts) < self.lanes:
                return "wait"
            counts = [0] * self.buckets
            for pairs in self.counts.values():
                for p, c in pairs:
                    counts[p] = c
            return counts
        if kind == "done":
            stats = msg.get("stats")
            if not _is_stats(stats):
                return "refused"
            self.done[lane] = stats
            return "ok"
        if kind == "error":
            cls, message = msg.get("class"), msg.get("message")
            if type(cls) is not str or type(message) is not str:
                return "refused"
            if all(e[0] != lane for e in self.errors):
                self.errors.append((lane, cls, message))
            return "ok"
        return "refused"

    def error(self) -> BaseException | None:
        """The lanes' error to report: one that is not the peer's (where the failure began),
        else the first."""
        if not self.errors:
            return None
        own = [e for e in self.errors if e[1] != "PeerError"]
        _, cls, message = (own or self.errors)[0]
        return _ERRORS.get(cls, BlindjoinError)(message)


class _Registry(_Lanes):
    """On the driver: lets each lane start once in a run (a retried barrier stage is refused),
    passes the lanes' distinct counts to lane 0 and lane 0's plan to the others, and gathers
    the lanes' statistics and errors. The tasks reach it over TCP at the driver's host
    (``spark.driver.host``) with a random token; one short connection per message. Each
    connection is served on a thread of its own (at most ``_HANDLERS`` at once), must send its
    one line within ``_REQUEST_SECONDS`` and may not send more than ``_line_limit(B)`` bytes,
    so a connection that stays silent or trickles holds only itself. Plain TCP: anyone who can
    reach the port and learns the token (it travels in the clear) can talk to it; run the
    driver where only the cluster reaches it."""

    def __init__(self, sc: Any, buckets: int, lanes: int) -> None:
        super().__init__(buckets, lanes, secrets.token_hex(16))
        conf = sc.getConf()
        host = conf.get("spark.driver.host", None) or socket.gethostname()
        bind = conf.get("spark.driver.bindAddress", None) or host
        self.server = socket.create_server((bind, 0))
        self.server.settimeout(0.2)
        self.address = (host, self.server.getsockname()[1])
        self.limit = _line_limit(buckets)
        self._lock = threading.Lock()
        self._handlers = threading.BoundedSemaphore(_HANDLERS)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="blindjoin-lanes", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._handlers.acquire(blocking=False):
                conn.close()
                continue
            threading.Thread(
                target=self._answer, args=(conn,), name="blindjoin-lane-msg", daemon=True
            ).start()

    def _answer(self, conn: socket.socket) -> None:
        """Reads one request line from ``conn`` and answers it."""
        try:
            with conn:
                line = _read_line(conn, self.limit, _REQUEST_SECONDS)
                if line is None:
                    return
                with self._lock:
                    reply = self.answer(line)
                if reply is None:
                    return
                conn.settimeout(_REQUEST_SECONDS)
                conn.sendall(reply)
        except (OSError, ValueError, TypeError):
            pass
        finally:
            self._handlers.release()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.server.close()


def _tell(registry: tuple[tuple[str, int], str], msg: dict[str, Any]) -> Any:
    """Sends one message to the driver's registry (in a task); returns the reply."""
    address, token = registry
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(json.dumps({**msg, "token": token}).encode() + b"\n")
        return json.loads(s.makefile("rb").readline(_line_limit(1 << 16) + 1))


class _Stopped(BlindjoinError):
    """A lane stopped because another lane of its run failed (that lane's error is the run's)."""


def _wait_for(
    registry: tuple[tuple[str, int], str], lane: int, kind: str, seconds: float
) -> Any:
    """Asks the registry for what another lane provides (``get counts``, ``get plan``) until it
    is there, another lane failed, or ``seconds`` have passed."""
    until = time.monotonic() + seconds
    pause = 0.002
    while True:
        reply = _tell(registry, {"kind": kind, "lane": lane})
        if reply == "failed":
            raise _Stopped(f"lane {lane}: stopped, another lane failed")
        if reply != "wait":
            return reply
        if time.monotonic() > until:
            what = "the lanes' counts" if kind == "get counts" else "lane 0's plan"
            raise BlindjoinError(f"lane {lane}: {what} did not come within {seconds:.0f} s")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


# -- What runs on the executors ------------------------------------------------------------


def _keys_function(
    options: dict[str, Any],
    key: bytes,
    buckets: int,
    rows_acc: Any,
    empty_acc: Any,
) -> Any:
    """The Arrow UDF's function: the struct of a batch's key columns to the struct of each row's
    item and bucket (null where the row has no key); it counts the rows and those without a key
    in the accumulators (if given)."""

    def keys(columns: pa.Array) -> pa.Array:
        import pyarrow as pa

        from blindjoin import _blindjoin

        batch = pa.RecordBatch.from_struct_array(columns)
        items, bucket = _blindjoin.spark_keys(batch, options, key, buckets)
        if rows_acc is not None:
            rows_acc.add(len(columns))
            empty_acc.add(items.null_count)
        return pa.StructArray.from_arrays([items, bucket], names=[_ITEM, _BUCKET])

    return keys


def _item_batch(table: pa.Table | None) -> pa.RecordBatch:
    """The item and bucket columns of a lane's rows, in one batch."""
    if table is None or table.num_rows == 0:
        return pa.RecordBatch.from_arrays(
            [pa.array([], pa.binary()), pa.array([], pa.int32())], names=[_ITEM, _BUCKET]
        )
    return pa.RecordBatch.from_arrays(
        [
            table.column(_ITEM_COLUMN).combine_chunks(),
            table.column(_BUCKET_COLUMN).combine_chunks(),
        ],
        names=[_ITEM, _BUCKET],
    )


def _lane_task(
    role: str,
    options: dict[str, Any],
    run: dict[str, Any],
    lane_address: tuple[str, int],
    registry: tuple[tuple[str, int], str],
    keep: list[str] | None,
) -> Any:
    """The function of the barrier stage: task w runs lane w (lane 0 also agrees the sizes, from
    the counts all lanes give the registry). The receiver's tasks yield what stands for their
    matched rows: the distinct key columns ``keep`` of their matched rows (renamed to
    ``__blindjoin_k0``, …), or, with ``keep`` empty, the distinct matched items."""

    def task(batches: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import BarrierTaskContext

        from blindjoin import _blindjoin

        lane = BarrierTaskContext.get().partitionId()
        if _tell(registry, {"kind": "claim", "lane": lane}) != "ok":
            raise BlindjoinError(
                f"lane {lane}: this lane already ran in this run (Spark retried the stage after "
                "a failure); a lane never runs twice"
            )
        phases: dict[str, float] = {}
        last = time.monotonic()

        def lap(name: str) -> None:
            nonlocal last
            now = time.monotonic()
            phases[name] = now - last
            last = now

        try:
            got = list(batches)
            table = pa.Table.from_batches(got) if got else None
            host, base = lane_address
            o = dict(options)
            o["listen" if role == "receive" else "connect"] = f"{host}:{base + lane}"
            this = _blindjoin.SparkLane(role, o, run, lane, _item_batch(table))
            _tell(registry, {"kind": "counts", "lane": lane, "counts": this.counts()})
            lap("rows")
            this.open()
            lap("connect")
            if lane == 0:
                counts = _wait_for(registry, lane, "get counts", run["wait"])
                plan = this.agree(sum(counts), counts)
                _tell(registry, {"kind": "plan", "lane": 0, "plan": plan})
            else:
                plan = _wait_for(registry, lane, "get plan", run["wait"])
            lap("sizes")
            rows, stats = this.run(plan)
            lap("buckets")
        except _Stopped:
            raise
        except BaseException as e:
            message = f"lane {lane}: {e}"
            try:
                _tell(
                    registry,
                    {"kind": "error", "lane": lane, "class": type(e).__name__, "message": message},
                )
            except OSError:
                pass
            raise type(e)(message) if isinstance(e, BlindjoinError) else e
        stats["rows"] = len(rows)
        out = 0
        if keep is not None and table is not None and len(rows):
            matched = table.take(rows)
            if keep:
                names = [f"{_PREFIX}k{i}" for i in range(len(keep))]
                found = matched.select(keep).rename_columns(names).group_by(names).aggregate([])
            else:
                items = pc.unique(matched.column(_ITEM_COLUMN).combine_chunks())
                found = pa.table({_ITEM_COLUMN: items})
            out = found.num_rows
            yield from found.to_batches()
        stats["out"] = out
        lap("output")
        stats["phases"] = phases
        _tell(registry, {"kind": "done", "lane": lane, "stats": stats})

    return task


# -- The driver -----------------------------------------------------------------------------


class _Watch:
    """While the lanes run, watches the run's first connection: when the peer closes it (its run
    failed) the job of ``tag`` is cancelled."""

    def __init__(self, driver: Any, sc: Any, tag: str) -> None:
        self.closed = threading.Event()
        self._stop = threading.Event()

        def watch() -> None:
            while not self._stop.is_set():
                if driver.peer_closed(0.2):
                    self.closed.set()
                    try:
                        sc.cancelJobsWithTag(tag)
                    except Exception:  # noqa: BLE001 - the job may be over
                        pass
                    return

        self._thread = threading.Thread(target=watch, name="blindjoin-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _peer_reason(driver: Any, watch: _Watch | None, own: BaseException) -> BaseException | None:
    """After our run failed with ``own``: the peer's reason if its run failed first (it sends
    the reason on the run's first connection and closes it), else None. A failure that is the
    peer's or the connection's waits a little for the reason."""
    wait = _PEER_REASON_WAIT if isinstance(own, PeerError) else 0.0
    closed = watch is not None and watch.closed.is_set()
    until = time.monotonic() + wait
    while not closed:
        closed = driver.peer_closed(0.05 if wait == 0 else 0.2)
        if time.monotonic() >= until:
            break
    if not closed:
        return None
    try:
        driver.finish()
    except BlindjoinError as e:
        return e
    return None


def _run(
    role: str,
    df: Any,
    column: Any,
    buckets: int,
    lanes: int,
    lane_ports: int | None,
    lane_host: str | None,
    options: dict[str, Any],
) -> tuple[Any, dict[str, Any]]:
    try:
        from pyspark.sql import DataFrame
        from pyspark.sql import functions as F
        from pyspark.sql.functions import ArrowUDFType, arrow_udf
        from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType
    except ImportError as e:
        raise ImportError("blindjoin.spark needs pyspark (pip install pyspark)") from e
    if not isinstance(df, DataFrame):
        raise TypeError(f"df must be a pyspark DataFrame, not {type(df).__name__}")
    receiver = role == "receive"
    buckets = _count("buckets", buckets, 2)
    lanes = _count("lanes", lanes, 1)
    if lanes > buckets:
        raise ValueError(f"lanes={lanes} is more than buckets={buckets}")
    spark = df.sparkSession
    sc = spark.sparkContext
    cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    slots = sc.defaultParallelism // max(cpus, 1)
    if lanes > slots:
        raise ValueError(
            f"lanes={lanes} is more than the Spark cluster's {slots} task slots "
            f"(defaultParallelism {sc.defaultParallelism}, spark.task.cpus {cpus}): the lanes run "
            "as one barrier stage, all at once"
        )
    names = list(df.columns)
    if any(n.startswith(_PREFIX) for n in names):
        raise ValueError(f"{_LABEL}: column names starting with `{_PREFIX}` are the run's own")
    positions = _key_positions(names, column, _LABEL)
    keys = [names[p] for p in positions]
    if len(set(keys)) != len(keys):
        raise ValueError(f"column names `{keys[0]}` twice")
    where = options.get("listen") if receiver else options.get("connect")
    if where is None or (options.get("listen") is None) == (options.get("connect") is None):
        raise ValueError(
            "give listen (the receiver's address, such as \"0.0.0.0:7878\")"
            if receiver
            else "give connect (the receiver's address, such as \"receiver.example:7878\")"
        )
    host, port = _split_address("listen" if receiver else "connect", where)
    base = port + 1 if lane_ports is None else _count("lane_ports", lane_ports, 1)
    if base + lanes - 1 > 65535:
        raise ValueError(f"lane_ports={base} leaves no room for {lanes} lanes below port 65536")
    if lane_host is not None:
        if receiver:
            raise ValueError(
                "lane_host is the sender's: the receiver's lanes listen on listen's host"
            )
        if not isinstance(lane_host, str) or not lane_host:
            raise TypeError("lane_host must be a host name or address")
        host = lane_host
    threads = options.get("threads") or cpus
    _local_python(sc)

    phases: list[dict[str, Any]] = []
    t0 = last = time.monotonic()

    def lap(name: str) -> None:
        nonlocal last
        now = time.monotonic()
        phases.append({"name": name, "seconds": now - last})
        last = now

    extra = [("lanes", "spark"), ("lane_ports", str(base))]
    driver = _blindjoin.SparkDriver(role, options, buckets, lanes, len(keys), extra)
    lap("connect and run handshake")
    run_id = driver.run_id
    tag = f"blindjoin-{run_id[:16]}"
    registry = None
    watch = None
    result = None
    sc.addJobTag(tag)
    try:
        designators = _designators(spark, lanes)
        registry = _Registry(sc, buckets, lanes)
        # From here the peer's connection is watched: a peer that fails ends our job.
        watch = _Watch(driver, sc, tag)
        key_options = {
            "normalize": options.get("normalize"),
            "country_code": options.get("country_code"),
            "threads": threads,
        }
        rows_acc = sc.accumulator(0)
        empty_acc = sc.accumulator(0)
        keys_type = StructType(
            [
                StructField(_ITEM, BinaryType()),
                StructField(_BUCKET, IntegerType()),
            ]
        )

        def keys_udf(counted: bool) -> Any:
            f = _keys_function(
                key_options,
                driver.partition_key,
                buckets,
                rows_acc if counted else None,
                empty_acc if counted else None,
            )
            # Nondeterministic: evaluated once per row, not copied into a filter or a join.
            return arrow_udf(f, keys_type, ArrowUDFType.SCALAR).asNondeterministic()

        key_struct = F.struct(*[_column(df, k) for k in keys])
        # The receiver's matched rows are found again by their key columns where the columns'
        # equality is the keys' (text and binary compared as bytes, integers, dates, decimals,
        # booleans), else by their items.
        by_columns = receiver and all(_exact_type(df.schema[k].dataType) for k in keys)
        # Only the key columns go to Python; each row gets its item, bucket and lane, rows
        # without a key are dropped, and Spark places lane w's rows in partition w.
        kept = [_column(df, k) for k in keys] if by_columns else []
        keyed = (
            df.select(*kept, keys_udf(True)(key_struct).alias(_KEYS))
            .where(F.col(_KEYS)[_ITEM].isNotNull())
            .select(
                *kept,
                F.col(_KEYS)[_ITEM].alias(_ITEM_COLUMN),
                F.col(_KEYS)[_BUCKET].alias(_BUCKET_COLUMN),
            )
        )
        # Hash partitioning sends lane w's designator to partition w.
        lane_of = F.element_at(
            F.array(*[F.lit(d).cast("long") for d in designators]),
            F.pmod(F.col(_BUCKET_COLUMN), F.lit(lanes)) + 1,
        )
        staged = keyed.repartition(lanes, lane_of)
        run = {
            "run_id": run_id,
            "buckets": buckets,
            "lanes": lanes,
            "key_fields": len(keys),
            "deadline_left": driver.deadline_left,
            "wait": 2 * driver.idle_seconds + 30,
        }
        lane_options = dict(options)
        lane_options["threads"] = threads
        lane_options["listen"] = lane_options["connect"] = None
        task = _lane_task(
            role,
            lane_options,
            run,
            (host, base),
            (registry.address, registry.token),
            (keys if by_columns else []) if receiver else None,
        )
        if receiver:
            if by_columns:
                found_schema = StructType(
                    [
                        StructField(f"{_PREFIX}k{i}", df.schema[k].dataType)
                        for i, k in enumerate(keys)
                    ]
                )
            else:
                found_schema = StructType([StructField(_ITEM_COLUMN, BinaryType())])
            found = staged.mapInArrow(task, found_schema, barrier=True).localCheckpoint(
                eager=True
            )
        else:
            staged.mapInArrow(task, "lane int", barrier=True).collect()
        watch.stop()
        lap("keys, sizes and lanes")
        if registry.plan is None or len(registry.done) != lanes:
            raise BlindjoinError(
                f"{lanes - len(registry.done)} of {lanes} lanes did not report their end"
            )
        if receiver:
            # The matched rows: the rows of df whose key is one the lanes matched.
            small = sum(int(d.get("out", 0)) for d in registry.done.values()) <= _BROADCAST
            right = F.broadcast(found) if small else found
            if by_columns:
                same = [
                    _join_key(_column(df, k), df.schema[k].dataType)
                    == _join_key(found[f"{_PREFIX}k{i}"], df.schema[k].dataType)
                    for i, k in enumerate(keys)
                ]
                matched = df.join(right, functools.reduce(operator.and_, same), "left_semi")
            else:
                again = df.select(
                    *[_column(df, c) for c in names], keys_udf(False)(key_struct).alias(_KEYS)
                )
                matched = again.join(
                    right, again[_KEYS][_ITEM] == right[_ITEM_COLUMN], "left_semi"
                ).select(*[_column(again, c) for c in names])
            result = matched.localCheckpoint(eager=True)
            found.unpersist()
            lap("matched rows")
        plan = registry.plan
        traffic = driver.finish()
        lap("confirmation")
    except BaseException as e:
        if watch is not None:
            watch.stop()
        if isinstance(e, KeyboardInterrupt):
            driver.fail("cancelled by the user (KeyboardInterrupt)")
            raise
        own = (registry.error() if registry is not None else None) or e
        if driver.open:
            peer = _peer_reason(driver, watch, own)
            if peer is not None:
                raise peer from None
        if not isinstance(own, BlindjoinError):
            own = BlindjoinError(_one_line(own))
        driver.fail(str(own))
        raise own from None
    finally:
        sc.removeJobTag(tag)
        if registry is not None:
            registry.close()

    done = [registry.done[w] for w in sorted(registry.done)]
    for name in ("bytes_sent", "bytes_received"):
        traffic[name] += sum(int(d.get(name, 0)) for d in done)
    report: dict[str, Any] = {
        "protocol": options.get("protocol"),
        "role": "receiver" if receiver else "sender",
        "run_id": run_id,
        "buckets": buckets,
        "lanes": lanes,
        "input": {
            "rows": rows_acc.value,
            "empty_keys": empty_acc.value,
            "distinct_keys": plan["own_size"],
        },
        "own_set_size": plan["own_size"],
        "peer_set_size": plan["peer_size"],
        "own_max": plan["own_max"],
        "peer_max": plan["peer_max"],
        "dummies": plan["dummies"],
        "traffic": traffic,
        "lane_stats": [{"lane": w, **registry.done[w]} for w in sorted(registry.done)],
        "phases": phases,
        "wall_seconds": time.monotonic() - t0,
    }
    if receiver:
        report["intersection"] = {
            "distinct_keys": sum(int(d.get("matched", 0)) for d in done),
            "rows": sum(int(d.get("rows", 0)) for d in done),
        }
    return result, report


def _options(
    protocol: str,
    normalize: str | None,
    threads: int | None,
    listen: str | None,
    connect: str | None,
    options: dict[str, Any],
) -> dict[str, Any]:
    for name in ("format",):
        if options.get(name) is not None:
            raise TypeError(f"{name}= is for files; blindjoin.spark reads a DataFrame")
    options.update(
        protocol=protocol, listen=listen, connect=connect, normalize=normalize, threads=threads
    )
    return options


def receive(
    df: Any,
    column: str | list[str] | None = None,
    *,
    listen: str | None = None,
    buckets: int = 16,
    lanes: int = 1,
    lane_ports: int | None = None,
    protocol: str = _blindjoin.DEFAULT_PROTOCOL,
    normalize: str | None = None,
    threads: int | None = None,
    return_report: bool = False,
    **options: Any,
) -> Any:
    """Be the receiver on a Spark DataFrame: return the rows of ``df`` whose key the sender
    also has.

    Args:
        df: a pyspark DataFrame (the receiver's rows).
        column: the key column, or a list of columns that together make the key (as in
            :func:`blindjoin.receive`); needed when ``df`` has more than one column.
        listen: the address the driver waits for the sender on (``"0.0.0.0:7878"``).
        buckets: B, the number of buckets (at least 2; the sender must give the same).
        lanes: K, the lanes (barrier tasks, connections) that run buckets at once (at most B
            and at most the cluster's task slots; the same on both sides).
        lane_ports: the first of the K ports the lane tasks listen on (default: ``listen``'s
            port + 1); the sender must give the same.
        protocol, normalize, threads, **options: as for :func:`blindjoin.receive` (``threads``:
            worker threads per task, default ``spark.task.cpus``; ``idle_timeout`` also bounds
            a lane's wait for the peer's lane).
        return_report: return ``(rows, report)``.

    Returns:
        A DataFrame of the matched rows (every row carrying a matched key, duplicates included),
        with ``df``'s schema, materialised (local checkpoint) before the run's final verdict.
    """
    opts = _options(protocol, normalize, threads, listen, None, options)
    rows, report = _run("receive", df, column, buckets, lanes, lane_ports, None, opts)
    return (rows, report) if return_report else rows


def send(
    df: Any,
    column: str | list[str] | None = None,
    *,
    connect: str | None = None,
    buckets: int = 16,
    lanes: int = 1,
    lane_ports: int | None = None,
    lane_host: str | None = None,
    protocol: str = _blindjoin.DEFAULT_PROTOCOL,
    normalize: str | None = None,
    threads: int | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Be the sender on a Spark DataFrame: help the receiver find the common rows; learn only
    its number of distinct keys.

    Args:
        df, column, buckets, lanes, lane_ports, protocol, normalize, threads, **options: as for
            :func:`receive`.
        connect: the receiver driver's address (``"receiver.example:7878"``).
        lane_host: the host of the receiver's lane tasks (default: ``connect``'s host); lane w
            is at ``lane_host:lane_ports + w``.

    Returns:
        The run's report: ``own_set_size``, ``peer_set_size`` (the receiver's distinct keys),
        ``own_max`` and ``peer_max`` (the buckets' public maxima), ``input``, ``traffic``,
        ``lane_stats``, ``phases``, ``wall_seconds``.
    """
    opts = _options(protocol, normalize, threads, None, connect, options)
    _, report = _run("send", df, column, buckets, lanes, lane_ports, lane_host, opts)
    return report
