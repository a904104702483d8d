"""Type stubs of the native module ``blindjoin._blindjoin`` (built from ``src/lib.rs``)."""

from typing import Any

import pyarrow as pa

__version__: str
DEFAULT_PROTOCOL: str
OPTIONS: list[str]

def protocols_json() -> str:
    """The registry as JSON: the same text as ``blindjoin protocols --json``."""

def run(
    role: str,
    kind: str,
    data: Any,
    columns: list[str],
    label: str,
    options: dict[str, Any],
) -> tuple[str, pa.Int64Array | None, pa.Table | None, str | None]:
    """Runs one party; returns ``(report_json, rows, matched, format)``.

    ``role`` is ``"receive"`` or ``"send"``; ``kind`` is ``"path"`` (``data`` a path string,
    ``columns`` the key columns), ``"arrow"`` (``data`` has ``__arrow_c_stream__`` and its
    columns are the key columns in key order) or ``"values"`` (as ``"arrow"``, one column of
    keys from a list or a Series: whole records, like the lines of a text file). ``rows`` are the receiver's matched row indices,
    ascending; ``matched`` a file receiver's matched rows; ``format`` a file input's format.
    """

class SparkDriver:
    """One party's driver of a bucketed run whose lanes are Spark barrier tasks (``spark.rs``).

    Made by ``SparkDriver(role, options, buckets, lanes, key_fields, extra)``: opens the
    connection (``listen`` or ``connect`` of ``options``) and runs the run handshake with the
    further parameters ``extra`` (name, value pairs).
    """

    def __init__(
        self,
        role: str,
        options: dict[str, Any],
        buckets: int,
        lanes: int,
        key_fields: int,
        extra: list[tuple[str, str]],
    ) -> None: ...
    @property
    def run_id(self) -> str:
        """The run id (hex)."""
    @property
    def partition_key(self) -> bytes:
        """The 16-byte key of the run's partition into buckets."""
    @property
    def open(self) -> bool:
        """Whether the run's first connection is still open."""
    @property
    def idle_seconds(self) -> float:
        """The idle timeout in seconds."""
    @property
    def deadline_left(self) -> float | None:
        """Seconds left of the run's deadline."""
    def peer_closed(self, timeout: float) -> bool:
        """Whether the peer closed the run's connection (waits up to ``timeout`` seconds)."""
    def finish(self) -> dict[str, int]:
        """Ends the run with the confirmation; returns the connection's traffic."""
    def fail(self, reason: str) -> None:
        """Ends the run with our failure ``reason`` (sent to the peer when it can read it)."""
    def traffic(self) -> dict[str, int]:
        """The connection's traffic so far."""

def spark_keys(
    batch: Any, options: dict[str, Any], key: bytes, buckets: int
) -> tuple[pa.BinaryArray, pa.Int32Array]:
    """Each row's item and bucket (null where the row has no key)."""

class SparkLane:
    """One lane of a run in its Spark barrier task (``spark.rs``).

    Made by ``SparkLane(role, options, run, lane, batch)``: ``run`` holds ``run_id``,
    ``buckets``, ``lanes``, ``key_fields`` and ``deadline_left``; ``batch`` the lane's rows
    (``item``, ``bucket``).
    """

    def __init__(
        self, role: str, options: dict[str, Any], run: dict[str, Any], lane: int, batch: Any
    ) -> None: ...
    def counts(self) -> list[tuple[int, int]]:
        """The distinct items of each of the lane's buckets."""
    def open(self) -> None:
        """Opens the lane's connection and runs its handshake."""
    def agree(self, n: int, counts: list[int]) -> dict[str, Any]:
        """On lane 0: exchanges the distinct counts; returns the plan (``own_size``,
        ``peer_size``, ``own_max``, ``peer_max``, ``dummies``)."""
    def run(self, plan: dict[str, Any]) -> tuple[pa.Int64Array, dict[str, Any]]:
        """Runs the lane's buckets; returns the receiver's matched rows and the lane's stats."""
