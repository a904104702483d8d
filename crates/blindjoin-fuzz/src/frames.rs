//! The fake peer's frames in a fuzz input: each frame is a 2-byte little-endian length and
//! that many bytes; a length longer than what is left takes what is left. So every input splits
//! into frames, and the seeds ([`join`]) are valid message sequences that mutations then bend.

/// Splits `data` into frames (see the module doc). A final length prefix cut short (one byte)
/// is a frame of its own with that byte, so no byte of the input is ignored.
pub fn split(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let Some((head, rest)) = data.split_first_chunk::<2>() else {
            out.push(data);
            break;
        };
        let len = usize::from(u16::from_le_bytes(*head)).min(rest.len());
        let (frame, rest) = rest.split_at(len);
        out.push(frame);
        data = rest;
    }
    out
}

/// The input that [`split`] turns into `frames`. A frame longer than 65,535 bytes is cut to
/// that length, which no seed needs.
pub fn join<F: AsRef<[u8]>>(frames: &[F]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        let f = f.as_ref();
        let f = &f[..f.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(f.len() as u16).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn split_inverts_join() {
        let frames: Vec<&[u8]> = vec![b"abc", b"", b"\x00\x01", &[7u8; 300]];
        assert_eq!(split(&join(&frames)), frames);
        assert!(split(b"").is_empty());
    }

    #[test]
    fn every_byte_lands_in_a_frame() {
        assert_eq!(split(b"\x05\x00ab"), vec![&b"ab"[..]]);
        assert_eq!(split(b"\x01\x00ab"), vec![&b"a"[..], b"b"]);
        assert_eq!(split(b"\x00\x00"), vec![&b""[..]]);
    }
}
