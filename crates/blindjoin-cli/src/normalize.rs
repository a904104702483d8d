//! Key normalisation: turns a raw key (a CSV field or a line) into the bytes both parties match.
//!
//! Both parties must choose the same normalisation, otherwise equal identifiers written
//! differently do not match; [`Normalizer::handshake_params`] names it, so that a run whose two
//! parties differ can be refused. A key that is empty or invalid after normalisation yields
//! `None`; such rows take no part in the protocol and never match.
//!
//! What each normalisation does to a key, in order (`--normalize`):
//!
//! | kind | steps |
//! | --- | --- |
//! | `none` | nothing: the bytes as written |
//! | `trim` | leading and trailing whitespace removed |
//! | `nfc` | Unicode NFC (canonical composition), nothing else |
//! | `lower` | trimmed, NFC, Unicode lower case, NFC again |
//! | `email` | the same as `lower` |
//! | `phone` | E.164-like `+<country code><number>` (see [`Normalizer::apply`]) |
//!
//! Whitespace is Unicode `White_Space` when the key is valid UTF-8 and ASCII whitespace
//! otherwise. NFC (Unicode Standard Annex #15) makes the composed and decomposed spellings of
//! one text the same bytes: `é` written as U+00E9 and as `e` followed by U+0301 both become
//! U+00E9. It applies to keys that are valid UTF-8; other keys keep their bytes (and `lower`
//! lower-cases only their ASCII letters). Lower-casing is Rust's `str::to_lowercase` (Unicode
//! default case conversion, with the final-sigma rule); the second NFC makes its result NFC
//! whatever the input was. Compatibility forms are not folded: `ﬁ` (U+FB01) stays, and
//! full-width letters are not made ASCII.

use unicode_normalization::{UnicodeNormalization, is_nfc};

/// How keys are normalised before matching (the steps are in the [module doc](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Normalize {
    /// The key exactly as written (only an empty key is dropped).
    None,
    /// Leading and trailing whitespace removed (Unicode whitespace for UTF-8 keys).
    Trim,
    /// Unicode NFC (canonical composition) of UTF-8 keys, nothing else: composed and decomposed
    /// spellings of one text become the same bytes; other keys are kept as written.
    Nfc,
    /// Trimmed, then NFC, then Unicode lower case, then NFC again; keys that are not UTF-8 are
    /// trimmed of ASCII whitespace and get ASCII lower case only.
    Lower,
    /// E-mail address: exactly `lower` (trimmed, NFC, lower-cased, NFC); provider rules (gmail
    /// dots, `+tag`) are not applied.
    Email,
    /// Phone number in E.164 form `+<country code><number>`, 8 to 15 digits.
    Phone,
}

impl Normalize {
    /// The name on the command line and in the handshake (`none`, `trim`, `nfc`, `lower`,
    /// `email`, `phone`).
    pub fn name(self) -> &'static str {
        match self {
            Normalize::None => "none",
            Normalize::Trim => "trim",
            Normalize::Nfc => "nfc",
            Normalize::Lower => "lower",
            Normalize::Email => "email",
            Normalize::Phone => "phone",
        }
    }
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
    /// The handshake parameters that describe this normalisation, so that two parties whose
    /// keys would be normalised differently refuse each other: `("normalize", kind)` with the
    /// kind's [name](Normalize::name), and for [`Normalize::Phone`] with a country code,
    /// `("country_code", code)` with the code's digits (a leading `+` removed, as
    /// [`Normalizer::apply`] does). The country code is left out for the other kinds, which do
    /// not use it, so it cannot make two runs that normalise alike refuse each other.
    pub fn handshake_params(&self) -> Vec<(String, String)> {
        let mut params = vec![("normalize".to_owned(), self.kind.name().to_owned())];
        if let (Normalize::Phone, Some(cc)) = (self.kind, &self.country_code) {
            let cc = cc.strip_prefix('+').unwrap_or(cc);
            params.push(("country_code".to_owned(), cc.to_owned()));
        }
        params
    }

    /// Returns the normalised key, or None when the key is empty/invalid after normalisation (such
    /// rows never match).
    ///
    /// * `None`: the bytes as they are.
    /// * `Trim`: without leading and trailing whitespace: Unicode `White_Space` when the key is
    ///   valid UTF-8, ASCII whitespace otherwise.
    /// * `Nfc`: the NFC form of a UTF-8 key; other keys as they are.
    /// * `Lower`: trimmed, then NFC, Unicode lower case and NFC again (for keys that are not
    ///   UTF-8: trimmed of ASCII whitespace, ASCII lower case).
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
            Normalize::Nfc => nfc_bytes(raw),
            Normalize::Lower | Normalize::Email => lower(trim(raw)),
            Normalize::Phone => phone(trim(raw), self.country_code.as_deref())?,
        };
        (!out.is_empty()).then_some(out)
    }

    /// [`Normalizer::apply`] written into `out` (cleared first), without allocating for ASCII
    /// keys: returns whether the key is non-empty and valid (`out` then holds exactly what
    /// `apply` returns). For an ASCII key NFC changes nothing and Unicode lower case is ASCII
    /// lower case, so `trim`, `nfc`, `lower` and `email` take a byte-wise path; other keys take
    /// `apply`'s.
    pub fn apply_into(&self, raw: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        if raw.is_ascii() {
            match self.kind {
                Normalize::None | Normalize::Nfc => out.extend_from_slice(raw),
                Normalize::Trim => out.extend_from_slice(trim_ascii_unicode(raw)),
                Normalize::Lower | Normalize::Email => {
                    out.extend_from_slice(trim_ascii_unicode(raw));
                    out.make_ascii_lowercase();
                }
                Normalize::Phone => match self.apply(raw) {
                    Some(key) => *out = key,
                    None => return false,
                },
            }
            return !out.is_empty();
        }
        match self.apply(raw) {
            Some(key) => {
                *out = key;
                true
            }
            None => false,
        }
    }
}

