"""End-to-end tests of the Python package: both parties over loopback, exact matched rows."""

from __future__ import annotations

import _thread
import json
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO, expected_rows, free_port, run_pair

import blindjoin

PROTOCOLS = ["kkrt16", "ecdh", "cm20", "psz14"]

# Duplicates, empty and missing keys, and é composed (U+00E9) and decomposed (e, U+0301).
RECEIVER_KEYS = [
    "anna@x.org",
    "ANNA@x.org ",
    "",
    None,
    "   ",
    "zo\u00e9@x.org",
    "bob@y.org",
    "zoe\u0301@x.org",
    "carl@z.org",
    "bob@y.org",
    "Zo\u00c9@X.org",
]
SENDER_KEYS = ["anna@x.org", "zoe\u0301@x.org", "bob@y.org", "dora@q.org", "", "bob@y.org", None]


def receiver_frame() -> pd.DataFrame:
    n = len(RECEIVER_KEYS)
    return pd.DataFrame(
        {"id": list(range(n)), "email": RECEIVER_KEYS, "note": [f"row {i}" for i in range(n)]},
        index=pd.Index([100 + 3 * i for i in range(n)], name="key_id"),
    )


def sender_frame() -> pd.DataFrame:
    return pd.DataFrame({"email": SENDER_KEYS, "other": range(len(SENDER_KEYS))})


def assert_exact(frame: pd.DataFrame, source: pd.DataFrame, rows: list[int]) -> None:
    assert rows, "the test data must match something"
    assert frame.index.tolist() == source.index[rows].tolist()
    pd.testing.assert_frame_equal(frame, source.iloc[rows])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_dataframe_rows_are_exact(protocol: str) -> None:
    df = receiver_frame()
    out = run_pair(df, sender_frame(), column="email", normalize="email", protocol=protocol)
    assert out.receiver_error is None and out.sender_error is None
    rows = expected_rows(RECEIVER_KEYS, SENDER_KEYS, "email")
    assert rows == [0, 1, 5, 6, 7, 9, 10]
    assert_exact(out.received, df, rows)
    r = out.receiver_report
    assert r is not None and out.sender_report is not None
    assert r["protocol"] == protocol and r["role"] == "receiver"
    assert r["intersection"] == {"distinct_keys": 3, "rows": len(rows), "output": None}
    assert r["input"]["path"] == "<DataFrame>"
    assert r["input"]["rows"] == len(RECEIVER_KEYS)
    assert r["input"]["empty_keys"] == 3
    assert r["own_set_size"] == 4
    assert out.sender_report["role"] == "sender"
    assert out.sender_report["peer_set_size"] == 4
    assert out.sender_report["own_set_size"] == 4
    assert r["session_id"] == out.sender_report["session_id"]


@pytest.mark.parametrize("normalize", [None, "nfc", "lower"])
def test_each_normalisation_matches_its_own_way(normalize: str | None) -> None:
    df = receiver_frame()
    out = run_pair(df, sender_frame(), column="email", normalize=normalize)
    assert out.receiver_error is None and out.sender_error is None
    rows = expected_rows(RECEIVER_KEYS, SENDER_KEYS, normalize)
    assert_exact(out.received, df, rows)
    if normalize == "nfc":
        # Both spellings of é match the sender's decomposed one; case and spaces still count.
        assert rows == [0, 5, 6, 7, 9]


@pytest.mark.parametrize(("n_receiver", "n_sender"), [(5, 3000), (3000, 7)])
def test_unequal_set_sizes(n_receiver: int, n_sender: int) -> None:
    mine = [f"user{i}@example.org" for i in range(n_receiver)]
    theirs = [f"user{i}@example.org" for i in range(n_receiver - 3, n_receiver - 3 + n_sender)]
    df = pd.DataFrame({"email": mine})
    out = run_pair(df, pd.DataFrame({"email": theirs}), column="email")
    assert out.receiver_error is None and out.sender_error is None
    assert_exact(out.received, df, expected_rows(mine, theirs, None))
    assert out.receiver_report is not None
    assert out.receiver_report["peer_set_size"] == n_sender


