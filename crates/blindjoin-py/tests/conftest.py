"""Helpers of the package's tests: both parties run in this process over loopback, the sender
in a thread (the native module releases the GIL while a party runs, so both progress)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import blindjoin

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Pair:
    """The outcome of one receiver and one sender."""

    def __init__(self) -> None:
        self.received: Any = None
        self.receiver_report: dict[str, Any] | None = None
        self.receiver_error: BaseException | None = None
        self.sender_report: dict[str, Any] | None = None
        self.sender_error: BaseException | None = None


def run_pair(
    receiver_data: Any,
    sender_data: Any,
    *,
    receiver: dict[str, Any] | None = None,
    sender: dict[str, Any] | None = None,
    **common: Any,
) -> Pair:
    """Runs ``receive`` here and ``send`` in a thread; ``common`` options go to both."""
    port = free_port()
    out = Pair()
    common.setdefault("deadline", 120)

    def send() -> None:
        try:
            out.sender_report = blindjoin.send(
                sender_data, connect=f"127.0.0.1:{port}", **{**common, **(sender or {})}
            )
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            out.sender_error = e

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    try:
        out.received, out.receiver_report = blindjoin.receive(
            receiver_data,
            listen=f"127.0.0.1:{port}",
            return_report=True,
            **{**common, **(receiver or {})},
        )
    except blindjoin.BlindjoinError as e:
        out.receiver_error = e
    thread.join(120)
    assert not thread.is_alive(), "the sender did not end"
    return out


def normalized(kind: str | None, key: Any) -> str | None:
    """What the normalisation makes of a key (None: no key), for the test data's keys."""
    if key is None or (isinstance(key, float) and key != key):
        return None
    if kind in (None, "none"):
        k = key
    elif kind == "nfc":
        k = unicodedata.normalize("NFC", key)
    elif kind in ("lower", "email"):
        k = unicodedata.normalize("NFC", unicodedata.normalize("NFC", key.strip()).lower())
    else:
        raise ValueError(kind)
    return k or None


def expected_rows(receiver_keys: list[Any], sender_keys: list[Any], kind: str | None) -> list[int]:
    """The receiver's rows whose normalised key the sender has."""
    theirs = {normalized(kind, k) for k in sender_keys} - {None}
    return [i for i, k in enumerate(receiver_keys) if normalized(kind, k) in theirs]


def cli_binary() -> Path | None:
    """The `blindjoin` command built in this repository, if any (BLINDJOIN_BIN overrides)."""
    given = os.environ.get("BLINDJOIN_BIN")
    if given:
        return Path(given)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for profile in ("debug", "release"):
        p = target / profile / "blindjoin"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    found = shutil.which("blindjoin")
    return Path(found) if found else None


@pytest.fixture
def blindjoin_bin() -> Path:
    p = cli_binary()
    if p is None:
        pytest.skip("no blindjoin binary (build it with cargo build, or set BLINDJOIN_BIN)")
    return p
