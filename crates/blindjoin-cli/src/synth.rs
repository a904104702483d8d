//! Synthetic identifier files for demos and tests: two CSV files of people
//! (`id,name,email,phone,spend`) with a known overlap.
//!
//! Each file holds its number of distinct people, exactly `overlap` of whom are in both files.
//! Every person has a globally unique e-mail address (the local part ends in a unique number) and
//! a globally unique phone number, so the overlap is exact whether files are matched on e-mail or
//! on phone. The files carry realistic noise: e-mail addresses with random upper case or
//! surrounding blanks, phone numbers in varied international formats, about 2% duplicate rows
//! (a person repeated with different formatting) and about 0.5% rows without an e-mail address.
//! Normalising with `--normalize email` or `--normalize phone` (no country code needed: every
//! number carries its country code in some form) recovers the canonical values. Every row also
//! has a `spend` in 0..1000, a function of its id ([`Person::spend`]), for sum runs
//! (`--result sum --value-column spend`).
//!
//! The output is a deterministic function of the [`GenSpec`] (ChaCha20 seeded with the seed).

use crate::error::{CliError, CliResult};
use crate::output::write_atomic_with;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::HashSet;
use std::path::Path;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenSpec {
    /// Distinct people in file A.
    pub size: usize,
    /// Distinct people in file B.
    pub other_size: usize,
    /// People in both files; at most `min(size, other_size)`.
    pub overlap: usize,
    /// Seed of the generator.
    pub seed: u64,
}

/// The generated files' rows and the ground truth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The rows of file A, in file order.
    pub a: Vec<Person>,
    /// The rows of file B, in file order.
    pub b: Vec<Person>,
    /// Canonical (trimmed, lower-cased) e-mail addresses present in both files.
    pub shared_emails: HashSet<String>,
}

/// One row of a generated file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// Row id, `a-000001` / `b-000001` style in file order.
    pub id: String,
    /// Display name.
    pub name: String,
    /// E-mail address as written, possibly with case or blank noise, or empty.
    pub email: String,
    /// Phone number as written, in one of several international formats.
    pub phone: String,
    /// The canonical e-mail address (trimmed, lower-cased); `None` when the e-mail is empty.
    pub canonical_email: Option<String>,
    /// The canonical phone number in E.164 form (`+` and digits).
    pub canonical_phone: Option<String>,
}

/// A whole number in 0..1000 fixed by `bytes` (FNV-1a): the generated `spend` of a row, and the
/// sender's value of a benchmark record in a sum run.
pub fn value_of(bytes: &[u8]) -> u64 {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    h % 1000
}

impl Person {
    /// The row's `spend` column: [`value_of`] its id.
    pub fn spend(&self) -> u32 {
        value_of(self.id.as_bytes()) as u32
    }
}

/// Generates the two files' rows (see the module doc). Fails with a usage error when `overlap`
/// exceeds `min(size, other_size)`.
///
/// File A has `size + size / 50 + size / 200` rows: `size` distinct people, `size / 50`
/// duplicate rows and `size / 200` rows with an empty e-mail address (and a phone number of
/// their own); likewise file B with `other_size`.
pub fn generate(spec: &GenSpec) -> CliResult<Generated> {
    if spec.overlap > spec.size.min(spec.other_size) {
        return Err(CliError::Usage(format!(
            "the overlap ({}) cannot exceed the smaller file's size ({})",
            spec.overlap,
            spec.size.min(spec.other_size)
        )));
    }
    let mut g = Generator {
        rng: ChaCha20Rng::seed_from_u64(spec.seed),
        phones: HashSet::new(),
        counter: 0,
    };
    let shared: Vec<Human> = (0..spec.overlap).map(|_| g.human()).collect();
    let only_a: Vec<Human> = (spec.overlap..spec.size).map(|_| g.human()).collect();
    let only_b: Vec<Human> = (spec.overlap..spec.other_size).map(|_| g.human()).collect();
    let shared_emails = shared.iter().map(|h| h.email.clone()).collect();
    let a = g.file('a', shared.iter().chain(&only_a).collect());
    let b = g.file('b', shared.iter().chain(&only_b).collect());
    Ok(Generated {
        a,
        b,
        shared_emails,
    })
}

/// Writes rows as CSV with the header `id,name,email,phone,spend`, atomically.
pub fn write_csv(path: &Path, rows: &[Person]) -> CliResult<()> {
    write_atomic_with(path, |w| {
        let mut csv = csv::Writer::from_writer(w);
        csv.write_record(["id", "name", "email", "phone", "spend"])?;
        for p in rows {
            let spend = p.spend().to_string();
            csv.write_record([&p.id, &p.name, &p.email, &p.phone, &spend])?;
        }
        csv.flush()
    })
}

