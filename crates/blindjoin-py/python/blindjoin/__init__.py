"""Private set intersection on pandas DataFrames, Arrow tables and files.

Two parties find the rows they have in common without showing each other anything else. The
**receiver** learns which of its rows the **sender** also has; the sender learns only how many
distinct keys the receiver has. Each party calls one function, usually on a different machine::

    import blindjoin, pandas as pd

    # the receiver: waits for the sender, returns its own matched rows
    customers = pd.read_csv("customers.csv", dtype=str, keep_default_na=False)
    matched = blindjoin.receive(customers, column="email", normalize="email",
                                listen="127.0.0.1:7878")

    # the sender (another process): learns only the receiver's set size
    report = blindjoin.send(subscribers, column="email", normalize="email",
                            connect="127.0.0.1:7878")

Both parties must choose the same ``protocol``, ``normalize``, ``kappa`` and ``lambda_``; a
difference ends both runs with a :class:`PeerError` naming the field. The keys are normalised and
hashed exactly as the ``blindjoin`` command does it, so a Python party and a command-line party
match each other.

``data`` can be

* a pandas DataFrame: ``receive`` returns the matched rows (``data.iloc[rows]``: the same rows,
  index kept, in ascending row order). Only the key columns are converted to Arrow.
* a pyarrow Table or RecordBatch, a RecordBatchReader, or any object with
  ``__arrow_c_stream__`` (polars, DuckDB, …): ``receive`` returns a pyarrow Table of the matched
  rows (``table.take(rows)``). The key columns cross into Rust without a copy.
* a path (``str`` or ``os.PathLike``) of a CSV file with a header, a Parquet file (``.parquet``,
  ``.pq``) or a file of one key per line, read exactly as the command reads it (``format=``
  overrides the choice by extension): ``receive`` returns a DataFrame of the matched rows, its
  index the row numbers in the file (from 0). A CSV file's columns are text, empty fields
  ``""`` (as ``pd.read_csv(path, dtype=str, keep_default_na=False)`` reads them); a lines file's
  one column is ``line``.
* a pandas Series: ``receive`` returns the matched sub-Series (index kept).
* a sequence of keys (list, tuple, numpy or pyarrow array): ``receive`` returns a DataFrame with
  one column ``key``, its index the positions in the sequence.

Keys that are not text (integers, dates) are keys by their text form, as in a Parquet file
(``42`` is the key ``"42"``); a float column written ``42.0`` does not match ``42``, so convert
such columns to strings first. A missing value (``None``, ``NaN``, null) or a key that is empty
after normalisation never matches. Duplicate keys are one item; every row carrying a matched key
is returned.

Exceptions: :class:`BlindjoinError` (a run failed; ``str(e)`` is the command's one-line
message), its subclasses :class:`InputError` (the data; also a ``ValueError``) and
:class:`PeerError` (the peer or the connection); ``ValueError`` and ``TypeError`` for bad
arguments, before anything is read or connected.

Ctrl-C (``KeyboardInterrupt``) while waiting for the peer stops the wait at once and closes the
listening port. During the protocol it returns control within a second and shuts the connection
down, which ends the run on both sides (the peer sees the connection close, or, at the final
confirmation, the receiver's refusal); no output is written.
"""

from __future__ import annotations

import collections.abc
import json
import os
import sys
from typing import Any, Literal

import pyarrow as pa

from . import _blindjoin
from ._errors import BlindjoinError, InputError, PeerError

__version__: str = _blindjoin.__version__

__all__ = [
    "BlindjoinError",
    "InputError",
    "PeerError",
    "__version__",
    "protocols",
    "receive",
    "send",
]


def protocols() -> list[dict[str, Any]]:
    """The registered protocols, as ``blindjoin protocols --json`` prints them.

    Each entry has the protocol's ``name`` (the ``protocol=`` value), ``summary``,
    ``references`` (papers), ``security`` model, ``assumptions``, ``roles``, ``kappa``,
    ``params`` (at κ = 128, λ = 40), ``flights`` and message ``flow``.
    """
    return json.loads(_blindjoin.protocols_json())


class _Data:
    """The caller's data, ready for the native module."""

    def __init__(
        self,
        kind: Literal["path", "arrow", "values"],
        payload: Any,
        columns: list[str],
        label: str,
        shape: Literal["path", "frame", "series", "table", "sequence"],
        original: Any,
    ) -> None:
        self.kind = kind
        self.payload = payload
        self.columns = columns
        self.label = label
        self.shape = shape
        self.original = original


