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
    ``columns`` the key columns) or ``"arrow"`` (``data`` has ``__arrow_c_stream__`` and its
    columns are the key columns in key order). ``rows`` are the receiver's matched row indices,
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
    def agree(self, n: int, counts: list[int]) -> dict[str, Any]:
        """Exchanges the distinct counts; returns the plan (``run_id``, ``buckets``, ``lanes``,
        ``own_size``, ``peer_size``, ``own_max``, ``peer_max``, ``dummies``,
        ``deadline_left``)."""
    def peer_closed(self, timeout: float) -> bool:
        """Whether the peer closed the run's connection (waits up to ``timeout`` seconds)."""
    def finish(self) -> dict[str, int]:
        """Ends the run with the confirmation; returns the connection's traffic."""
    def fail(self, reason: str) -> None:
        """Ends the run with our failure ``reason`` (sent to the peer when it can read it)."""
    def traffic(self) -> dict[str, int]:
        """The connection's traffic so far."""

def spark_keys(
    batch: Any, options: dict[str, Any], key: bytes, buckets: int, designators: list[int]
) -> tuple[pa.BinaryArray, pa.Int32Array, pa.Int64Array]:
    """Each row's item, bucket and lane designator (null where the row has no key)."""

def spark_counts(batch: Any, buckets: int, lane: int, lanes: int) -> list[tuple[int, int]]:
    """The distinct items per bucket of a lane's rows (``item``, ``bucket`` columns)."""

def spark_lane(
    role: str, options: dict[str, Any], plan: dict[str, Any], lane: int, batch: Any
) -> tuple[pa.Int64Array, dict[str, Any]]:
    """Runs one lane; returns the receiver's matched rows of ``batch`` and the lane's stats."""
