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
   handshake: protocol, κ, λ, B, K, the normalisation, the key columns' count and the lanes' base
   port must agree, or both parties stop with an error naming the field (``buckets``, …).
2. The executors hash every row's key with the command's normaliser and hasher (rows with a
   missing or empty key never match and are dropped), compute its bucket under the run's key,
   and Spark moves the rows so that partition w holds the rows of buckets w, w + K, … (cached).
3. The distinct items per bucket are counted on the executors; the drivers exchange their totals
   and check every bucket against its public maximum.
4. One barrier stage of K tasks (Spark starts them all at once) runs the lanes: the receiver's
   task w listens on port ``lane_ports + w`` of its executor, the sender's task w connects to
   ``lane_host:lane_ports + w`` and runs its buckets. A lane runs at most once in a run: a
   retried stage is refused (a re-run would let the receiver query the same buckets again).
5. The receiver's tasks yield their matched rows; the result is materialised
   (``localCheckpoint``) before the receiver's driver sends its final verdict, so a run that
   returns has a complete, confirmed result.

**Deployment.** Each party runs its own Spark cluster; the two only talk over the run's
connections. The receiver's driver listens on ``listen`` and its lane tasks on the port range
``lane_ports`` … ``lane_ports + K − 1`` of the host they run on, which the sender must reach at
``lane_host`` (default: the host of ``connect``): run the receiver's lanes on one executor host
(or put the range behind one address). The executors need ``blindjoin`` (and pyarrow) installed
in their Python, and, with TLS, the certificate files at the same paths as the driver. K must
not exceed the cluster's task slots (``sc.defaultParallelism / spark.task.cpus``): a barrier
stage needs all its tasks running at once, so a larger K is refused before connecting. On a
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

import json
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
_ITEM = _PREFIX + "item"
_BUCKET = _PREFIX + "bucket"
_PART = _PREFIX + "lane"

# How long a driver whose own job failed with the peer's or the connection's error waits for the
# peer's reason (the peer, where the failure began, sends it at once).
_PEER_REASON_WAIT = 10.0

_ERRORS = {"InputError": InputError, "PeerError": PeerError}


def _one_line(e: BaseException) -> str:
    """The first line of an error's text that says something."""
    for line in str(e).splitlines():
        line = line.strip()
        if line and not line.startswith(("Traceback", "File ", "^")):
            return line
    return type(e).__name__


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


def _designators(spark: Any, lanes: int) -> list[int]:
    """For each lane w, a value that Spark's hash partitioning into ``lanes`` partitions sends to
    partition w (``pmod(hash(v), lanes) == w``)."""
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
    return [found[w] for w in range(lanes)]


# -- The lanes' registry on the driver -----------------------------------------------------


class _Registry:
    """On the driver: lets each lane start once in a run (a retried barrier stage is refused)
    and gathers the lanes' statistics and errors. The tasks reach it over TCP at the driver's
    host (``spark.driver.host``) with a random token."""

    def __init__(self, sc: Any) -> None:
        conf = sc.getConf()
        host = conf.get("spark.driver.host", None) or socket.gethostname()
        bind = conf.get("spark.driver.bindAddress", None) or host
        self.server = socket.create_server((bind, 0))
        self.server.settimeout(0.2)
        self.address = (host, self.server.getsockname()[1])
        self.token = secrets.token_hex(16)
        self.claimed: set[int] = set()
        self.done: dict[int, dict[str, Any]] = {}
        self.errors: list[tuple[int, str, str]] = []
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
            with conn:
                try:
                    conn.settimeout(10)
                    line = conn.makefile("rb").readline(1 << 16)
                    reply = self._handle(json.loads(line))
                    conn.sendall(reply.encode() + b"\n")
                except (OSError, ValueError):
                    continue

    def _handle(self, msg: dict[str, Any]) -> str:
        if not isinstance(msg, dict) or msg.get("token") != self.token:
            return "refused"
        lane = int(msg.get("lane", -1))
        kind = msg.get("kind")
        if kind == "claim":
            if lane in self.claimed:
                return "again"
            self.claimed.add(lane)
            return "ok"
        if kind == "done":
            self.done[lane] = dict(msg.get("stats") or {})
            return "ok"
        if kind == "error":
            self.errors.append((lane, str(msg.get("class")), str(msg.get("message"))))
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

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.server.close()


def _tell(registry: tuple[tuple[str, int], str], msg: dict[str, Any]) -> str:
    """Sends one message to the driver's registry (in a task); returns the reply."""
    address, token = registry
    with socket.create_connection(address, timeout=30) as s:
        s.sendall(json.dumps({**msg, "token": token}).encode() + b"\n")
        return s.makefile("rb").readline(1024).decode().strip()


# -- What runs on the executors ------------------------------------------------------------


