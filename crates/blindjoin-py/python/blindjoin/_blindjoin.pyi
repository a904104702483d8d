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
