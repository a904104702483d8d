//! Key normalisation: turns a raw key (a CSV field or a line) into the bytes both parties match.
//!
//! Both parties must choose the same normalisation, otherwise equal identifiers written
//! differently do not match. A key that is empty or invalid after normalisation yields `None`;
//! such rows take no part in the protocol and never match.

/// How keys are normalised before matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Normalize {
    /// The key exactly as written (only an empty key is dropped).
    None,
    /// Leading and trailing whitespace removed (Unicode whitespace for UTF-8 keys).
    Trim,
    /// Trimmed and lower-cased (Unicode lower case for UTF-8 keys).
    Lower,
    /// E-mail address: trimmed and lower-cased; provider rules (gmail dots, `+tag`) are not applied.
    Email,
    /// Phone number in E.164 form `+<country code><number>`, 8 to 15 digits.
    Phone,
}

/// A configured normalisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalizer {
    /// The kind of normalisation.
    pub kind: Normalize,
    /// Country calling code (digits only, e.g. `1` or `44`) assumed for phone numbers written
    /// without one; only used by [`Normalize::Phone`]. A leading `+` is tolerated.
    pub country_code: Option<String>,
}

/// The fewest digits of a normalised phone number (after the `+`).
const PHONE_MIN_DIGITS: usize = 8;
/// The most digits of a normalised phone number (E.164 allows 15).
const PHONE_MAX_DIGITS: usize = 15;

impl Normalizer {
    /// Returns the normalised key, or None when the key is empty/invalid after normalisation (such
    /// rows never match).
    ///
    /// * `None`: the bytes as they are.
    /// * `Trim`: without leading and trailing whitespace: Unicode `White_Space` when the key is
    ///   valid UTF-8, ASCII whitespace otherwise.
    /// * `Lower`: trimmed, then Unicode lower case (ASCII lower case for keys that are not UTF-8).
    /// * `Email`: the same as `Lower`. Addresses are not validated and provider-specific rules
    ///   (ignoring dots or a `+tag` in gmail addresses) are deliberately not applied: they are not
    ///   universal, and both parties would have to agree on them.
    /// * `Phone`: the trimmed key may contain digits, whitespace, `-`, `.`, `(` and `)`, and a `+`
    ///   as its first character; anything else (letters, a later `+`, bytes that are not UTF-8)
    ///   makes it invalid. With a leading `+` the digits are the international number; digits
    ///   starting with `00` are an international number after the `00` prefix; otherwise, with a
    ///   configured country code, one leading `0` (trunk prefix) is dropped and the country code
    ///   prepended; without one the digits are taken to start with their country code. The result
    ///   is `+` and 8 to 15 digits, the first of which is not `0` (no country code starts with
    ///   `0`); anything else is invalid.
    pub fn apply(&self, raw: &[u8]) -> Option<Vec<u8>> {
        let out = match self.kind {
            Normalize::None => raw.to_vec(),
            Normalize::Trim => trim(raw).to_vec(),
            Normalize::Lower | Normalize::Email => lower(trim(raw)),
            Normalize::Phone => phone(trim(raw), self.country_code.as_deref())?,
        };
        (!out.is_empty()).then_some(out)
    }
}

/// Trims Unicode whitespace from UTF-8 keys and ASCII whitespace from other keys.
fn trim(raw: &[u8]) -> &[u8] {
    match std::str::from_utf8(raw) {
        Ok(s) => s.trim().as_bytes(),
        Err(_) => raw.trim_ascii(),
    }
}

/// Unicode lower case for UTF-8 keys, ASCII lower case for other keys.
fn lower(raw: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(raw) {
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => raw.to_ascii_lowercase(),
    }
}

