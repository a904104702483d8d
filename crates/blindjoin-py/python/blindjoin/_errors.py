"""The exceptions of a failed run.

``str(error)`` is the one line the ``blindjoin`` command prints for the same failure.
"""

from __future__ import annotations

__all__ = ["BlindjoinError", "InputError", "PeerError"]


class BlindjoinError(Exception):
    """A run failed (base class of the package's errors)."""


class InputError(BlindjoinError, ValueError):
    """The data cannot be read or keyed: a missing column, a malformed or missing file, a key
    column that is not text. Also a :class:`ValueError`."""


class PeerError(BlindjoinError):
    """The peer or the connection ended the run: the parties' parameters differ (the message
    names the field, e.g. ``normalize`` or ``protocol``), the peer refused or failed, closed
    the connection, sent something malformed, or no data moved within the time limits."""
