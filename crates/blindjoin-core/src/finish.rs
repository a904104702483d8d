//! The confirmation that ends every run over a network: both parties check that they saw the
//! same bytes, and the receiver's final verdict reaches the sender.
//!
//! ```text
//! receiver                                              sender
//!   (protocol done; output prepared, not yet in place)
//!   confirmation { failure, sent digest, received digest } ──▶  compare with own digests
//!   compare with own digests ◀── confirmation { failure, sent digest, received digest }
//!   expect the end of the stream ◀──────────────────────────── close
//!   (output put in place)
//!   final verdict { failure } ──────────────────────────────▶  exit 0 only on success
//!   close ──────────────────────────────────────────────────▶  expect the end of the stream
//! ```
//!
//! Each party closes its direction after its last message and the other checks that nothing
//! follows, so a frame repeated or added at the end of the run is an error too.
//!
//! The digests come from [`Transcript`]: on plain TCP they cover every frame of the run, so a
//! frame changed, dropped, duplicated or reordered in transit makes both parties fail here
//! instead of the receiver silently getting a wrong result; on TLS they are zero (the record
//! layer authenticates every byte). A party that fails says why in its message, and the peer
//! ends with [`Error::PeerFailed`].
//!
//! One limit is inherent (the two generals' problem): the last message of a run can be lost or
//! altered without its sender knowing. Here the receiver's last frames (its final verdict, or a
//! copy of its confirmation injected after it) reach the sender after the receiver has finished:
//! if they are altered, the sender fails while the receiver has its complete, checked output.
//! The order is chosen so that the party that writes the output is never the one left
//! uncertain: the receiver writes only after both digests agreed and the sender's stream ended.

use crate::channel::transcript::{Digests, Transcript};
use crate::channel::{Channel, FrameSender, recv_msg};
use crate::error::peer_text;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// Name of the confirmation message (one frame each way).
pub const MSG_CONFIRMATION: &str = "run confirmation";

/// Name of the receiver's final verdict (one frame, receiver to sender).
pub const MSG_FINAL_VERDICT: &str = "receiver's final verdict";

const MAX_LEN: usize = 1024;

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Confirmation {
    failure: Option<String>,
    sent: [u8; 32],
    received: [u8; 32],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct FinalVerdict {
    failure: Option<String>,
}

fn confirmation(d: Digests, failure: Option<String>) -> Confirmation {
    Confirmation {
        failure,
        sent: d.sent,
        received: d.received,
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_stdvec(value).map_err(|e| Error::InvalidParam {
        field: "message",
        reason: format!("cannot encode: {e}"),
    })
}

/// The frame of a confirmation carrying `digests` and `failure` (as the parties send it; for
/// tests and fuzzing).
pub fn confirmation_frame(digests: Digests, failure: Option<&str>) -> Result<Vec<u8>> {
    encode(&confirmation(digests, failure.map(reason)))
}

/// The frame of a final verdict (as the receiver sends it; for tests and fuzzing).
pub fn final_verdict_frame(failure: Option<&str>) -> Result<Vec<u8>> {
    encode(&FinalVerdict {
        failure: failure.map(reason),
    })
}

fn mismatch() -> Error {
    Error::CheckFailed(
        "the two sides saw different messages: the connection changed, dropped or repeated data \
         in transit"
            .into(),
    )
}

/// Cuts a local error to a line short enough for the peer.
fn reason(e: &str) -> String {
    e.chars().take(300).collect()
}

/// The error for the peer's reason `f` for ending the run. Its reason speaks of "the peer",
/// which from this side is us: "the peer failed a protocol check: X" becomes "it says this side
/// failed a protocol check: X".
pub fn peer_failure(f: &str) -> Error {
    let text = peer_text(f);
    Error::PeerFailed(match text.strip_prefix("the peer ") {
        Some(rest) => format!("it says this side {rest}"),
        None => text,
    })
}

/// The receiver's first step: sends its confirmation (with `failure` if its own run failed,
/// e.g. the output could not be prepared) and checks the sender's. On `Ok` the caller puts its
/// output in place and then calls [`receiver_final`].
pub fn receiver_confirm<C: Channel>(ch: &mut Transcript<C>, failure: Option<&str>) -> Result<()> {
    let ours = ch.digests();
    ch.send(MSG_CONFIRMATION, &confirmation_frame(ours, failure)?)?;
    if failure.is_some() {
        // Our own error is what the caller reports; the sender learns it from our message.
        return Ok(());
    }
    let theirs: Confirmation = recv_msg(ch, MSG_CONFIRMATION, MAX_LEN)?;
    if let Some(f) = theirs.failure {
        return Err(peer_failure(&f));
    }
    if theirs.sent != ours.received || theirs.received != ours.sent {
        return Err(mismatch());
    }
    expect_end(ch, MSG_CONFIRMATION)
}

/// Checks that the peer sends nothing after `last` (its stream ends).
fn expect_end<C: Channel>(ch: &mut C, last: &'static str) -> Result<()> {
    match ch.recv("the end of the peer's stream", MAX_LEN) {
        Err(Error::PeerClosed { .. }) => Ok(()),
        Ok(_) => Err(Error::malformed(
            last,
            "the peer sent another frame after its last message",
        )),
        Err(e) => Err(e),
    }
}

/// The receiver's last message: its final verdict (`None` once its output is in place); then
/// it closes its direction.
pub fn receiver_final<C: Channel>(ch: &mut C, failure: Option<&str>) -> Result<()> {
    let sent = final_verdict_frame(failure).and_then(|f| ch.send(MSG_FINAL_VERDICT, &f));
    ch.close();
    sent
}

/// The sender's side of the exchange (see the module doc): `Ok` only if the digests agree and
/// the receiver's final verdict is a success.
pub fn sender_confirm<C: Channel>(ch: &mut Transcript<C>) -> Result<()> {
    let ours = ch.digests();
    let theirs: Confirmation = recv_msg(ch, MSG_CONFIRMATION, MAX_LEN)?;
    if let Some(f) = theirs.failure {
        return Err(peer_failure(&f));
    }
    if theirs.sent != ours.received || theirs.received != ours.sent {
        let e = mismatch();
        // Best effort: the receiver learns why; our own error is what we report.
        let _ = confirmation_frame(ours, Some(&e.to_string()))
            .and_then(|f| ch.send(MSG_CONFIRMATION, &f));
        return Err(e);
    }
    ch.send(MSG_CONFIRMATION, &confirmation_frame(ours, None)?)?;
    // Nothing more from us: the receiver checks that our stream ends here.
    ch.close();
    let last: FinalVerdict = recv_msg(ch, MSG_FINAL_VERDICT, MAX_LEN)?;
    if let Some(f) = last.failure {
        return Err(peer_failure(&f));
    }
    expect_end(ch, MSG_FINAL_VERDICT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peers_reason_is_worded_from_this_side() {
        assert_eq!(
            peer_failure("the peer failed a protocol check: row 3 is not a codeword").to_string(),
            "the peer stopped the run: it says this side failed a protocol check: row 3 is not a \
             codeword"
        );
        assert_eq!(
            peer_failure("cancelled by the user (KeyboardInterrupt)").to_string(),
            "the peer stopped the run: cancelled by the user (KeyboardInterrupt)"
        );
    }
}
