//! The fake peer's frames in a fuzz input: each frame is a 2-byte little-endian length and
//! that many bytes; the length 0xFFFF is an escape, followed by a 4-byte little-endian length
//! (at most [`MAX_LEN`]) for frames of 65,535 bytes and more. A length longer than what is left
//! takes what is left. So every input splits into frames, and the seeds ([`join`]) are valid
//! message sequences that mutations then bend.
//!
//! Inputs of the format before the escape keep their meaning except for a frame of exactly
//! 65,535 bytes, which that format's [`join`] made of every longer frame: such a frame cut short
//! was never a valid message, and the seeds that held one are recorded again whole.

/// The 2-byte length that announces a 4-byte one.
const ESCAPE: u16 = u16::MAX;

/// The longest frame an input carries (4 MiB): above every frame a seed needs (`rr17a`'s KOS
/// columns are 96 KB) and far below the allocation cap of a fuzz run.
pub const MAX_LEN: usize = 4 << 20;

/// Splits `data` into frames (see the module doc). A final length prefix cut short (one byte,
/// or the escape followed by fewer than four) is a frame of its own with those bytes, so no
/// byte of the input is ignored.
pub fn split(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let Some((head, rest)) = data.split_first_chunk::<2>() else {
            out.push(data);
            break;
        };
        let (len, rest) = match u16::from_le_bytes(*head) {
            ESCAPE => {
                let Some((long, rest)) = rest.split_first_chunk::<4>() else {
                    out.push(rest);
                    break;
                };
                let len = usize::try_from(u32::from_le_bytes(*long)).unwrap_or(MAX_LEN);
                (len.min(MAX_LEN), rest)
            }
            short => (usize::from(short), rest),
        };
        let (frame, rest) = rest.split_at(len.min(rest.len()));
        out.push(frame);
        data = rest;
    }
    out
}

/// The input that [`split`] turns into `frames`. A frame longer than [`MAX_LEN`] is cut to
/// that length, which no seed needs.
pub fn join<F: AsRef<[u8]>>(frames: &[F]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        let f = f.as_ref();
        let f = &f[..f.len().min(MAX_LEN)];
        match u16::try_from(f.len()) {
            Ok(short) if short != ESCAPE => out.extend_from_slice(&short.to_le_bytes()),
            _ => {
                out.extend_from_slice(&ESCAPE.to_le_bytes());
                out.extend_from_slice(&(f.len() as u32).to_le_bytes());
            }
        }
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
        let long = vec![5u8; 100_000];
        let edge = vec![6u8; 65_535];
        let below = vec![7u8; 65_534];
        let frames: Vec<&[u8]> = vec![b"abc", b"", b"\x00\x01", &[7u8; 300], &long, &edge, &below];
        let joined = join(&frames);
        assert_eq!(split(&joined), frames);
        assert!(split(b"").is_empty());
        // The escape is used from 65,535 bytes on, and only there.
        let at = (2 + 3) + 2 + (2 + 2) + (2 + 300);
        assert_eq!(&joined[at..at + 6], &[0xff, 0xff, 0xa0, 0x86, 0x01, 0x00]);
        assert_eq!(join(&[&below]).len(), 2 + 65_534);
        assert_eq!(join(&[&edge]).len(), 6 + 65_535);
    }

    #[test]
    fn every_byte_lands_in_a_frame() {
        assert_eq!(split(b"\x05\x00ab"), vec![&b"ab"[..]]);
        assert_eq!(split(b"\x01\x00ab"), vec![&b"a"[..], b"b"]);
        assert_eq!(split(b"\x00\x00"), vec![&b""[..]]);
        // The escape with its length cut short, and a long length past the end.
        assert_eq!(split(b"\xff\xff\x01\x02"), vec![&b"\x01\x02"[..]]);
        assert_eq!(split(b"\xff\xff"), vec![&b""[..]]);
        assert_eq!(
            split(b"\xff\xff\x00\x00\x00\x80xyz"),
            vec![&b"xyz"[..]],
            "a length above the cap takes what is left"
        );
    }

    #[test]
    fn a_long_length_is_capped() {
        let mut data = vec![0xff, 0xff];
        data.extend_from_slice(&u32::MAX.to_le_bytes());
        data.resize(6 + MAX_LEN + 1, 1);
        let frames = split(&data);
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0].len(), MAX_LEN);
        assert_eq!(frames[1], &[1]);
    }
}