def _column_list(column: Any) -> list[Any] | None:
    if column is None:
        return None
    if isinstance(column, str):
        return [column]
    if isinstance(column, (list, tuple)):
        if not column:
            raise ValueError("column must name at least one column")
        return list(column)
    raise TypeError(f"column must be a name or a list of names, not {type(column).__name__}")


def _same_name(name: Any, wanted: Any) -> bool:
    if isinstance(name, str) and isinstance(wanted, str):
        # As the command compares a CSV header: surrounding whitespace does not count.
        return name.strip() == wanted.strip()
    return bool(name == wanted)


def _key_positions(names: list[Any], column: Any, label: str) -> list[int]:
    """The positions of the key columns among ``names``, in key order."""
    wanted = _column_list(column)
    shown = ", ".join(str(n).strip() for n in names)
    if wanted is None:
        if len(names) == 1:
            return [0]
        raise ValueError(f"{label}: name the key column with column=; the columns are: {shown}")
    positions = []
    for w in wanted:
        found = next((i for i, n in enumerate(names) if _same_name(n, w)), None)
        if found is None:
            raise InputError(f"{label}: no column `{w}`; the columns are: {shown}")
        positions.append(found)
    return positions


def _to_arrow(values: Any, label: str) -> pa.Array | pa.ChunkedArray:
    try:
        return pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise TypeError(f"{label} cannot be converted to Arrow: {e}") from e