def _keys_task(
    positions: list[int],
    names: list[str],
    keep: bool,
    options: dict[str, Any],
    key: bytes,
    buckets: int,
    designators: list[int],
    rows_acc: Any,
    empty_acc: Any,
) -> Any:
    """The function of ``mapInArrow`` that adds each row's item, bucket and lane designator
    (keeping the row's columns if ``keep``) and drops the rows without a key."""

    def task(batches: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        from blindjoin import _blindjoin

        for b in batches:
            keys = pa.RecordBatch.from_arrays([b.column(p) for p in positions], names=names)
            items, bucket, part = _blindjoin.spark_keys(keys, options, key, buckets, designators)
            valid = pc.is_valid(items)
            kept = valid.true_count
            rows_acc.add(b.num_rows)
            empty_acc.add(b.num_rows - kept)
            columns = (list(b.columns) if keep else []) + [items, bucket, part]
            fields = (list(b.schema.names) if keep else []) + [_ITEM, _BUCKET, _PART]
            out = pa.RecordBatch.from_arrays(columns, names=fields)
            yield out if kept == b.num_rows else out.filter(valid)

    return task


def _item_batch(table: pa.Table | None) -> pa.RecordBatch:
    """The item and bucket columns of a lane's rows, in one batch."""
    if table is None or table.num_rows == 0:
        return pa.RecordBatch.from_arrays(
            [pa.array([], pa.binary()), pa.array([], pa.int32())], names=["item", "bucket"]
        )
    return pa.RecordBatch.from_arrays(
        [table.column(_ITEM).combine_chunks(), table.column(_BUCKET).combine_chunks()],
        names=["item", "bucket"],
    )


def _counts_task(buckets: int, lanes: int) -> Any:
    """The function of ``mapInArrow`` that counts the distinct items per bucket of a lane's
    rows (checking that Spark placed them in the lane's partition)."""

    def task(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark import TaskContext

        from blindjoin import _blindjoin

        ctx = TaskContext.get()
        lane = ctx.partitionId() if ctx is not None else 0
        got = list(batches)
        if not got:
            return
        table = pa.Table.from_batches(got)
        pairs = _blindjoin.spark_counts(_item_batch(table), buckets, lane, lanes)
        yield pa.RecordBatch.from_arrays(
            [pa.array([p for p, _ in pairs], pa.int32()), pa.array([c for _, c in pairs], pa.int64())],
            names=["bucket", "n"],
        )

    return task


def _lane_task(
    role: str,
    options: dict[str, Any],
    plan: dict[str, Any],
    lane_address: tuple[str, int],
    registry: tuple[tuple[str, int], str],
    keep: list[str] | None,
) -> Any:
    """The function of the barrier stage: task w runs lane w and, for the receiver, yields the
    matched rows (the columns ``keep``)."""

    def task(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark import BarrierTaskContext

        from blindjoin import _blindjoin

        lane = BarrierTaskContext.get().partitionId()
        if _tell(registry, {"kind": "claim", "lane": lane}) != "ok":
            raise BlindjoinError(
                f"lane {lane}: this lane already ran in this run (Spark retried the stage after "
                "a failure); a lane never runs twice"
            )
        try:
            got = list(batches)
            table = pa.Table.from_batches(got) if got else None
            host, base = lane_address
            o = dict(options)
            o["listen" if role == "receive" else "connect"] = f"{host}:{base + lane}"
            rows, stats = _blindjoin.spark_lane(role, o, plan, lane, _item_batch(table))
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
        _tell(registry, {"kind": "done", "lane": lane, "stats": stats})
        if keep is not None and table is not None and len(rows):
            yield from table.take(rows).select(keep).to_batches()

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
        from pyspark import StorageLevel
        from pyspark.sql import DataFrame
        from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType
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
            raise ValueError("lane_host is the sender's: the receiver's lanes listen on listen's host")
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
    staged = None
    registry = None
    watch = None
    result = None
    sc.addJobTag(tag)
    try:
        key_options = {
            "normalize": options.get("normalize"),
            "country_code": options.get("country_code"),
            "threads": threads,
        }
        rows_acc = sc.accumulator(0)
        empty_acc = sc.accumulator(0)
        extra_fields = [
            StructField(_ITEM, BinaryType()),
            StructField(_BUCKET, IntegerType()),
            StructField(_PART, LongType()),
        ]
        keyed_schema = StructType((list(df.schema.fields) if receiver else []) + extra_fields)
        keyed = df.mapInArrow(
            _keys_task(
                positions,
                keys,
                receiver,
                key_options,
                driver.partition_key,
                buckets,
                _designators(spark, lanes),
                rows_acc,
                empty_acc,
            ),
            keyed_schema,
        )
        staged = keyed.repartition(lanes, _PART).persist(StorageLevel.MEMORY_AND_DISK)
        counted = (
            staged.select(_ITEM, _BUCKET)
            .mapInArrow(_counts_task(buckets, lanes), "bucket int, n long")
            .collect()
        )
        counts = [0] * buckets
        for r in counted:
            counts[int(r["bucket"])] += int(r["n"])
        n = sum(counts)
        lap("keys and partition")
        plan = dict(driver.agree(n, counts))
        plan["key_fields"] = len(keys)
        lap("sizes")

        registry = _Registry(sc)
        lane_options = dict(options)
        lane_options["threads"] = threads
        lane_options["listen"] = lane_options["connect"] = None
        task = _lane_task(
            role,
            lane_options,
            plan,
            (host, base),
            (registry.address, registry.token),
            names if receiver else None,
        )
        watch = _Watch(driver, sc, tag)
        if receiver:
            result = staged.mapInArrow(task, df.schema, barrier=True).localCheckpoint(eager=True)
        else:
            staged.select(_ITEM, _BUCKET).mapInArrow(task, "lane int", barrier=True).collect()
        watch.stop()
        lap("lanes")
        if len(registry.done) != lanes:
            raise BlindjoinError(
                f"{lanes - len(registry.done)} of {lanes} lanes did not report their end"
            )
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
        if staged is not None:
            staged.unpersist()

    done = [registry.done[w] for w in sorted(registry.done)]
    for name in ("bytes_sent", "bytes_received"):
        traffic[name] += sum(int(d.get(name, 0)) for d in done)
    report: dict[str, Any] = {
        "protocol": options.get("protocol"),
        "role": "receiver" if receiver else "sender",
        "run_id": run_id,
        "buckets": buckets,
        "lanes": lanes,
        "input": {"rows": rows_acc.value, "empty_keys": empty_acc.value, "distinct_keys": n},
        "own_set_size": n,
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