const FIRST_NAMES: [&str; 50] = [
    "Anna", "Ben", "Carla", "David", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kavya",
    "Liam", "Maria", "Noah", "Olga", "Pedro", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera",
    "Wei", "Ximena", "Yusuf", "Zoe", "Aiko", "Bruno", "Chloe", "Dmitri", "Emma", "Felix", "Grace",
    "Hamza", "Isla", "Jack", "Kenji", "Lucia", "Marek", "Nadia", "Oscar", "Priya", "Rahul",
    "Sofia", "Tomas", "Ursula", "Victor", "Wanda", "Yara", "Zaid",
];

const LAST_NAMES: [&str; 50] = [
    "Kowalski",
    "Smith",
    "Muller",
    "Dubois",
    "Tanaka",
    "Sharma",
    "Garcia",
    "Rossi",
    "Nowak",
    "Johnson",
    "Schmidt",
    "Martin",
    "Suzuki",
    "Patel",
    "Lopez",
    "Bianchi",
    "Jensen",
    "Brown",
    "Fischer",
    "Bernard",
    "Sato",
    "Singh",
    "Hernandez",
    "Romano",
    "Novak",
    "Williams",
    "Weber",
    "Moreau",
    "Watanabe",
    "Gupta",
    "Silva",
    "Ricci",
    "Larsen",
    "O'Brien",
    "Wagner",
    "Laurent",
    "Ito",
    "Iyer",
    "Costa",
    "Greco",
    "Nielsen",
    "Taylor",
    "Becker",
    "Lefebvre",
    "Kobayashi",
    "Reddy",
    "Santos",
    "Marino",
    "Hansen",
    "Evans",
];

const DOMAINS: [&str; 5] = [
    "example.org",
    "example.com",
    "example.net",
    "mail.example",
    "corp.example.com",
];

/// US area codes used for +1 numbers.
const US_AREAS: [&str; 16] = [
    "202", "206", "212", "213", "303", "305", "312", "404", "415", "503", "512", "602", "617",
    "646", "702", "718",
];

/// How a phone number is written; every format carries the country code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PhoneFormat {
    /// `+442079460958`
    Compact,
    /// `+44 20 7946 0958`
    Spaced,
    /// `0044 20 7946 0958`
    DoubleZero,
    /// `+44-20-7946-0958`
    Dashed,
    /// `+44.20.7946.0958`
    Dotted,
    /// `+1 (555) 010-1234`
    Parenthesised,
}

const PHONE_FORMATS: [PhoneFormat; 6] = [
    PhoneFormat::Compact,
    PhoneFormat::Spaced,
    PhoneFormat::DoubleZero,
    PhoneFormat::Dashed,
    PhoneFormat::Dotted,
    PhoneFormat::Parenthesised,
];

/// A phone number: country code and the national significant number in its usual groups.
#[derive(Clone, Debug)]
struct Phone {
    cc: &'static str,
    groups: Vec<String>,
}

impl Phone {
    fn canonical(&self) -> String {
        format!("+{}{}", self.cc, self.groups.concat())
    }

    fn write(&self, format: PhoneFormat) -> String {
        let cc = self.cc;
        match format {
            PhoneFormat::Compact => self.canonical(),
            PhoneFormat::Spaced => format!("+{cc} {}", self.groups.join(" ")),
            PhoneFormat::DoubleZero => format!("00{cc} {}", self.groups.join(" ")),
            PhoneFormat::Dashed => format!("+{cc}-{}", self.groups.join("-")),
            PhoneFormat::Dotted => format!("+{cc}.{}", self.groups.join(".")),
            PhoneFormat::Parenthesised => match self.groups.split_first() {
                Some((first, rest)) => format!("+{cc} ({first}) {}", rest.join("-")),
                None => self.canonical(),
            },
        }
    }
}

/// A generated person before being written as a row.
#[derive(Clone, Debug)]
struct Human {
    first: &'static str,
    last: &'static str,
    /// Canonical e-mail address.
    email: String,
    phone: Phone,
}

struct Generator {
    rng: ChaCha20Rng,
    /// Canonical phone numbers handed out so far.
    phones: HashSet<String>,
    /// Makes every e-mail address unique.
    counter: u64,
}