def _arrow_table(data: Any) -> pa.Table | None:
    """``data`` as a pyarrow Table if it is Arrow data (no copy), else None."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        return None
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data).read_all()
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(data)])
    return None


def _prepare(data: Any, column: Any) -> _Data:
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        columns = [str(c) for c in _column_list(column) or []]
        return _Data("path", path, columns, path, "path", data)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, pd.DataFrame):
        label = "<DataFrame>"
        names = list(data.columns)
        positions = _key_positions(names, column, label)
        arrays = [
            _to_arrow(data.iloc[:, p], f"{label}: column `{names[p]}`") for p in positions
        ]
        keys = [str(names[p]) for p in positions]
        table = pa.Table.from_arrays(arrays, names=keys)
        return _Data("arrow", table, keys, label, "frame", data)
    if pd is not None and isinstance(data, pd.Series):
        if column is not None:
            raise ValueError("column= names columns of a table; a Series is the key column itself")
        label = "<Series>"
        name = "key" if data.name is None else str(data.name)
        table = pa.Table.from_arrays([_to_arrow(data, label)], names=[name])
        return _Data("values", table, [name], label, "series", data)
    table = _arrow_table(data)
    if table is not None:
        label = f"<pyarrow.{type(data).__name__}>" if type(data).__module__.startswith(
            "pyarrow"
        ) else f"<{type(data).__name__}>"
        positions = _key_positions(table.column_names, column, label)
        keys = [table.column_names[p] for p in positions]
        return _Data("arrow", table.select(positions), keys, label, "table", table)
    if isinstance(data, (bytes, bytearray, dict, collections.abc.Mapping)) or not isinstance(
        data, collections.abc.Iterable
    ):
        raise TypeError(
            "data must be a pandas DataFrame or Series, Arrow data (a pyarrow Table, "
            "RecordBatch or anything with __arrow_c_stream__), a path, or a sequence of keys, "
            f"not {type(data).__name__}"
        )
    if column is not None:
        raise ValueError("column= names columns of a table; a sequence is the key column itself")
    label = "<sequence>"
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        values: Any = data
        array = data
    else:
        values = data if isinstance(data, collections.abc.Sequence) else list(data)
        array = _to_arrow(values, label)
    table = pa.Table.from_arrays([array], names=["key"])
    return _Data("values", table, ["key"], label, "sequence", values)


def _pandas(what: str) -> Any:
    try:
        import pandas
    except ImportError as e:
        raise ImportError(
            f"blindjoin.receive returns the matched rows of {what} as a pandas DataFrame: "
            "install pandas (pip install pandas), or pass a pyarrow Table to get a pyarrow "
            "Table back"
        ) from e
    return pandas


def _result(data: _Data, rows: pa.Int64Array, matched: pa.Table | None, fmt: str | None) -> Any:
    if data.shape == "table":
        return data.original.take(rows)
    if data.shape in ("frame", "series"):
        return data.original.iloc[rows.to_numpy()]
    # A DataFrame for a sequence or a file: pandas (and the numpy it brings) is needed here only.
    import pandas as pd
    index = rows.to_numpy()
    if data.shape == "sequence":
        if isinstance(data.original, (pa.Array, pa.ChunkedArray)):
            keys = data.original.take(rows).to_pylist()
        else:
            keys = [data.original[i] for i in index.tolist()]
        return pd.DataFrame({"key": keys}, index=pd.Index(index))
    assert matched is not None
    if fmt == "csv":
        matched = pa.table(
            {name: matched.column(name).fill_null("") for name in matched.column_names}
        )
    frame = matched.to_pandas()
    frame.index = pd.Index(index)
    return frame


def _run(role: str, data: Any, column: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    prepared = _prepare(data, column)
    if role == "receive" and prepared.shape in ("sequence", "path"):
        # Refused before the run, not after the peer has taken part.
        _pandas("a sequence of keys" if prepared.shape == "sequence" else "a file")
    report, rows, matched, fmt = _blindjoin.run(
        role, prepared.kind, prepared.payload, prepared.columns, prepared.label, options
    )
    result = None if rows is None else _result(prepared, rows, matched, fmt)
    return result, json.loads(report)


def receive(
    data: Any,
    *,
    column: str | list[str] | None = None,
    protocol: str = _blindjoin.DEFAULT_PROTOCOL,
    listen: str | None = None,
    connect: str | None = None,
    normalize: str | None = None,
    threads: int | None = None,
    return_report: bool = False,
    **options: Any,
) -> Any:
    """Be the receiver: return the rows of ``data`` whose key the sender also has.

    Args:
        data: the rows (see the module doc): a DataFrame, Arrow data, a path, a Series or a
            sequence of keys.
        column: the key column, or a list of columns that together make the key (joined
            unambiguously, as the command's ``--column first,last``). Needed when the table has
            more than one column; names are compared without surrounding whitespace.
        protocol: the protocol (``blindjoin.protocols()`` lists them; default ``kkrt16``). The
            sender must choose the same.
        listen: an address to wait for the peer on (``"0.0.0.0:7878"``), or
        connect: the peer's address (``"partner.example:7878"``); exactly one of the two.
        normalize: ``None`` or ``"none"``, ``"trim"``, ``"nfc"``, ``"lower"``, ``"email"`` or
            ``"phone"`` (then ``country_code="44"`` for numbers written without one).
        threads: worker threads for this run (default: all cores).
        return_report: return ``(rows, report)``, the report being the dict the command writes
            with ``--json``.
        **options: the command's other flags with underscores: ``kappa`` (κ: 80, 128, 192 or
            256 as the protocol offers), ``lambda_`` (λ, also accepted
            as ``**{"lambda": 40}``), ``allow_weak``, ``insecure`` (the ``naive`` protocol),
            ``expect_peer_size``, ``max_peer_size`` (ints or ``"2^20"``), ``memory`` (bytes or
            ``"4G"``, ``"none"``), ``tls_cert``, ``tls_key``, ``peer_cert``,
            ``peer_fingerprint``, ``peer_ca``, ``plaintext``, ``deadline`` and ``idle_timeout``
            (seconds or ``"2h"``), ``format`` (of a file: ``"csv"``, ``"parquet"``,
            ``"lines"``). Plain TCP is allowed on loopback only, unless ``plaintext=True``.

    Returns:
        The matched rows, in the shape of ``data`` (see the module doc).

    Raises:
        InputError: the data cannot be read or a column is missing.
        PeerError: the peer refused, failed or disagrees on a parameter (named in the message).
        BlindjoinError: any other failure of the run.
        ValueError, TypeError: a bad argument (nothing was read or connected).
    """
    options.update(
        protocol=protocol, listen=listen, connect=connect, normalize=normalize, threads=threads
    )
    rows, report = _run("receive", data, column, options)
    return (rows, report) if return_report else rows


def send(
    data: Any,
    *,
    column: str | list[str] | None = None,
    protocol: str = _blindjoin.DEFAULT_PROTOCOL,
    listen: str | None = None,
    connect: str | None = None,
    normalize: str | None = None,
    threads: int | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Be the sender: help the receiver find the common rows; learn only its set size.

    The arguments are those of :func:`receive` (without ``return_report``).

    Returns:
        The run's report, the dict the command writes with ``--json``: ``protocol``, ``role``,
        ``own_set_size``, ``peer_set_size`` (the receiver's distinct keys), ``input`` (rows,
        distinct and empty keys, duplicate rows), ``traffic``, ``phases``, ``wall_seconds``.
    """
    options.update(
        protocol=protocol, listen=listen, connect=connect, normalize=normalize, threads=threads
    )
    _, report = _run("send", data, column, options)
    return report
