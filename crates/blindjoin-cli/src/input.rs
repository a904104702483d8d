//! Reading a party's input file: a CSV file with a header (a key column is named) or a plain file
//! with one key per line.
//!
//! The whole file is read into memory. Every row is kept as read, so the matched rows can be
//! written back; the keys are normalised and deduplicated, since the protocols work on sets.

use crate::error::{CliError, CliResult};
use crate::normalize::Normalizer;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// The UTF-8 byte order mark, ignored at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What to read and how to get the keys.
#[derive(Clone, Copy, Debug)]
pub struct InputSpec<'a> {
    /// The input file.
    pub path: &'a Path,
    /// The CSV column holding the key; `None` reads the file as one key per line.
    pub column: Option<&'a str>,
    /// How keys are normalised.
    pub normalizer: &'a Normalizer,
}

/// An input file: its rows and their normalised keys.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// The header record; always present in CSV mode (a file without one is an error).
    pub header: Option<csv::ByteRecord>,
    /// Every data row as read (for writing matched rows back); in lines mode, one field per row
    /// holding the line (without its line ending).
    pub rows: Vec<csv::ByteRecord>,
    /// Distinct normalised keys, in order of first appearance.
    pub keys: Vec<Vec<u8>>,
    /// Per row: index into `keys`, or `None` if the key was empty/invalid.
    pub row_key: Vec<Option<u32>>,
    /// Rows whose key is empty/invalid after normalisation.
    pub empty_keys: u64,
    /// Rows whose key repeats an earlier row's key.
    pub duplicate_rows: u64,
}

/// Reads and normalises an input file (see the module doc and [`InputSpec`]).
///
/// CSV mode (a column is given): comma-separated, RFC 4180 quoting, the first line is the
/// header and every record must have as many fields as the header. A UTF-8 byte order mark at
/// the start of the file is ignored, and the column is found by its header name with surrounding
/// whitespace trimmed (the first such column if several have the name). A file without a header
/// (0 bytes, only a byte order mark, or only line endings) is an error, since it has no column
/// of that name; a header without rows is a table of no rows.
///
/// Lines mode: every line is a record (a trailing `\r` is stripped, as is a UTF-8 byte order mark
/// at the start of the file); an empty line is a record with an empty key, but the empty
/// remainder after the final line ending is not a record.
pub fn read_table(spec: &InputSpec) -> CliResult<Table> {
    let file = std::fs::File::open(spec.path).map_err(|source| CliError::File {
        path: spec.path.to_path_buf(),
        source,
    })?;
    read_table_from(spec, file)
}

/// [`read_table`] on the bytes of `reader` instead of the file at `spec.path`, which then only
/// names the input in errors.
pub fn read_table_from(spec: &InputSpec, mut reader: impl Read) -> CliResult<Table> {
    let mut data = Vec::new();
    reader
        .read_to_end(&mut data)
        .map_err(|source| CliError::File {
            path: spec.path.to_path_buf(),
            source,
        })?;
    let data = data.strip_prefix(BOM).unwrap_or(&data);
    match spec.column {
        Some(column) => read_csv(spec, data, column),
        None => read_lines(spec, data),
    }
}

impl Table {
    /// The rows (indices, ascending) whose key index is in `matched_keys` (key indices; they need
    /// not be sorted, and indices out of range are ignored).
    pub fn rows_of_keys(&self, matched_keys: &[usize]) -> Vec<usize> {
        let mut matched = vec![false; self.keys.len()];
        for &k in matched_keys {
            if let Some(m) = matched.get_mut(k) {
                *m = true;
            }
        }
        self.row_key
            .iter()
            .enumerate()
            .filter(|(_, k)| k.is_some_and(|k| matched.get(k as usize).copied().unwrap_or(false)))
            .map(|(i, _)| i)
            .collect()
    }
}

/// Builds the table from rows and the raw key of each row.
struct Builder<'a> {
    normalizer: &'a Normalizer,
    path: &'a Path,
    index: HashMap<Vec<u8>, u32>,
    table: Table,
}