impl Generator {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn digits(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.rng.random_range(0..10u8)))
            .collect()
    }

    /// A phone number no one else has.
    fn phone(&mut self) -> Phone {
        loop {
            let (cc, groups) = match self.rng.random_range(0..6) {
                0 => {
                    let area = self.pick(&US_AREAS).to_owned();
                    let exchange = self.rng.random_range(200..1000).to_string();
                    ("1", vec![area, exchange, self.digits(4)])
                }
                1 if self.rng.random_bool(0.5) => {
                    ("44", vec!["20".into(), self.digits(4), self.digits(4)])
                }
                1 => ("44", vec![format!("7{}", self.digits(3)), self.digits(6)]),
                2 => {
                    let prefix = self.pick(&["30", "151", "170"]).to_owned();
                    ("49", vec![prefix, self.digits(8)])
                }
                3 => {
                    let first = self.pick(&["1", "4", "6", "7"]).to_owned();
                    let mut g = vec![first];
                    g.extend((0..4).map(|_| self.digits(2)));
                    ("33", g)
                }
                4 => {
                    let prefix = self.pick(&["3", "6", "90", "80"]).to_owned();
                    ("81", vec![prefix, self.digits(4), self.digits(4)])
                }
                _ => {
                    let first = self.pick(&['6', '7', '8', '9']);
                    (
                        "91",
                        vec![format!("{first}{}", self.digits(4)), self.digits(5)],
                    )
                }
            };
            let phone = Phone { cc, groups };
            if self.phones.insert(phone.canonical()) {
                return phone;
            }
        }
    }

    /// A new person with a unique e-mail address and phone number.
    fn human(&mut self) -> Human {
        self.counter += 1;
        let first = self.pick(&FIRST_NAMES);
        let last = self.pick(&LAST_NAMES);
        let f = letters(first);
        let l = letters(last);
        let n = self.counter;
        let local = match self.rng.random_range(0..4) {
            0 | 1 => format!("{f}.{l}{n}"),
            2 => format!("{}{l}{n}", &f[..1]),
            _ => format!("{f}_{l}{n}"),
        };
        let domain = self.pick(&DOMAINS);
        Human {
            first,
            last,
            email: format!("{local}@{domain}"),
            phone: self.phone(),
        }
    }

    /// The name as written: usually "First Last", sometimes "Last, First".
    fn name(&mut self, h: &Human) -> String {
        if self.rng.random_bool(0.1) {
            format!("{}, {}", h.last, h.first)
        } else {
            format!("{} {}", h.first, h.last)
        }
    }

    /// The e-mail address as written: about 20% get case noise, blanks around them, or both;
    /// `always` forces noise.
    fn noisy_email(&mut self, canonical: &str, always: bool) -> String {
        if !always && !self.rng.random_bool(0.2) {
            return canonical.to_owned();
        }
        let kind = self.rng.random_range(0..3);
        let mut email = canonical.to_owned();
        if kind != 1 {
            email = match self.rng.random_range(0..3) {
                0 => email.to_ascii_uppercase(),
                1 => {
                    // Capitalised words: "Anna.Kowalski42@Example.org".
                    let mut up = true;
                    email
                        .chars()
                        .map(|c| {
                            let out = if up { c.to_ascii_uppercase() } else { c };
                            up = matches!(c, '.' | '_' | '@');
                            out
                        })
                        .collect()
                }
                _ => email
                    .chars()
                    .map(|c| {
                        if self.rng.random_bool(0.3) {
                            c.to_ascii_uppercase()
                        } else {
                            c
                        }
                    })
                    .collect(),
            };
        }
        if kind != 0 {
            let before = self.pick(&["", " ", "  ", "\t"]);
            let after = self.pick(&[" ", "  ", "\t", " \t"]);
            email = format!("{before}{email}{after}");
        }
        email
    }

    fn row(&mut self, h: &Human, format: PhoneFormat, noisy: bool) -> Person {
        Person {
            id: String::new(),
            name: self.name(h),
            email: self.noisy_email(&h.email, noisy),
            phone: h.phone.write(format),
            canonical_email: Some(h.email.clone()),
            canonical_phone: Some(h.phone.canonical()),
        }
    }

    /// The rows of one file: one per person, duplicates and rows without e-mail, shuffled.
    fn file(&mut self, tag: char, people: Vec<&Human>) -> Vec<Person> {
        let n = people.len();
        let mut rows = Vec::with_capacity(n + n / 50 + n / 200);
        // Per person, a bit per phone format already used by one of its rows.
        let mut used = Vec::with_capacity(n);
        for h in &people {
            let f = self.rng.random_range(0..PHONE_FORMATS.len());
            used.push(1u8 << f);
            rows.push(self.row(h, PHONE_FORMATS[f], false));
        }
        for _ in 0..n / 50 {
            let i = self.rng.random_range(0..n);
            // A phone format none of the person's rows has (while there is one), and a noisy
            // e-mail address half the time.
            let free: Vec<usize> = (0..PHONE_FORMATS.len())
                .filter(|f| used[i] & (1 << f) == 0)
                .collect();
            let f = if free.is_empty() {
                self.rng.random_range(0..PHONE_FORMATS.len())
            } else {
                self.pick(&free)
            };
            used[i] |= 1 << f;
            let noisy = self.rng.random_bool(0.5);
            rows.push(self.row(people[i], PHONE_FORMATS[f], noisy));
        }
        for _ in 0..n / 200 {
            let h = self.human();
            let format = self.pick(&PHONE_FORMATS);
            let mut row = self.row(&h, format, false);
            row.email = String::new();
            row.canonical_email = None;
            rows.push(row);
        }
        rows.shuffle(&mut self.rng);
        for (i, row) in rows.iter_mut().enumerate() {
            row.id = format!("{tag}-{:06}", i + 1);
        }
        rows
    }
}