/// Trims an ASCII key of the characters `str::trim` removes from it: the Unicode `White_Space`
/// characters below 0x80 (tab, line feed, vertical tab, form feed, carriage return, space).
fn trim_ascii_unicode(raw: &[u8]) -> &[u8] {
    let ws = |c: &u8| matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ');
    let start = raw.iter().position(|c| !ws(c)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    &raw[start..end]
}

/// Trims Unicode whitespace from UTF-8 keys and ASCII whitespace from other keys.
fn trim(raw: &[u8]) -> &[u8] {
    match std::str::from_utf8(raw) {
        Ok(s) => s.trim().as_bytes(),
        Err(_) => raw.trim_ascii(),
    }
}

/// The NFC form of `s` (`s` itself if it is NFC already, the common case).
fn nfc(s: &str) -> String {
    if is_nfc(s) {
        s.to_owned()
    } else {
        s.nfc().collect()
    }
}

/// NFC for UTF-8 keys; other keys as they are.
fn nfc_bytes(raw: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(raw) {
        Ok(s) => nfc(s).into_bytes(),
        Err(_) => raw.to_vec(),
    }
}

/// NFC, Unicode lower case and NFC again for UTF-8 keys; ASCII lower case for other keys.
fn lower(raw: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(raw) {
        Ok(s) => nfc(&nfc(s).to_lowercase()).into_bytes(),
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
    fn nfc_composes_and_does_nothing_else() {
        let k = n(Normalize::Nfc);
        // "José" decomposed (e + U+0301) and composed (U+00E9): the composed bytes.
        assert_eq!(k.apply(b"Jose\xcc\x81"), ok(b"Jos\xc3\xa9"));
        assert_eq!(k.apply(b"Jos\xc3\xa9"), ok(b"Jos\xc3\xa9"));
        // Hangul: the jamo U+1100 U+1161 compose to U+AC00.
        assert_eq!(k.apply(b"\xe1\x84\x80\xe1\x85\xa1"), ok(b"\xea\xb0\x80"));
        // Canonical reordering: U+0323 (below) comes before U+0307 (above), then both compose.
        assert_eq!(k.apply(b"s\xcc\x87\xcc\xa3"), ok(b"\xe1\xb9\xa9"));
        // No trimming, no case change, no compatibility folding (U+FB01 stays).
        assert_eq!(k.apply(b" A\xef\xac\x81 "), ok(b" A\xef\xac\x81 "));
        // Not UTF-8: kept as written.
        assert_eq!(k.apply(b"e\xcc\x81\xff"), ok(b"e\xcc\x81\xff"));
        assert_eq!(k.apply(b""), None);
    }

    #[test]
    fn lower_and_email_include_nfc() {
        for kind in [Normalize::Lower, Normalize::Email] {
            let k = n(kind);
            // "JOSÉ@x.org" with a decomposed É (E + U+0301) and with a composed one (U+00C9).
            assert_eq!(k.apply(b" JOSE\xcc\x81@X.org "), ok(b"jos\xc3\xa9@x.org"));
            assert_eq!(k.apply(b"JOS\xc3\x89@X.org"), ok(b"jos\xc3\xa9@x.org"));
            // Ångström sign U+212B: NFC makes it U+00C5, lower case U+00E5.
            assert_eq!(k.apply(b"\xe2\x84\xab"), ok(b"\xc3\xa5"));
            // A + U+030A (ring above) the same.
            assert_eq!(k.apply(b"A\xcc\x8a"), ok(b"\xc3\xa5"));
            // U+0130 (I with dot above) lower-cases to i + U+0307, which has no composed form.
            assert_eq!(k.apply(b"\xc4\xb0"), ok(b"i\xcc\x87"));
            // Not UTF-8: ASCII lower case only, the decomposed sequence before 0xFF kept.
            assert_eq!(k.apply(b"E\xcc\x81\xff"), ok(b"e\xcc\x81\xff"));
        }
        // `trim` and `none` do not compose.
        assert_eq!(n(Normalize::Trim).apply(b" e\xcc\x81 "), ok(b"e\xcc\x81"));
        assert_eq!(n(Normalize::None).apply(b"e\xcc\x81"), ok(b"e\xcc\x81"));
    }

    #[test]
    fn lower_output_is_nfc_for_every_char() {
        // Lower-casing after NFC never leaves a key that NFC would change (checked per char,
        // alone and after a base letter).
        let k = n(Normalize::Lower);
        for c in (0..=0x10_FFFFu32).filter_map(char::from_u32) {
            for s in [c.to_string(), format!("a{c}")] {
                if let Some(out) = k.apply(s.as_bytes()) {
                    let out = String::from_utf8(out).unwrap();
                    assert!(is_nfc(&out), "{:?}", s);
                }
            }
        }
    }

    #[test]
    fn names_and_handshake_params() {
        use clap::ValueEnum;
        for kind in Normalize::value_variants() {
            let value = kind.to_possible_value().unwrap();
            assert_eq!(value.get_name(), kind.name());
        }
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            n(Normalize::Email).handshake_params(),
            vec![("normalize".to_owned(), "email".to_owned())]
        );
        assert_eq!(
            n(Normalize::Nfc).handshake_params(),
            vec![("normalize".to_owned(), "nfc".to_owned())]
        );
        assert_eq!(
            cc("44").handshake_params(),
            pairs(&[("normalize", "phone"), ("country_code", "44")])
        );
        // "+44" normalises as "44" does, so both announce the same.
        assert_eq!(cc("+44").handshake_params(), cc("44").handshake_params());
        assert_eq!(
            n(Normalize::Phone).handshake_params(),
            vec![("normalize".to_owned(), "phone".to_owned())]
        );
        // A country code has no effect on e-mail addresses, so it is not announced.
        let email_with_cc = Normalizer {
            kind: Normalize::Email,
            country_code: Some("44".to_owned()),
        };
        assert_eq!(
            email_with_cc.handshake_params(),
            n(Normalize::Email).handshake_params()
        );
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

    #[test]
    fn apply_into_is_apply() {
        let mut keys: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b" Anna@X.org ".to_vec(),
            b"\x0b\x0c\t\r\n a\x1c".to_vec(),
            b"\x1fA\x1f".to_vec(),
            b"  ".to_vec(),
            "\u{a0}\u{c9}cole@X.fr\u{2003}".as_bytes().to_vec(),
            "e\u{301}".as_bytes().to_vec(),
            b"\xff A".to_vec(),
            b"+44 (20) 7946-0958".to_vec(),
            b"020 7946 0958".to_vec(),
        ];
        for b in 0u8..0x80 {
            keys.push(vec![b]);
            keys.push(vec![b'x', b, b'Y', b]);
        }
        let kinds = [
            Normalize::None,
            Normalize::Trim,
            Normalize::Nfc,
            Normalize::Lower,
            Normalize::Email,
            Normalize::Phone,
        ];
        let mut out = b"left over".to_vec();
        for kind in kinds {
            for k in [n(kind), cc("44")] {
                for key in &keys {
                    let valid = k.apply_into(key, &mut out);
                    assert_eq!(valid.then(|| out.clone()), k.apply(key), "{kind:?} {key:?}");
                }
            }
        }
    }
}