impl<'a> Builder<'a> {
    fn new(spec: &'a InputSpec) -> Self {
        Builder {
            normalizer: spec.normalizer,
            path: spec.path,
            index: HashMap::new(),
            table: Table::default(),
        }
    }

    fn push(&mut self, row: csv::ByteRecord, raw_key: &[u8]) -> CliResult<()> {
        let key = match self.normalizer.apply(raw_key) {
            None => {
                self.table.empty_keys += 1;
                None
            }
            Some(key) => match self.index.get(&key) {
                Some(&i) => {
                    self.table.duplicate_rows += 1;
                    Some(i)
                }
                None => {
                    let i = u32::try_from(self.table.keys.len()).map_err(|_| {
                        CliError::Usage(format!(
                            "{}: more than {} distinct keys",
                            self.path.display(),
                            u32::MAX
                        ))
                    })?;
                    self.table.keys.push(key.clone());
                    self.index.insert(key, i);
                    Some(i)
                }
            },
        };
        self.table.row_key.push(key);
        self.table.rows.push(row);
        Ok(())
    }
}

fn read_lines(spec: &InputSpec, data: &[u8]) -> CliResult<Table> {
    let mut b = Builder::new(spec);
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    if data.is_empty() {
        return Ok(b.table);
    }
    for line in body.split(|&c| c == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut row = csv::ByteRecord::with_capacity(line.len(), 1);
        row.push_field(line);
        b.push(row, line)?;
    }
    Ok(b.table)
}

fn read_csv(spec: &InputSpec, data: &[u8], column: &str) -> CliResult<Table> {
    let malformed = |line: u64, reason: String| CliError::Malformed {
        path: spec.path.to_path_buf(),
        line,
        reason,
    };
    check_quoting(data).map_err(|(line, reason)| malformed(line, reason.to_owned()))?;

    let mut b = Builder::new(spec);
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(data);
    let header = rdr
        .byte_headers()
        .map_err(|e| csv_error(spec.path, data, &e))?
        .clone();
    if header.is_empty() {
        // No record at all: a completely empty file (or only line endings).
        return Err(CliError::Usage(format!(
            "{}: empty file: no header, so no column `{column}`",
            spec.path.display()
        )));
    }
    let name = |f: &[u8]| String::from_utf8_lossy(f).trim().to_owned();
    let wanted = column.trim();
    let col = header
        .iter()
        .position(|f| name(f) == wanted)
        .ok_or_else(|| CliError::MissingColumn {
            path: spec.path.to_path_buf(),
            column: column.to_owned(),
            available: header.iter().map(name).collect::<Vec<_>>().join(", "),
        })?;
    b.table.header = Some(header);

    loop {
        let mut row = csv::ByteRecord::new();
        match rdr.read_byte_record(&mut row) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(spec.path, data, &e)),
        }
        let key = row.get(col).unwrap_or_default().to_vec();
        b.push(row, &key)?;
    }
    Ok(b.table)
}

/// The user-facing error of a CSV parse error, with the 1-based line where the record starts.
///
/// The line is computed from the record's byte offset in `data`: the `csv` crate's own line
/// count does not account for the blank lines it skips before a record.
fn csv_error(path: &Path, data: &[u8], e: &csv::Error) -> CliError {
    let line = e.position().map_or(0, |pos| {
        let start = usize::try_from(pos.byte())
            .unwrap_or(usize::MAX)
            .min(data.len());
        let blank = data[start..]
            .iter()
            .take_while(|&&c| c == b'\r' || c == b'\n')
            .count();
        let newlines = data[..start + blank]
            .iter()
            .filter(|&&c| c == b'\n')
            .count();
        1 + newlines as u64
    });
    let reason = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields where the header has {expected_len}"),
        _ => e.to_string(),
    };
    CliError::Malformed {
        path: path.to_path_buf(),
        line,
        reason,
    }
}