/// The E.164-like form of a trimmed phone number (see [`Normalizer::apply`]).
fn phone(trimmed: &[u8], country_code: Option<&str>) -> Option<Vec<u8>> {
    let s = std::str::from_utf8(trimmed).ok()?;
    let (plus, rest) = match s.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let mut digits = String::with_capacity(rest.len());
    for c in rest.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else if !(c.is_whitespace() || matches!(c, '-' | '.' | '(' | ')')) {
            return None;
        }
    }
    let international = if plus {
        digits
    } else if let Some(after) = digits.strip_prefix("00") {
        after.to_owned()
    } else if let Some(cc) = country_code {
        let cc = cc.strip_prefix('+').unwrap_or(cc);
        if cc.is_empty() || !cc.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let national = digits.strip_prefix('0').unwrap_or(&digits);
        format!("{cc}{national}")
    } else {
        digits
    };
    let len_ok = (PHONE_MIN_DIGITS..=PHONE_MAX_DIGITS).contains(&international.len());
    if !len_ok || international.starts_with('0') {
        return None;
    }
    let mut out = Vec::with_capacity(international.len() + 1);
    out.push(b'+');
    out.extend_from_slice(international.as_bytes());
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn n(kind: Normalize) -> Normalizer {
        Normalizer {
            kind,
            country_code: None,
        }
    }

    fn cc(code: &str) -> Normalizer {
        Normalizer {
            kind: Normalize::Phone,
            country_code: Some(code.to_owned()),
        }
    }

    fn ok(v: &[u8]) -> Option<Vec<u8>> {
        Some(v.to_vec())
    }

    #[test]
    fn none_keeps_bytes() {
        let k = n(Normalize::None);
        assert_eq!(k.apply(b" Anna@X.org "), ok(b" Anna@X.org "));
        assert_eq!(k.apply(b"   "), ok(b"   "));
        assert_eq!(k.apply(b""), None);
        assert_eq!(k.apply(b"\xff\xfe a"), ok(b"\xff\xfe a"));
    }

    #[test]
    fn trim() {
        let k = n(Normalize::Trim);
        assert_eq!(k.apply(b"  a b\t\r\n"), ok(b"a b"));
        assert_eq!(
            k.apply("\u{a0}\u{2003}Zoë\u{3000}".as_bytes()),
            ok("Zoë".as_bytes())
        );
        assert_eq!(k.apply(b""), None);
        assert_eq!(k.apply(b" \t "), None);
        assert_eq!(k.apply("\u{a0}\u{2003}".as_bytes()), None);
        // Not UTF-8: ASCII whitespace only; the 0xA0 byte (Latin-1 NBSP) stays.
        assert_eq!(k.apply(b" \xa0x\xff \t"), ok(b"\xa0x\xff"));
    }

    #[test]
    fn lower() {
        let k = n(Normalize::Lower);
        assert_eq!(
            k.apply(" ÀNNA Straße ".as_bytes()),
            ok("ànna straße".as_bytes())
        );
        assert_eq!(k.apply("ΣΟΦΙΑ".as_bytes()), ok("σοφια".as_bytes()));
        assert_eq!(k.apply(b"  "), None);
        assert_eq!(k.apply(b""), None);
        assert_eq!(k.apply(b" AB\xc0C "), ok(b"ab\xc0c"));
    }

    #[test]
    fn email() {
        let k = n(Normalize::Email);
        assert_eq!(
            k.apply(b"  Anna.Kowalski42@Example.ORG\t"),
            ok(b"anna.kowalski42@example.org")
        );
        // No provider rules.
        assert_eq!(k.apply(b"A.B+tag@Gmail.com"), ok(b"a.b+tag@gmail.com"));
        assert_eq!(k.apply(b""), None);
        assert_eq!(k.apply(b"   "), None);
        assert_eq!(k.apply(b"X@\xffY"), ok(b"x@\xffy"));
    }

    #[test]
    fn phone_international() {
        let k = n(Normalize::Phone);
        assert_eq!(k.apply(b"+1 (555) 123-4567"), ok(b"+15551234567"));
        assert_eq!(k.apply(b"+1-555-010-1234"), ok(b"+15550101234"));
        assert_eq!(k.apply(b"0044 20 7946 0958"), ok(b"+442079460958"));
        assert_eq!(k.apply(b" +44 20 7946 0958 "), ok(b"+442079460958"));
        assert_eq!(k.apply(b"+33.1.23.45.67.89"), ok(b"+33123456789"));
        assert_eq!(
            k.apply("+49\u{a0}30\u{a0}12345678".as_bytes()),
            ok(b"+493012345678")
        );
        // Without a country code the digits are taken to carry one.
        assert_eq!(k.apply(b"442079460958"), ok(b"+442079460958"));
        // A trunk-prefixed national number without a country code is invalid.
        assert_eq!(k.apply(b"020 7946 0958"), None);
    }

    #[test]
    fn phone_with_country_code() {
        assert_eq!(cc("44").apply(b"020 7946 0958"), ok(b"+442079460958"));
        assert_eq!(cc("44").apply(b"20 7946 0958"), ok(b"+442079460958"));
        assert_eq!(cc("+44").apply(b"020 7946 0958"), ok(b"+442079460958"));
        assert_eq!(cc("1").apply(b"(555) 123-4567"), ok(b"+15551234567"));
        // Explicit international forms ignore the configured code.
        assert_eq!(cc("1").apply(b"+44 20 7946 0958"), ok(b"+442079460958"));
        assert_eq!(cc("1").apply(b"0044 20 7946 0958"), ok(b"+442079460958"));
        // A country code that is not digits makes national numbers invalid.
        assert_eq!(cc("4x").apply(b"020 7946 0958"), None);
        assert_eq!(cc("").apply(b"020 7946 0958"), None);
    }

    #[test]
    fn phone_invalid() {
        let k = n(Normalize::Phone);
        assert_eq!(k.apply(b""), None);
        assert_eq!(k.apply(b"   "), None);
        assert_eq!(k.apply(b"+"), None);
        assert_eq!(k.apply(b"+44 20 7946 0958 ext 2"), None);
        assert_eq!(k.apply(b"+44 20 CALL NOW"), None);
        assert_eq!(k.apply(b"44+2079460958"), None);
        assert_eq!(k.apply(b"++442079460958"), None);
        assert_eq!(k.apply(b"+44/20/7946/0958"), None);
        assert_eq!(k.apply(b"+44 20 7946 \xff0958"), None);
        // Lengths: 7 digits too short, 8 the fewest, 15 the most, 16 too long.
        assert_eq!(k.apply(b"+1234567"), None);
        assert_eq!(k.apply(b"+12345678"), ok(b"+12345678"));
        assert_eq!(k.apply(b"+123456789012345"), ok(b"+123456789012345"));
        assert_eq!(k.apply(b"+1234567890123456"), None);
        assert_eq!(k.apply(b"0012345678901234567"), None);
        assert_eq!(cc("44").apply(b"0123 45"), None);
        assert_eq!(cc("44").apply(b"0123 456"), ok(b"+44123456"));
        assert_eq!(cc("999").apply(b"0123 456 789 012 34"), None);
        // No country code starts with 0.
        assert_eq!(k.apply(b"+0442079460958"), None);
        assert_eq!(k.apply(b"0000442079460958"), None);
    }
}