def test_larger_sets() -> None:
    n = 1 << 16
    mine = [f"m{i}" for i in range(n)]
    theirs = [f"m{i}" for i in range(n - n // 4, 2 * n - n // 4)]
    df = pd.DataFrame({"key": mine})
    out = run_pair(df, pd.DataFrame({"key": theirs}))
    assert out.receiver_error is None and out.sender_error is None
    assert out.received.index.tolist() == list(range(n - n // 4, n))


def test_parameter_mismatch_names_the_field() -> None:
    out = run_pair(
        receiver_frame(),
        sender_frame(),
        column="email",
        receiver={"normalize": "email"},
        sender={"normalize": "none"},
    )
    for e in (out.receiver_error, out.sender_error):
        assert isinstance(e, blindjoin.PeerError)
        assert isinstance(e, blindjoin.BlindjoinError)
        assert "`normalize`" in str(e), str(e)
    assert out.received is None


def test_protocol_mismatch_names_the_field() -> None:
    out = run_pair(
        ["a"], ["a"], receiver={"protocol": "kkrt16"}, sender={"protocol": "ecdh"}
    )
    for e in (out.receiver_error, out.sender_error):
        assert isinstance(e, blindjoin.PeerError), e
        assert "protocol" in str(e)


def test_parquet_and_csv_files(tmp_path: Path) -> None:
    df = pd.DataFrame(
        {
            "id": range(len(RECEIVER_KEYS)),
            "email": [k if k is not None else "" for k in RECEIVER_KEYS],
            "score": [i / 4 for i in range(len(RECEIVER_KEYS))],
        }
    )
    rows = expected_rows(list(df["email"]), SENDER_KEYS, "email")
    parquet = tmp_path / "mine.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), parquet)
    out = run_pair(parquet, sender_frame(), column="email", normalize="email")
    assert out.receiver_error is None and out.sender_error is None
    # Parquet keeps the file's types; the index is the row number in the file.
    expected = df.iloc[rows]
    pd.testing.assert_frame_equal(out.received, expected, check_dtype=False)
    assert out.received["id"].dtype.kind == "i"
    assert out.receiver_report is not None
    assert out.receiver_report["input"]["path"] == str(parquet)

    # A CSV file with a quoted comma and an empty field: every column is text.
    csv = tmp_path / "mine.csv"
    text = df.assign(note=["a, b" if i % 2 else "" for i in range(len(df))])
    text.to_csv(csv, index=False)
    out = run_pair(str(csv), sender_frame(), column="email", normalize="email")
    assert out.receiver_error is None and out.sender_error is None
    read_back = pd.read_csv(csv, dtype=str, keep_default_na=False)
    assert out.received.index.tolist() == rows
    assert out.received.astype(object).values.tolist() == read_back.iloc[rows].values.tolist()


def test_lines_file(tmp_path: Path) -> None:
    lines = tmp_path / "keys.txt"
    lines.write_text("a\nb\n\nc\nb\n")
    out = run_pair(lines, ["b", "c", "d"])
    assert out.receiver_error is None and out.sender_error is None
    assert out.received.index.tolist() == [1, 3, 4]
    assert out.received["line"].tolist() == ["b", "c", "b"]


def test_composite_key() -> None:
    df = pd.DataFrame(
        {
            "first": ["Anna", "anna ", "ab", "Bo", "Cy"],
            "last": ["Nowak", "NOWAK", "c", None, "Li"],
            "dob": ["1990", "1990", "1991", "1992", "1993"],
        }
    )
    theirs = pd.DataFrame({"last": ["nowak", "bc", "", "li"], "first": ["anna", "a", "bo", "cy"]})
    out = run_pair(df, theirs, column=["first", "last"], normalize="lower")
    assert out.receiver_error is None and out.sender_error is None
    # ("ab", "c") is not ("a", "bc"); a key with an empty field never matches.
    assert_exact(out.received, df, [0, 1, 4])
    # Both sides must join the same number of fields.
    out = run_pair(df, theirs, receiver={"column": ["first", "last"]}, sender={"column": "last"})
    assert isinstance(out.receiver_error, blindjoin.PeerError)
    assert "key_fields" in str(out.receiver_error)


def test_sequences_series_and_arrow_tables() -> None:
    out = run_pair(["a", "b", "c", "b"], ("b", "x"))
    assert out.receiver_error is None and out.sender_error is None
    assert out.received.index.tolist() == [1, 3]
    assert out.received["key"].tolist() == ["b", "b"]

    s = pd.Series(["x", "y", "z"], index=["i", "j", "k"], name="email")
    out = run_pair(s, pa.array(["z", "x"]))
    assert out.receiver_error is None and out.sender_error is None
    pd.testing.assert_series_equal(out.received, s.iloc[[0, 2]])

    table = pa.table({"n": [1, 2, 3, 4], "email": ["p", "q", "r", "q"]})
    batch = pa.record_batch({"email": ["q", "s"]})
    out = run_pair(table, batch, receiver={"column": "email"})
    assert out.receiver_error is None and out.sender_error is None
    assert isinstance(out.received, pa.Table)
    assert out.received.equals(table.take([1, 3]))

    # Anything with __arrow_c_stream__, and a RecordBatchReader.
    class Stream:
        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            return table.__arrow_c_stream__(requested_schema)

    reader = pa.RecordBatchReader.from_batches(batch.schema, [batch])
    out = run_pair(Stream(), reader, receiver={"column": "email"})
    assert out.receiver_error is None and out.sender_error is None
    assert out.received.column("n").to_pylist() == [2, 4]

    # Integer keys are keys by their text (a table's column meets a table's column; a list's
    # values are whole records, as a text file's lines are).
    out = run_pair(pa.table({"id": pa.array([7, 8, 9], pa.int64())}), pa.table({"k": ["9", "7"]}))
    assert out.received.column("id").to_pylist() == [7, 9]


def test_naive_needs_insecure_and_runs_with_it() -> None:
    with pytest.raises(ValueError, match="insecure=True"):
        blindjoin.receive(["a"], protocol="naive", listen=f"127.0.0.1:{free_port()}")
    out = run_pair(["a", "b"], ["b"], protocol="naive", insecure=True)
    assert out.receiver_error is None and out.sender_error is None
    assert out.received["key"].tolist() == ["b"]


def test_every_registered_protocol_is_listed() -> None:
    registry = (REPO / "crates/blindjoin-psi/src/protocols/mod.rs").read_text()
    block = re.search(r"registry!\s*\{([^}]*)\}", registry)
    assert block is not None
    # Two-party modules, then `;` and the server-aided ones: each module is named as its protocol.
    names = [n.strip() for n in re.split(r"[,;]", block.group(1)) if n.strip()]
    listed = blindjoin.protocols()
    assert [p["name"] for p in listed] == names
    for p in listed:
        assert {"summary", "security", "roles", "params", "flow"} <= p.keys()


def test_protocols_are_the_cli_registry(blindjoin_bin: Path) -> None:
    listed = blindjoin.protocols()
    cli = subprocess.run(
        [str(blindjoin_bin), "protocols", "--json"], capture_output=True, check=True, text=True
    )
    assert listed == json.loads(cli.stdout)


def test_a_cli_sender_and_a_python_receiver_match(tmp_path: Path, blindjoin_bin: Path) -> None:
    theirs = tmp_path / "theirs.csv"
    pd.DataFrame({"email": SENDER_KEYS}).to_csv(theirs, index=False)
    df = receiver_frame()
    port = free_port()
    cli = subprocess.Popen(
        [str(blindjoin_bin), "send", "-q", "-i", str(theirs), "-c", "email", "--normalize",
         "email", "-p", "kkrt16", "--connect", f"127.0.0.1:{port}", "--deadline", "60s"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        got = blindjoin.receive(
            df, column="email", normalize="email", listen=f"127.0.0.1:{port}", deadline="60s"
        )
    finally:
        _, err = cli.communicate(timeout=60)
    assert cli.returncode == 0, err
    # pandas reads the sender's empty and missing keys as NaN: neither is a key.
    assert_exact(got, df, expected_rows(RECEIVER_KEYS, SENDER_KEYS, "email"))


def test_bad_arguments_fail_before_connecting() -> None:
    port = free_port()
    df = receiver_frame()
    with pytest.raises(blindjoin.InputError, match="no column `nope`; the columns are: id, email"):
        blindjoin.receive(df, column="nope", listen=f"127.0.0.1:{port}")
    with pytest.raises(ValueError, match="name the key column"):
        blindjoin.receive(df, listen=f"127.0.0.1:{port}")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        blindjoin.receive(df, column="email", listen=f"127.0.0.1:{port}", bogus=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'output'"):
        blindjoin.send(df, column="email", connect=f"127.0.0.1:{port}", output="x.csv")
    with pytest.raises(ValueError, match="unknown protocol `nope`; known: kkrt16, cm20"):
        blindjoin.receive(["a"], protocol="nope", listen=f"127.0.0.1:{port}")
    with pytest.raises(ValueError, match="exactly one of listen"):
        blindjoin.receive(["a"])
    with pytest.raises(ValueError, match="allow_weak"):
        blindjoin.receive(["a"], lambda_=20, listen=f"127.0.0.1:{port}")
    with pytest.raises(ValueError, match="normalize must be one of"):
        blindjoin.receive(["a"], normalize="upper", listen=f"127.0.0.1:{port}")
    with pytest.raises(ValueError, match="country_code must be 1 to 3 digits"):
        blindjoin.receive(["a"], normalize="phone", country_code="+44a", listen="127.0.0.1:1")
    with pytest.raises(ValueError, match="needs TLS: give tls_cert and tls_key"):
        blindjoin.receive(["a"], listen="0.0.0.0:7878")
    with pytest.raises(ValueError, match="column names `email` twice"):
        blindjoin.receive(df, column=["email", " email"], listen=f"127.0.0.1:{port}")
    with pytest.raises(TypeError, match="memory must be"):
        blindjoin.receive(["a"], memory=1.5, listen=f"127.0.0.1:{port}")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        blindjoin.receive(["a"], threads=0, listen=f"127.0.0.1:{port}")
    with pytest.raises(TypeError, match="data must be"):
        blindjoin.receive(42, listen=f"127.0.0.1:{port}")


def test_file_errors_are_input_errors(tmp_path: Path) -> None:
    csv = tmp_path / "a.csv"
    csv.write_text("id,email\n1,a\n")
    port = free_port()
    with pytest.raises(blindjoin.InputError, match=r"a\.csv: no column `mail`; the columns are"):
        blindjoin.receive(csv, column="mail", listen=f"127.0.0.1:{port}")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,email\n1,a\n2\n")
    with pytest.raises(blindjoin.InputError, match=r"bad\.csv: line 3: 1 fields where"):
        blindjoin.send(bad, column="email", connect=f"127.0.0.1:{port}")
    with pytest.raises(blindjoin.InputError):
        blindjoin.send(tmp_path / "missing.csv", column="email", connect=f"127.0.0.1:{port}")


def test_options_by_their_cli_names() -> None:
    out = run_pair(
        ["a", "b"],
        ["b"],
        threads=1,
        memory="1G",
        idle_timeout="30s",
        max_peer_size="2^10",
        **{"lambda": 40},
        receiver={"expect_peer_size": 1},
        sender={"lambda_": 40},
    )
    assert out.receiver_error is None and out.sender_error is None
    assert out.receiver_report is not None and out.receiver_report["threads"] == 1
    out = run_pair(["a"], ["b", "c"], receiver={"expect_peer_size": 5})
    assert isinstance(out.receiver_error, blindjoin.BlindjoinError)
    assert isinstance(out.sender_error, blindjoin.BlindjoinError)


def test_ctrl_c_stops_a_wait_for_the_peer() -> None:
    # Python's own Ctrl-C handler, as in an interactive session: a test process started in the
    # background by a non-interactive shell inherits SIGINT ignored, and Python then installs
    # no handler, so that `interrupt_main` would do nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    port = free_port()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    # A second Ctrl-C 20 s later ends the wait if the first one was lost, so that the test
    # fails (the assertion on the time) instead of waiting for the peer forever.
    backup = threading.Timer(20, _thread.interrupt_main)
    timer.start()
    backup.start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            blindjoin.receive(["a"], listen=f"127.0.0.1:{port}")
    finally:
        backup.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 3, "the first Ctrl-C did not stop the wait"
    # The listening port was closed.
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