/// Rejects quoting the `csv` crate would silently accept: a quoted field left open at the end of
/// the file, and text between a closing quote and the end of its field. (A quote inside an
/// unquoted field is taken literally, as the `csv` crate does.) Returns the 1-based line and the
/// reason of the first problem.
fn check_quoting(data: &[u8]) -> Result<(), (u64, &'static str)> {
    #[derive(Clone, Copy)]
    enum State {
        FieldStart,
        Unquoted,
        Quoted { opened: u64 },
        AfterQuote { opened: u64 },
    }
    let mut state = State::FieldStart;
    let mut line = 1u64;
    for &c in data {
        state = match (state, c) {
            (State::FieldStart, b'"') => State::Quoted { opened: line },
            (State::FieldStart | State::Unquoted, b',' | b'\r' | b'\n') => State::FieldStart,
            (State::FieldStart | State::Unquoted, _) => State::Unquoted,
            (State::Quoted { opened }, b'"') => State::AfterQuote { opened },
            (State::Quoted { .. }, _) => state,
            (State::AfterQuote { opened }, b'"') => State::Quoted { opened },
            (State::AfterQuote { .. }, b',' | b'\r' | b'\n') => State::FieldStart,
            (State::AfterQuote { .. }, _) => {
                return Err((line, "text after the closing quote of a quoted field"));
            }
        };
        if c == b'\n' {
            line += 1;
        }
    }
    match state {
        State::Quoted { opened } => Err((opened, "quoted field is never closed")),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::normalize::Normalize;
    use std::io::Write;

    fn file(content: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        f.flush().unwrap();
        f
    }

    fn read(
        content: &[u8],
        column: Option<&str>,
        kind: Normalize,
    ) -> (tempfile::NamedTempFile, CliResult<Table>) {
        let f = file(content);
        let normalizer = Normalizer {
            kind,
            country_code: None,
        };
        let t = read_table(&InputSpec {
            path: f.path(),
            column,
            normalizer: &normalizer,
        });
        (f, t)
    }

    fn fields(r: &csv::ByteRecord) -> Vec<&[u8]> {
        r.iter().collect()
    }

    fn keys(t: &Table) -> Vec<&[u8]> {
        t.keys.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn csv_quotes_embedded_commas_and_newlines() {
        let content = b"id,name,email\n\
            1,\"Kowalski, Anna\",anna@x.org\n\
            2,\"Line\nbreak \"\"quoted\"\"\",\"bob@y.org\"\n\
            3,Plain,\" Anna@X.org\"\n";
        let (_f, t) = read(content, Some("email"), Normalize::Email);
        let t = t.unwrap();
        assert_eq!(
            fields(t.header.as_ref().unwrap()),
            vec![&b"id"[..], b"name", b"email"]
        );
        assert_eq!(t.rows.len(), 3);
        assert_eq!(
            fields(&t.rows[0]),
            vec![&b"1"[..], b"Kowalski, Anna", b"anna@x.org"]
        );
        assert_eq!(
            fields(&t.rows[1]),
            vec![&b"2"[..], b"Line\nbreak \"quoted\"", b"bob@y.org"]
        );
        assert_eq!(keys(&t), vec![&b"anna@x.org"[..], b"bob@y.org"]);
        assert_eq!(t.row_key, vec![Some(0), Some(1), Some(0)]);
        assert_eq!((t.empty_keys, t.duplicate_rows), (0, 1));
    }

    #[test]
    fn csv_bom_and_padded_header() {
        let (_f, t) = read(
            b"\xEF\xBB\xBF email , id\nA@x.org,1\r\nb@x.org,2",
            Some("email"),
            Normalize::Lower,
        );
        let t = t.unwrap();
        assert_eq!(
            fields(t.header.as_ref().unwrap()),
            vec![&b" email "[..], b" id"]
        );
        assert_eq!(keys(&t), vec![&b"a@x.org"[..], b"b@x.org"]);
        // A quoted first header after the BOM.
        let (_f, t) = read(
            b"\xEF\xBB\xBF\"email\"\nx\n",
            Some("email"),
            Normalize::None,
        );
        assert_eq!(keys(&t.unwrap()), vec![&b"x"[..]]);
    }

    #[test]
    fn csv_missing_column() {
        let (f, t) = read(
            b"\xEF\xBB\xBFid, name ,phone\n1,a,2\n",
            Some("email"),
            Normalize::None,
        );
        match t {
            Err(CliError::MissingColumn {
                path,
                column,
                available,
            }) => {
                assert_eq!(path, f.path());
                assert_eq!(column, "email");
                assert_eq!(available, "id, name, phone");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn csv_malformed_line_numbers() {
        let content = b"id,email\n1,a@x\n\"2\",\"multi\nline\"\n3\n4,d@x\n";
        let (_f, t) = read(content, Some("email"), Normalize::None);
        match t {
            Err(CliError::Malformed { line, reason, .. }) => {
                assert_eq!(line, 5);
                assert_eq!(reason, "1 fields where the header has 2");
            }
            other => panic!("unexpected {other:?}"),
        }
        let (_f, t) = read(b"id,email\n1,a\n2,b\n3\n", Some("email"), Normalize::None);
        let e = t.unwrap_err();
        assert!(matches!(e, CliError::Malformed { line: 4, .. }), "{e:?}");
        assert!(e.to_string().contains(": line 4: "), "{e}");
        let (_f, t) = read(b"id,email\n1,a,extra\n", Some("email"), Normalize::None);
        assert!(
            matches!(t, Err(CliError::Malformed { line: 2, .. })),
            "{t:?}"
        );
        // Broken quoting.
        let (_f, t) = read(
            b"id,email\n1,a\n2,\"b\nc\n3,d\n",
            Some("email"),
            Normalize::None,
        );
        match t {
            Err(CliError::Malformed { line, reason, .. }) => {
                assert_eq!(line, 3);
                assert_eq!(reason, "quoted field is never closed");
            }
            other => panic!("unexpected {other:?}"),
        }
        let (_f, t) = read(b"id,email\n1,a\n2,\"b\"c\n", Some("email"), Normalize::None);
        match t {
            Err(CliError::Malformed { line, reason, .. }) => {
                assert_eq!(line, 3);
                assert_eq!(reason, "text after the closing quote of a quoted field");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Blank lines (skipped) before the bad record, CRLF line endings.
        let (_f, t) = read(
            b"id,email\r\n1,a\r\n\r\n\r\n3\r\n",
            Some("email"),
            Normalize::None,
        );
        assert!(
            matches!(t, Err(CliError::Malformed { line: 5, .. })),
            "{t:?}"
        );
        let (_f, t) = read(b"\n\nid,email\n\n1\n", Some("email"), Normalize::None);
        assert!(
            matches!(t, Err(CliError::Malformed { line: 5, .. })),
            "{t:?}"
        );
        // A quote inside an unquoted field is literal.
        let (_f, t) = read(b"id,email\n1,5\" pipe\n", Some("email"), Normalize::None);
        assert_eq!(keys(&t.unwrap()), vec![&b"5\" pipe"[..]]);
    }

    #[test]
    fn csv_empty_files() {
        // No header at all: an error naming the file and the column, whatever the bytes.
        for content in [&b""[..], b"\xEF\xBB\xBF", b"\n", b"\r\n\r\n"] {
            let (f, t) = read(content, Some("email"), Normalize::None);
            let e = t.unwrap_err();
            assert!(matches!(e, CliError::Usage(_)), "{e:?}");
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: empty file: no header, so no column `email`",
                    f.path().display()
                )
            );
        }
        // A header and no rows: a table of no rows.
        let (_f, t) = read(b"id,email\n", Some("email"), Normalize::None);
        let t = t.unwrap();
        assert_eq!(t.header.as_ref().map(csv::ByteRecord::len), Some(2));
        assert!(t.rows.is_empty());
        let (_f, t) = read(b"id,email", Some("email"), Normalize::None);
        assert!(t.unwrap().rows.is_empty());
    }

    #[test]
    fn any_reader_reads_as_the_file_does() {
        let content = b"\xEF\xBB\xBFid,email\r\n1,A@x.org\r\n2,\"b@x.org\"\r\n3,a@X.org\r\n";
        let normalizer = Normalizer {
            kind: Normalize::Email,
            country_code: None,
        };
        let f = file(content);
        let spec = InputSpec {
            path: f.path(),
            column: Some("email"),
            normalizer: &normalizer,
        };
        let from_file = read_table(&spec).unwrap();
        let from_bytes = read_table_from(&spec, &content[..]).unwrap();
        assert_eq!(keys(&from_file), vec![&b"a@x.org"[..], b"b@x.org"]);
        assert_eq!(keys(&from_bytes), keys(&from_file));
        assert_eq!(from_bytes.rows, from_file.rows);
        assert_eq!(from_bytes.row_key, from_file.row_key);
        assert_eq!(from_bytes.header, from_file.header);
    }

    #[test]
    fn csv_duplicates_and_empty_keys() {
        let content = b"k,email\n1,a@x\n2,\n3, A@X \n4,   \n5,b@x\n6,a@x\n7,\"\"\n";
        let (_f, t) = read(content, Some("email"), Normalize::Email);
        let t = t.unwrap();
        assert_eq!(keys(&t), vec![&b"a@x"[..], b"b@x"]);
        assert_eq!(
            t.row_key,
            vec![Some(0), None, Some(0), None, Some(1), Some(0), None]
        );
        assert_eq!(t.empty_keys, 3);
        assert_eq!(t.duplicate_rows, 2);
        assert_eq!(t.rows.len(), 7);
    }

    #[test]
    fn lines_mode_crlf_empty_lines_and_duplicates() {
        let (_f, t) = read(b"a\r\nb\r\n\r\na\r\n\nc", None, Normalize::None);
        let t = t.unwrap();
        assert!(t.header.is_none());
        let rows: Vec<Vec<&[u8]>> = t.rows.iter().map(fields).collect();
        assert_eq!(
            rows,
            vec![
                vec![&b"a"[..]],
                vec![b"b"],
                vec![b""],
                vec![b"a"],
                vec![b""],
                vec![b"c"]
            ]
        );
        assert_eq!(keys(&t), vec![&b"a"[..], b"b", b"c"]);
        assert_eq!(
            t.row_key,
            vec![Some(0), Some(1), None, Some(0), None, Some(2)]
        );
        assert_eq!((t.empty_keys, t.duplicate_rows), (2, 1));

        // The empty remainder after the final newline is not a record; commas and quotes are data.
        let (_f, t) = read(b"\xEF\xBB\xBFx,\"y\"\n\n", None, Normalize::None);
        let t = t.unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(keys(&t), vec![&b"x,\"y\""[..]]);
        assert_eq!(t.empty_keys, 1);

        for empty in [&b""[..], b"\xEF\xBB\xBF"] {
            let (_f, t) = read(empty, None, Normalize::None);
            assert!(t.unwrap().rows.is_empty());
        }
        let (_f, t) = read(b"\n", None, Normalize::None);
        assert_eq!(t.unwrap().empty_keys, 1);
    }

    #[test]
    fn missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.csv");
        let normalizer = Normalizer {
            kind: Normalize::None,
            country_code: None,
        };
        let e = read_table(&InputSpec {
            path: &path,
            column: None,
            normalizer: &normalizer,
        })
        .unwrap_err();
        assert!(
            matches!(&e, CliError::File { path: p, .. } if *p == path),
            "{e:?}"
        );
    }

    #[test]
    fn rows_of_keys() {
        let (_f, t) = read(b"a\nb\n\na\nc\nb\n", None, Normalize::None);
        let t = t.unwrap();
        assert_eq!(
            t.row_key,
            vec![Some(0), Some(1), None, Some(0), Some(2), Some(1)]
        );
        assert_eq!(t.rows_of_keys(&[]), Vec::<usize>::new());
        assert_eq!(t.rows_of_keys(&[0]), vec![0, 3]);
        assert_eq!(t.rows_of_keys(&[1, 2]), vec![1, 4, 5]);
        assert_eq!(t.rows_of_keys(&[0, 1, 2]), vec![0, 1, 3, 4, 5]);
        assert_eq!(t.rows_of_keys(&[2, 0, 7]), vec![0, 3, 4]);
    }
}
