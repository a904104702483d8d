//! Pieces several protocols share: comparison tags and the pipelined receive loop.

use blindjoin_core::channel::{BulkReader, Channel, FrameReceiver, FrameSender};
use blindjoin_core::{Error, Result};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// Elements per bulk frame: 2^14 (512 KiB of points), small enough to pipeline, large enough
/// that framing costs nothing.
pub(crate) const CHUNK: usize = 1 << 14;

/// A comparison tag of at most 16 bytes, read little-endian into a `u128`.
pub(crate) fn tag_from_bytes(bytes: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = bytes.len().min(16);
    b[..n].copy_from_slice(&bytes[..n]);
    u128::from_le_bytes(b)
}

/// Checks that a tag of `len` bytes fits the 16 bytes the protocols store.
pub(crate) fn check_tag_len(len: usize) -> Result<()> {
    if len > 16 {
        return Err(Error::InvalidParam {
            field: "lambda",
            reason: format!(
                "λ + log2(n1·n2) needs {len}-byte tags; at most 16 bytes (128 bits) are supported"
            ),
        });
    }
    Ok(())
}

/// Sorted indices of `tags` (one per own item, `tag_len` bytes each) that occur in `peer`.
pub(crate) fn match_tags(tags: &[u8], tag_len: usize, peer: &HashSet<u128>) -> Vec<usize> {
    tags.chunks_exact(tag_len)
        .enumerate()
        .filter(|(_, t)| peer.contains(&tag_from_bytes(t)))
        .map(|(i, _)| i)
        .collect()
}

/// Streams a bulk message of `count` elements of `elem_len` bytes through a queue.
pub(crate) fn forward_bulk(
    rx: &mut dyn FrameReceiver,
    reader: &mut BulkReader,
    queue: &mpsc::Sender<Vec<u8>>,
    aborted: &AtomicBool,
) -> Result<()> {
    while !aborted.load(Ordering::Relaxed) {
        match reader.next_frame(rx)? {
            Some(frame) => {
                if queue.send(frame).is_err() {
                    // The consumer stopped; it reports why.
                    return Ok(());
                }
            }
            None => return Ok(()),
        }
    }
    Ok(())
}

/// Runs `reader` on the receiving half of `ch` in its own thread while `main` uses the sending
/// half, so that neither party stalls on a full socket buffer while the other computes.
///
/// If `main` fails, the reader is asked to stop at its next frame. When both fail, the reader's
/// error is returned: it is the cause (a closed or misbehaving peer) and `main`'s failure the
/// consequence.
pub(crate) fn pipelined<C, R, M>(
    ch: &mut C,
    reader: impl FnOnce(&mut dyn FrameReceiver, &AtomicBool) -> Result<R> + Send,
    main: impl FnOnce(&mut dyn FrameSender) -> Result<M>,
) -> Result<(R, M)>
where
    C: Channel + ?Sized,
    R: Send,
{
    let (mut rx, mut tx) = ch.split();
    let aborted = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handle = s.spawn(|| reader(&mut *rx, &aborted));
        let m = main(&mut *tx);
        if m.is_err() {
            // Stop our reader at its next frame, and tell the peer we are gone so that its
            // reader (and then ours) stops waiting.
            aborted.store(true, Ordering::Relaxed);
            tx.close();
        }
        let r = match handle.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match (r, m) {
            (Ok(r), Ok(m)) => Ok((r, m)),
            (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        }
    })
}

/// The error `main` reports when the reader's queue closed early (the reader's own error wins).
pub(crate) fn queue_closed(what: &'static str) -> Error {
    Error::PeerClosed { during: what }
}

/// Refuses security parameters a protocol cannot provide: κ must be what its primitives give,
/// and λ must lie in 1..=80 (a larger λ would not fit the 16-byte tags with large sets).
pub(crate) fn validate_security(opts: &crate::RunOptions, protocol: &'static str) -> Result<()> {
    if opts.kappa != 128 {
        return Err(Error::InvalidParam {
            field: "kappa",
            reason: format!("{protocol} provides κ = 128 only, {} was asked", opts.kappa),
        });
    }
    if !(1..=80).contains(&opts.lambda) {
        return Err(Error::InvalidParam {
            field: "lambda",
            reason: format!("λ must be between 1 and 80, {} was asked", opts.lambda),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_little_endian_and_match_exactly() {
        assert_eq!(tag_from_bytes(&[1, 2]), 0x0201);
        let peer: HashSet<u128> = [0x0201, 0x0403].into_iter().collect();
        let own = [1, 2, 9, 9, 3, 4, 1, 2];
        assert_eq!(match_tags(&own, 2, &peer), vec![0, 2, 3]);
        assert!(check_tag_len(16).is_ok());
        assert!(check_tag_len(17).is_err());
    }
}