/// The lower-case ASCII letters of a name ("O'Brien" → "obrien").
fn letters(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphabetic)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::input::{InputSpec, read_input};
    use crate::normalize::{Normalize, Normalizer};

    fn spec(size: usize, other_size: usize, overlap: usize, seed: u64) -> GenSpec {
        GenSpec {
            size,
            other_size,
            overlap,
            seed,
        }
    }

    fn emails(rows: &[Person]) -> HashSet<String> {
        rows.iter()
            .filter_map(|p| p.canonical_email.clone())
            .collect()
    }

    fn phones(rows: &[Person]) -> HashSet<String> {
        rows.iter()
            .filter_map(|p| p.canonical_phone.clone())
            .collect()
    }

    fn check(s: GenSpec) -> Generated {
        let g = generate(&s).unwrap();
        for (rows, size, tag) in [(&g.a, s.size, 'a'), (&g.b, s.other_size, 'b')] {
            let (dups, empty) = (size / 50, size / 200);
            assert_eq!(rows.len(), size + dups + empty);
            assert_eq!(emails(rows).len(), size);
            // Empty-email rows have phone numbers of their own.
            assert_eq!(phones(rows).len(), size + empty);
            assert_eq!(rows.iter().filter(|p| p.email.is_empty()).count(), empty);
            assert_eq!(
                rows.iter().filter(|p| p.canonical_email.is_none()).count(),
                empty
            );
            for (i, p) in rows.iter().enumerate() {
                assert_eq!(p.id, format!("{tag}-{:06}", i + 1));
                assert!(p.canonical_phone.is_some());
            }
        }
        let shared: HashSet<String> = emails(&g.a).intersection(&emails(&g.b)).cloned().collect();
        assert_eq!(shared.len(), s.overlap);
        assert_eq!(shared, g.shared_emails);
        let shared_phones: HashSet<String> =
            phones(&g.a).intersection(&phones(&g.b)).cloned().collect();
        assert_eq!(shared_phones.len(), s.overlap);
        // Each shared phone belongs to a shared person, in both files.
        for p in g.a.iter().chain(&g.b) {
            let phone_shared = shared_phones.contains(p.canonical_phone.as_ref().unwrap());
            let email_shared = p
                .canonical_email
                .as_ref()
                .is_some_and(|e| shared.contains(e));
            assert_eq!(phone_shared, email_shared, "{p:?}");
        }
        g
    }

    #[test]
    fn invariants() {
        check(spec(1000, 1000, 250, 1));
        check(spec(1000, 400, 400, 2));
        check(spec(300, 2000, 0, 3));
        check(spec(49, 50, 10, 4));
        check(spec(199, 200, 199, 5));
        check(spec(0, 0, 0, 6));
        check(spec(1, 0, 0, 7));
        let g = check(spec(3, 3, 3, 8));
        assert_eq!(g.a.len(), 3);
    }

    #[test]
    fn small_sizes_get_duplicates_and_empty_rows() {
        let g = check(spec(50, 200, 20, 9));
        assert_eq!(g.a.len(), 51);
        assert_eq!(g.b.len(), 205);
        assert_eq!(g.b.iter().filter(|p| p.email.is_empty()).count(), 1);
    }

    #[test]
    fn overlap_too_large() {
        for s in [spec(10, 20, 11, 0), spec(20, 10, 11, 0), spec(0, 0, 1, 0)] {
            assert!(matches!(generate(&s), Err(CliError::Usage(_))), "{s:?}");
        }
    }

    #[test]
    fn deterministic() {
        let s = spec(500, 700, 100, 42);
        let g = generate(&s).unwrap();
        assert_eq!(g, generate(&s).unwrap());
        let other = generate(&GenSpec { seed: 43, ..s }).unwrap();
        assert_ne!(g.a, other.a);
        assert_ne!(g.b, other.b);
        assert_ne!(g.shared_emails, other.shared_emails);
    }

    #[test]
    fn normalisers_recover_the_canonical_values() {
        let g = generate(&spec(3000, 2000, 500, 11)).unwrap();
        let email = Normalizer {
            kind: Normalize::Email,
            country_code: None,
        };
        let phone = Normalizer {
            kind: Normalize::Phone,
            country_code: None,
        };
        for p in g.a.iter().chain(&g.b) {
            assert_eq!(
                email.apply(p.email.as_bytes()),
                p.canonical_email.as_ref().map(|e| e.clone().into_bytes()),
                "{p:?}"
            );
            assert_eq!(
                phone.apply(p.phone.as_bytes()),
                p.canonical_phone.as_ref().map(|e| e.clone().into_bytes()),
                "{p:?}"
            );
        }
    }

    #[test]
    fn has_noise_and_varied_formats() {
        let g = generate(&spec(2000, 2000, 500, 12)).unwrap();
        let rows = &g.a;
        let noisy = rows
            .iter()
            .filter(|p| p.canonical_email.as_ref().is_some_and(|e| *e != p.email))
            .count();
        // About 20% of the 2000 first rows, plus half the 40 duplicates.
        assert!((300..=560).contains(&noisy), "{noisy}");
        assert!(
            rows.iter()
                .any(|p| p.email.starts_with(' ') || p.email.ends_with(' '))
        );
        assert!(
            rows.iter()
                .any(|p| p.email.chars().any(|c| c.is_ascii_uppercase()))
        );
        assert!(rows.iter().any(|p| p.phone.starts_with("00")));
        assert!(rows.iter().any(|p| p.phone.contains('(')));
        assert!(rows.iter().any(|p| p.phone.contains('-')));
        assert!(rows.iter().any(|p| p.phone.contains(' ')));
        for cc in ["+1", "+44", "+49", "+33", "+81", "+91"] {
            assert!(
                rows.iter().any(|p| p
                    .canonical_phone
                    .as_ref()
                    .is_some_and(|c| c.starts_with(cc))),
                "{cc}"
            );
        }
        // Duplicate rows repeat a person with a different phone format.
        let mut by_email: std::collections::HashMap<&str, Vec<&Person>> = Default::default();
        for p in rows {
            if let Some(e) = &p.canonical_email {
                by_email.entry(e).or_default().push(p);
            }
        }
        let dups: Vec<&Vec<&Person>> = by_email.values().filter(|v| v.len() > 1).collect();
        assert!(!dups.is_empty());
        for v in dups {
            assert!(v.iter().all(|p| p.canonical_phone == v[0].canonical_phone));
            // Each row of a person has its own phone format.
            for (i, p) in v.iter().enumerate() {
                for q in &v[i + 1..] {
                    assert_ne!(p.phone, q.phone);
                }
            }
        }
    }

    #[test]
    fn csv_round_trip() {
        let g = generate(&spec(400, 300, 100, 13)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        write_csv(&path, &g.a).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("id,name,email,phone,spend\n"));
        for (column, kind) in [("email", Normalize::Email), ("phone", Normalize::Phone)] {
            let t = read_input(
                &InputSpec {
                    path: &path,
                    format: None,
                    columns: &[column.to_owned()],
                    normalizer: &Normalizer {
                        kind,
                        country_code: None,
                    },
                },
                &|_| {},
            )
            .unwrap()
            .keyed;
            assert_eq!(t.rows(), g.a.len());
            let mut rdr = csv::Reader::from_path(&path).unwrap();
            let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
            assert_eq!(rows.len(), g.a.len());
            for (row, p) in rows.iter().zip(&g.a) {
                let fields: Vec<&str> = row.iter().collect();
                let spend = p.spend().to_string();
                assert!(p.spend() < 1000);
                assert_eq!(fields, [&p.id, &p.name, &p.email, &p.phone, &spend]);
            }
            let (size, dups, empty) = (400, 400 / 50, 400 / 200);
            match kind {
                Normalize::Email => {
                    assert_eq!(t.items.len(), size);
                    assert_eq!((t.empty_keys, t.duplicate_rows), (empty, dups));
                }
                _ => {
                    assert_eq!(t.items.len(), size + empty as usize);
                    assert_eq!((t.empty_keys, t.duplicate_rows), (0, dups));
                }
            }
        }
    }
}
