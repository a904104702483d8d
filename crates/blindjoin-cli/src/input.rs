//! Reading a party's input: a CSV file with a header, a Parquet file, or a plain file with one
//! key per line. Only the keys are kept: every row's key is normalised and hashed
//! ([`crate::keyed`]), and the rows are found again by index when the matched ones are written
//! ([`crate::output`]), so a party's memory is its items plus a few bytes per row, not the file.
//!
//! # CSV and lines: streamed in chunks
//!
//! One thread reads the file in blocks and cuts it into chunks of about [`CHUNK_BYTES`] that end
//! at a record boundary. Finding a boundary takes the quoting into account: a newline inside a
//! quoted field is data. The same scan checks the quoting the `csv` crate would accept silently
//! (a quoted field never closed, text after a closing quote) and counts lines, so an error names
//! its line. The chunks are parsed in parallel (`--threads`) with Arrow's CSV decoder
//! (`arrow-csv`), keeping only the key columns, and their keys hashed in the same task. A chunk
//! the decoder refuses is parsed again with the `csv` crate to name the line and the reason.
//! Arrow strings are UTF-8: a CSV file that is not UTF-8 is refused with the line of the first
//! bad field. Lines mode takes bytes as they are.
//!
//! The chunk list (byte offset, first row, row count) is what [`crate::output`] uses to read the
//! matched rows back.
//!
//! # Parquet
//!
//! The key columns are read with the `parquet` crate's Arrow reader (only those columns are
//! decoded) in record batches, each hashed in parallel. A key column that is not a string column
//! is cast to its string form with `arrow-cast` (an integer id `42` is the key `42`). Rows are
//! numbered in file order; the output reads the file again and takes the matched rows.

use crate::error::{CliError, CliResult};
use crate::keyed::{Dedup, KeyHasher, Keyed};
use crate::normalize::Normalizer;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use blindjoin_core::item::Item;
use rayon::prelude::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The UTF-8 byte order mark, ignored at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The size a chunk of a CSV or lines file is cut at (it ends at the next record boundary).
pub const CHUNK_BYTES: usize = 2 << 20;

/// Rows per Arrow record batch when decoding.
const BATCH_ROWS: usize = 8192;

/// The format of an input or output file.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Comma-separated values with a header line (RFC 4180 quoting).
    Csv,
    /// Apache Parquet.
    Parquet,
    /// One key per line, no header.
    Lines,
}

impl Format {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Lines => "lines",
        }
    }

    /// The format a file name says: `.parquet` or `.pq` is Parquet, `.csv` CSV, anything else
    /// `None`.
    pub fn of_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" | "pq" => Some(Format::Parquet),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }

    /// The format of an input: `given` if set; else by extension (Parquet); else CSV when key
    /// columns are named and lines when not.
    pub fn of_input(given: Option<Format>, path: &Path, has_columns: bool) -> Format {
        given.unwrap_or_else(|| match Format::of_extension(path) {
            Some(Format::Parquet) => Format::Parquet,
            _ if has_columns => Format::Csv,
            _ => Format::Lines,
        })
    }
}

/// Refuses a file named `.csv` (or `.tsv`) read without a key column and without an explicit
/// `--format lines`: every whole line, the header included, would be a key, which is never
/// what a CSV file's owner means.
pub fn check_key_source(path: &Path, given: Option<Format>, columns: &[String]) -> CliResult<()> {
    let csv_named = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv") || e.eq_ignore_ascii_case("tsv"));
    if given.is_none() && columns.is_empty() && csv_named {
        return Err(CliError::Usage(format!(
            "{}: a CSV file needs its key column: give --column NAME (several for a composite \
             key); to read every whole line as a key, header included, give --format lines",
            path.display()
        )));
    }
    Ok(())
}

/// What to read and how to get the keys.
#[derive(Clone, Copy, Debug)]
pub struct InputSpec<'a> {
    /// The input file.
    pub path: &'a Path,
    /// The format; `None` chooses by [`Format::of_input`].
    pub format: Option<Format>,
    /// The key columns (one, or several for a composite key); empty in lines mode, or for a
    /// Parquet file of one column.
    pub columns: &'a [String],
    /// How keys are normalised.
    pub normalizer: &'a Normalizer,
}

impl InputSpec<'_> {
    /// The format this spec reads.
    pub fn format(&self) -> Format {
        Format::of_input(self.format, self.path, !self.columns.is_empty())
    }
}

/// A byte range of a CSV or lines file holding consecutive rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Chunk {
    /// Offset of the first byte in the file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Index of its first row among the file's data rows.
    pub first_row: u64,
    /// Rows it holds.
    pub rows: u64,
    /// 1-based line number of its first byte.
    pub first_line: u64,
}

/// Where an input's rows are, to read the matched ones back.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RowSource {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// The column names: the CSV header's fields as written, or the Parquet schema's names;
    /// empty in lines mode.
    pub columns: Vec<String>,
    /// The key columns, as indices into `columns`, in the order the key joins them.
    pub key_columns: Vec<usize>,
    /// CSV and lines: the chunks, in file order (empty for Parquet).
    pub chunks: Vec<Chunk>,
    /// Rows in the file.
    pub rows: u64,
}

/// A read input: its keyed rows and where the rows are.
#[derive(Clone, Debug)]
pub struct Input {
    /// Items and per-row item indices.
    pub keyed: Keyed,
    /// How to find the rows again.
    pub source: RowSource,
    /// Bytes read from the file.
    pub bytes: u64,
}

/// Reads an input file (see the module doc).
///
/// CSV mode: comma-separated, RFC 4180 quoting, the first line is the header and every record
/// must have as many fields as the header. A UTF-8 byte order mark at the start of the file is
/// ignored, blank lines are skipped, and each column is found by its header name with surrounding
/// whitespace trimmed (the first such column if several have the name). A file without a header
/// (0 bytes, only a byte order mark, or only line endings) is an error, since it has no column
/// of that name; a header without rows is an input of no rows.
///
/// Lines mode: every line is a record (a trailing `\r` is stripped, as is a UTF-8 byte order mark
/// at the start of the file); an empty line is a record with an empty key, but the empty
/// remainder after the final line ending is not a record.
///
/// `progress` is called with the bytes read so far.
pub fn read_input(spec: &InputSpec, progress: &(dyn Fn(u64) + Sync)) -> CliResult<Input> {
    let mut sink = DedupSink {
        dedup: Dedup::default(),
        path: spec.path,
    };
    let (source, bytes) = read_rows(spec, &mut sink, progress)?;
    Ok(Input {
        keyed: sink.finish()?,
        source,
        bytes,
    })
}

/// Where a reader puts the keys of the rows as the file streams by ([`read_rows`]).
pub trait RowSink {
    /// Takes the items of the next rows, in file order (`None`: an empty or invalid key).
    fn take(&mut self, rows: &[Option<Item>]) -> CliResult<()>;

    /// The reader's estimate of the rows to come (the whole input), once it has one.
    fn expect(&mut self, _rows: usize) {}
}

/// The sink of [`read_input`]: the distinct items and each row's item, in memory.
struct DedupSink<'a> {
    dedup: Dedup,
    path: &'a Path,
}

impl DedupSink<'_> {
    fn finish(self) -> CliResult<Keyed> {
        self.dedup.finish().map_err(|_| too_many_keys(self.path))
    }
}

impl RowSink for DedupSink<'_> {
    fn take(&mut self, rows: &[Option<Item>]) -> CliResult<()> {
        self.dedup
            .extend(rows)
            .map_err(|_| too_many_keys(self.path))
    }

    fn expect(&mut self, rows: usize) {
        self.dedup.reserve(rows);
    }
}

/// Reads an input file as [`read_input`] does, but hands the rows' items to `sink` as they
/// come instead of keeping them: memory stays that of a few chunks, whatever the file's size.
/// Returns where the rows are and the bytes read.
pub fn read_rows(
    spec: &InputSpec,
    sink: &mut dyn RowSink,
    progress: &(dyn Fn(u64) + Sync),
) -> CliResult<(RowSource, u64)> {
    let format = spec.format();
    if format == Format::Parquet {
        return read_parquet(spec, sink, progress);
    }
    let file = std::fs::File::open(spec.path).map_err(|source| file_error(spec.path, source))?;
    let size = file.metadata().ok().map(|m| m.len());
    read_stream(spec, format, file, size, sink, progress)
}

/// [`read_input`] of a CSV or lines input from `reader` instead of the file at `spec.path`,
/// which then only names the input (in errors, and for reading rows back).
pub fn read_input_from(spec: &InputSpec, reader: impl Read + Send) -> CliResult<Input> {
    match spec.format() {
        Format::Parquet => Err(CliError::Usage(format!(
            "{}: a Parquet input is read from its file",
            spec.path.display()
        ))),
        format => {
            let mut sink = DedupSink {
                dedup: Dedup::default(),
                path: spec.path,
            };
            let (source, bytes) = read_stream(spec, format, reader, None, &mut sink, &|_| {})?;
            Ok(Input {
                keyed: sink.finish()?,
                source,
                bytes,
            })
        }
    }
}

fn file_error(path: &Path, source: std::io::Error) -> CliError {
    CliError::File {
        path: path.to_path_buf(),
        source,
    }
}

/// A chunk cut by the reading thread.
struct RawChunk {
    data: Vec<u8>,
    offset: u64,
    first_line: u64,
}

/// Finds record boundaries in CSV text and checks its quoting (see the module doc). It runs
/// over a stream in pieces: `state` and `newlines` carry over.
#[derive(Clone, Copy, Debug)]
struct Scanner {
    state: State,
    /// Newlines seen so far (the current line is `newlines + 1`).
    newlines: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Outside quotes (at a field start or inside an unquoted field).
    Outside,
    /// Inside a quoted field opened on line `opened`.
    Quoted { opened: u64 },
    /// Just after a quote that ends a quoted field, or starts an escaped `""`.
    AfterQuote { opened: u64 },
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            state: State::Outside,
            newlines: 0,
        }
    }

    /// Scans `buf[from..]`, where `buf` starts at a record boundary (or the file's start).
    /// Returns the end of the last complete record it saw (just after an unquoted newline) and
    /// the newlines before that end, or an error `(line, reason)`. At the end of `buf` the
    /// state is kept for the next call with more bytes; `from` is where this call resumes.
    fn scan(
        &mut self,
        buf: &[u8],
        from: &mut usize,
    ) -> Result<Option<(usize, u64)>, (u64, String)> {
        let mut pos = *from;
        let mut boundary = None;
        loop {
            match self.state {
                State::Outside => {
                    // Outside quotes every newline ends a record: count them in bulk up to
                    // the next quote and remember the last.
                    let next = memchr::memchr(b'"', &buf[pos..]).map(|i| pos + i);
                    let segment = &buf[pos..next.unwrap_or(buf.len())];
                    if let Some(last) = memchr::memrchr(b'\n', segment) {
                        self.newlines += memchr::memchr_iter(b'\n', segment).count() as u64;
                        boundary = Some((pos + last + 1, self.newlines));
                    }
                    let Some(at) = next else {
                        pos = buf.len();
                        break;
                    };
                    if at == 0 || matches!(buf[at - 1], b',' | b'\r' | b'\n') {
                        self.state = State::Quoted {
                            opened: self.newlines + 1,
                        };
                    }
                    pos = at + 1;
                }
                State::Quoted { opened } => match memchr::memchr(b'"', &buf[pos..]) {
                    None => {
                        self.newlines += memchr::memchr_iter(b'\n', &buf[pos..]).count() as u64;
                        pos = buf.len();
                        break;
                    }
                    Some(i) => {
                        self.newlines +=
                            memchr::memchr_iter(b'\n', &buf[pos..pos + i]).count() as u64;
                        self.state = State::AfterQuote { opened };
                        pos += i + 1;
                    }
                },
                State::AfterQuote { opened } => match buf.get(pos) {
                    None => break,
                    Some(b'"') => {
                        self.state = State::Quoted { opened };
                        pos += 1;
                    }
                    Some(b',' | b'\r') => {
                        self.state = State::Outside;
                        pos += 1;
                    }
                    Some(b'\n') => {
                        self.state = State::Outside;
                        self.newlines += 1;
                        pos += 1;
                        boundary = Some((pos, self.newlines));
                    }
                    Some(_) => {
                        let line = self.newlines + 1;
                        // A quoted field that ran over lines most likely began with a quote
                        // that was never closed: name where it opened.
                        return Err(if opened < line {
                            (
                                opened,
                                format!(
                                    "a quoted field opens here and runs to line {line}, where \
                                     text follows its closing quote (is a quote on this line \
                                     never closed?)"
                                ),
                            )
                        } else {
                            (
                                line,
                                "text after the closing quote of a quoted field".to_owned(),
                            )
                        });
                    }
                },
            }
        }
        *from = pos;
        Ok(boundary)
    }

    /// At the end of the input: an error if a quoted field is still open.
    fn finish(&self) -> Result<(), (u64, String)> {
        match self.state {
            State::Quoted { opened } => Err((opened, "quoted field is never closed".to_owned())),
            _ => Ok(()),
        }
    }
}

/// Reads `reader` and sends chunks ending at record boundaries (see the module doc). Returns
/// the bytes read.
fn cut_chunks(
    mut reader: impl Read,
    format: Format,
    tx: std::sync::mpsc::SyncSender<RawChunk>,
    pool: &BufferPool,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<u64, CutError> {
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_BYTES + (CHUNK_BYTES >> 2));
    let mut offset = 0u64; // file offset of buf[0]
    let mut total = 0u64;
    let mut scanner = Scanner::new();
    let mut scanned = 0usize; // resume point of the scanner in buf
    let mut lines_at_start = 0u64; // newlines before buf[0]
    let mut first = true;
    // How much the buffer is filled to: a chunk, or more while one record is longer.
    let mut want = CHUNK_BYTES;
    loop {
        let mut eof = false;
        while buf.len() < want {
            let start = buf.len();
            buf.resize(want, 0);
            let n = loop {
                match reader.read(&mut buf[start..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(CutError::Io(e)),
                }
            };
            buf.truncate(start + n);
            total += n as u64;
            if n == 0 {
                eof = true;
                break;
            }
        }
        progress(total);
        if first {
            first = false;
            if buf.starts_with(BOM) {
                buf.drain(..BOM.len());
                offset += BOM.len() as u64;
            }
        }
        // Where the chunk ends, and the newlines before its end.
        let cut = match format {
            Format::Csv => {
                let found = scanner
                    .scan(&buf, &mut scanned)
                    .map_err(CutError::Quoting)?;
                if eof {
                    scanner.finish().map_err(CutError::Quoting)?;
                    Some((buf.len(), scanner.newlines))
                } else {
                    found
                }
            }
            _ if eof => Some((buf.len(), 0)),
            _ => memchr::memrchr(b'\n', &buf).map(|i| (i + 1, 0)),
        };
        let Some((end, newlines)) = cut else {
            // No record ends in the buffer: read on.
            want = buf.len().saturating_mul(2);
            continue;
        };
        want = CHUNK_BYTES;
        let mut rest = pool.take();
        rest.extend_from_slice(&buf[end..]);
        buf.truncate(end);
        let data = std::mem::replace(&mut buf, rest);
        let len = data.len() as u64;
        if !data.is_empty()
            && tx
                .send(RawChunk {
                    data,
                    offset,
                    first_line: lines_at_start + 1,
                })
                .is_err()
        {
            // The consumer stopped (it has an error of its own to report).
            return Ok(total);
        }
        if eof {
            return Ok(total);
        }
        offset += len;
        scanned -= end.min(scanned);
        lines_at_start = newlines;
        buf.reserve(CHUNK_BYTES);
    }
}

/// Chunk buffers handed back by the parser for the reading thread to fill again: their memory
/// is already mapped, so a refill costs no page faults.
#[derive(Default)]
struct BufferPool(std::sync::Mutex<Vec<Vec<u8>>>);

impl BufferPool {
    /// A buffer with its old capacity (empty), or a new one.
    fn take(&self) -> Vec<u8> {
        let mut b = self
            .0
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default();
        b.clear();
        b
    }

    /// Keeps `buf` for reuse (at most `keep` buffers are kept).
    fn give(&self, buf: Vec<u8>, keep: usize) {
        if let Ok(mut p) = self.0.lock()
            && p.len() < keep
        {
            p.push(buf);
        }
    }
}

enum CutError {
    Io(std::io::Error),
    Quoting((u64, String)),
}

/// What parsing a chunk gives: per row its item (`None` without a key).
type ChunkItems = Vec<Option<Item>>;

/// The header of a CSV input.
struct Header {
    /// The fields as written.
    fields: Vec<String>,
    /// The key columns' indices.
    key_columns: Vec<usize>,
    /// The schema the chunks are decoded with (every column a string).
    schema: SchemaRef,
}

fn read_stream(
    spec: &InputSpec,
    format: Format,
    reader: impl Read + Send,
    size_hint: Option<u64>,
    sink: &mut dyn RowSink,
    progress: &(dyn Fn(u64) + Sync),
) -> CliResult<(RowSource, u64)> {
    let path = spec.path;
    let workers = rayon::current_num_threads().max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<RawChunk>(workers * 2);
    let pool = BufferPool::default();
    std::thread::scope(|s| {
        let pool = &pool;
        let cutter = s.spawn(move || cut_chunks(reader, format, tx, pool, progress));
        let consumed = consume_chunks(spec, format, &rx, pool, workers, size_hint, sink);
        drop(rx);
        let cut = cutter.join().map_err(|_| {
            CliError::Usage(format!("{}: the reading thread failed", path.display()))
        })?;
        // A read or quoting error comes first: a chunk error after it may be its consequence.
        let bytes = match cut {
            Ok(bytes) => bytes,
            Err(CutError::Io(source)) => return Err(file_error(path, source)),
            Err(CutError::Quoting((line, reason))) => {
                // Report the first error in file order: a malformed record before the quoting
                // error is found by the chunk parser.
                if let Err(e @ CliError::Malformed { line: l, .. }) = &consumed
                    && *l < line
                {
                    return Err(clone_malformed(e));
                }
                return Err(CliError::Malformed {
                    path: path.to_path_buf(),
                    line,
                    reason: reason.to_owned(),
                });
            }
        };
        Ok((consumed?, bytes))
    })
}

fn clone_malformed(e: &CliError) -> CliError {
    match e {
        CliError::Malformed { path, line, reason } => CliError::Malformed {
            path: path.clone(),
            line: *line,
            reason: reason.clone(),
        },
        other => CliError::Usage(other.to_string()),
    }
}

/// Takes the chunks in waves of `2 × workers`, parses a wave in parallel and deduplicates it in
/// order.
fn consume_chunks(
    spec: &InputSpec,
    format: Format,
    rx: &std::sync::mpsc::Receiver<RawChunk>,
    pool: &BufferPool,
    workers: usize,
    size_hint: Option<u64>,
    sink: &mut dyn RowSink,
) -> CliResult<RowSource> {
    let path = spec.path;
    let mut chunks = Vec::new();
    let mut header: Option<Header> = None;
    let mut next_row = 0u64;
    let mut wave: Vec<RawChunk> = Vec::with_capacity(workers * 2);
    let mut pending = rx.recv().ok();
    if format == Format::Csv {
        let Some(first) = pending.as_mut() else {
            return Err(empty_csv(path, spec.columns));
        };
        let (h, end) = parse_header(spec, &first.data)?;
        let skipped_lines = first.data[..end].iter().filter(|&&c| c == b'\n').count() as u64;
        first.data.drain(..end);
        first.offset += end as u64;
        first.first_line += skipped_lines;
        header = Some(h);
    }
    let mut reserved = false;
    loop {
        wave.clear();
        wave.extend(pending.take());
        while wave.len() < workers * 2 {
            match rx.recv() {
                Ok(c) => wave.push(c),
                Err(_) => break,
            }
        }
        if wave.is_empty() {
            break;
        }
        let parsed: Vec<CliResult<ChunkItems>> = wave
            .par_iter()
            .map(|c| match &header {
                Some(h) => parse_csv_chunk(spec, h, c),
                None => Ok(parse_lines_chunk(spec.normalizer, &c.data)),
            })
            .collect();
        for (c, items) in wave.iter().zip(parsed) {
            let items = items?;
            if !reserved {
                // Room for the whole input at once, estimated from the first chunk's rows per
                // byte.
                reserved = true;
                let per = (items.len() as u64 + 1) as f64 / (c.data.len() as u64 + 1) as f64;
                if let Some(size) = size_hint {
                    sink.expect((size as f64 * per * 1.05) as usize);
                }
            }
            chunks.push(Chunk {
                offset: c.offset,
                len: c.data.len() as u64,
                first_row: next_row,
                rows: items.len() as u64,
                first_line: c.first_line,
            });
            next_row += items.len() as u64;
            sink.take(&items)?;
        }
        for c in wave.drain(..) {
            pool.give(c.data, workers * 4 + 4);
        }
    }
    let (columns, key_columns) = match header {
        Some(h) => (h.fields, h.key_columns),
        None => (Vec::new(), Vec::new()),
    };
    Ok(RowSource {
        path: path.to_path_buf(),
        format,
        columns,
        key_columns,
        chunks,
        rows: next_row,
    })
}

fn too_many_keys(path: &Path) -> CliError {
    CliError::Usage(format!(
        "{}: more than {} distinct keys",
        path.display(),
        crate::keyed::MAX_DISTINCT_KEYS
    ))
}

fn empty_csv(path: &Path, columns: &[String]) -> CliError {
    CliError::Usage(format!(
        "{}: empty file: no header, so no column `{}`",
        path.display(),
        columns.join(",")
    ))
}

/// Parses the header record at the start of the first chunk: returns it and the offset just
/// after it.
fn parse_header(spec: &InputSpec, data: &[u8]) -> CliResult<(Header, usize)> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(data);
    let mut record = csv::ByteRecord::new();
    let found = rdr
        .read_byte_record(&mut record)
        .map_err(|e| csv_error(spec.path, data, 1, &e))?;
    if !found {
        return Err(empty_csv(spec.path, spec.columns));
    }
    let end = usize::try_from(rdr.position().byte())
        .unwrap_or(data.len())
        .min(data.len());
    let fields: Vec<String> = record
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let key_columns = find_columns(spec.path, &fields, spec.columns)?;
    let schema = Arc::new(Schema::new(
        (0..fields.len())
            .map(|i| Field::new(format!("c{i}"), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    Ok((
        Header {
            fields,
            key_columns,
            schema,
        },
        end,
    ))
}

/// The indices of `wanted` among `names` (compared with surrounding whitespace trimmed; the
/// first column of a name if several have it).
fn find_columns(path: &Path, names: &[String], wanted: &[String]) -> CliResult<Vec<usize>> {
    wanted
        .iter()
        .map(|w| {
            let w = w.trim();
            names
                .iter()
                .position(|n| n.trim() == w)
                .ok_or_else(|| CliError::MissingColumn {
                    path: path.to_path_buf(),
                    column: w.to_owned(),
                    available: names
                        .iter()
                        .map(|n| n.trim())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
        })
        .collect()
}

/// Decodes the key columns of a CSV chunk with Arrow and hashes each row's key.
fn parse_csv_chunk(spec: &InputSpec, h: &Header, c: &RawChunk) -> CliResult<ChunkItems> {
    let fail = || diagnose_csv(spec.path, &c.data, c.first_line, h.fields.len());
    let mut decoder = arrow_csv::ReaderBuilder::new(h.schema.clone())
        .with_header(false)
        .with_projection(h.key_columns.clone())
        .with_batch_size(BATCH_ROWS)
        .build_decoder();
    let mut hasher = KeyHasher::new(spec.normalizer);
    let mut out = Vec::new();
    let mut data = &c.data[..];
    // A batch is decoded until it is full or the input is used up (an empty `decode` is the
    // end of input, which completes a last record without a line ending).
    loop {
        loop {
            let n = decoder.decode(data).map_err(|_| fail())?;
            data = &data[n..];
            if n == 0 || decoder.capacity() == 0 {
                break;
            }
        }
        match decoder.flush().map_err(|_| fail())? {
            Some(batch) => {
                hash_batch(&mut hasher, batch.columns(), &mut out).map_err(|_| fail())?;
            }
            None => break,
        }
    }
    Ok(out)
}

/// Hashes the rows of `columns` (string columns of equal length; a null is an empty field).
pub fn hash_batch(
    hasher: &mut KeyHasher,
    columns: &[ArrayRef],
    out: &mut Vec<Option<Item>>,
) -> Result<(), String> {
    let strings: Vec<StringColumn> = columns
        .iter()
        .map(|c| StringColumn::of(c.as_ref()))
        .collect::<Result<_, _>>()?;
    let rows = columns.first().map_or(0, |c| c.len());
    if let [col] = strings.as_slice() {
        hasher.rows(rows, |i| std::iter::once(col.value(i)), out);
    } else {
        hasher.rows(rows, |i| strings.iter().map(move |c| c.value(i)), out);
    }
    Ok(())
}

/// A string column of any Arrow string type, read as bytes (a null is empty).
pub enum StringColumn<'a> {
    /// `Utf8`.
    Utf8(&'a arrow_array::StringArray),
    /// `LargeUtf8`.
    Large(&'a arrow_array::LargeStringArray),
    /// `Utf8View`.
    View(&'a arrow_array::StringViewArray),
    /// `Binary`.
    Binary(&'a arrow_array::BinaryArray),
    /// `LargeBinary`.
    LargeBinary(&'a arrow_array::LargeBinaryArray),
}

impl<'a> StringColumn<'a> {
    /// The column as strings, or an error naming its type.
    pub fn of(a: &'a dyn Array) -> Result<Self, String> {
        use arrow_array::cast::AsArray;
        Ok(match a.data_type() {
            DataType::Utf8 => StringColumn::Utf8(a.as_string::<i32>()),
            DataType::LargeUtf8 => StringColumn::Large(a.as_string::<i64>()),
            DataType::Utf8View => StringColumn::View(a.as_string_view()),
            DataType::Binary => StringColumn::Binary(a.as_binary::<i32>()),
            DataType::LargeBinary => StringColumn::LargeBinary(a.as_binary::<i64>()),
            other => return Err(format!("a column of type {other} is not text")),
        })
    }

    /// Row `i`'s bytes (empty for a null).
    pub fn value(&self, i: usize) -> &'a [u8] {
        match self {
            StringColumn::Utf8(a) if a.is_valid(i) => a.value(i).as_bytes(),
            StringColumn::Large(a) if a.is_valid(i) => a.value(i).as_bytes(),
            StringColumn::View(a) if a.is_valid(i) => a.value(i).as_bytes(),
            StringColumn::Binary(a) if a.is_valid(i) => a.value(i),
            StringColumn::LargeBinary(a) if a.is_valid(i) => a.value(i),
            _ => b"",
        }
    }
}

/// Parses a lines chunk: one key per line, bytes as they are.
fn parse_lines_chunk(normalizer: &Normalizer, data: &[u8]) -> ChunkItems {
    if data.is_empty() {
        return Vec::new();
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let mut hasher = KeyHasher::new(normalizer);
    body.split(|&c| c == b'\n')
        .map(|line| hasher.one(line.strip_suffix(b"\r").unwrap_or(line)))
        .collect()
}

/// The first problem of a CSV chunk Arrow refused, found with the `csv` crate: a record with
/// the wrong number of fields, or a field that is not UTF-8.
fn diagnose_csv(path: &Path, data: &[u8], first_line: u64, fields: usize) -> CliError {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(data);
    let mut record = csv::ByteRecord::new();
    loop {
        match rdr.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return csv_error(path, data, first_line, &e),
        }
        let line = || {
            record
                .position()
                .map_or(first_line, |p| line_of(data, p.byte(), first_line))
        };
        if record.len() != fields {
            return CliError::Malformed {
                path: path.to_path_buf(),
                line: line(),
                reason: format!("{} fields where the header has {fields}", record.len()),
            };
        }
        if let Some(i) = record.iter().position(|f| std::str::from_utf8(f).is_err()) {
            return CliError::Malformed {
                path: path.to_path_buf(),
                line: line(),
                reason: format!(
                    "field {} is not UTF-8 text; convert the file to UTF-8 (e.g. iconv -f \
                     latin1 -t utf-8)",
                    i + 1
                ),
            };
        }
    }
    CliError::Malformed {
        path: path.to_path_buf(),
        line: first_line,
        reason: "the CSV decoder refused this part of the file".to_owned(),
    }
}

/// The 1-based line of the record starting at byte `pos` of `data` (whose first byte is on
/// `first_line`): blank lines the `csv` crate skips before the record are counted.
fn line_of(data: &[u8], pos: u64, first_line: u64) -> u64 {
    let start = usize::try_from(pos).unwrap_or(usize::MAX).min(data.len());
    let blank = data[start..]
        .iter()
        .take_while(|&&c| c == b'\r' || c == b'\n')
        .count();
    let newlines = memchr::memchr_iter(b'\n', &data[..start + blank]).count();
    first_line + newlines as u64
}

/// The user-facing error of a `csv` crate error in `data` (whose first byte is on
/// `first_line`).
fn csv_error(path: &Path, data: &[u8], first_line: u64, e: &csv::Error) -> CliError {
    let line = e
        .position()
        .map_or(first_line, |pos| line_of(data, pos.byte(), first_line));
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

/// Opens a Parquet file for Arrow reading.
pub fn parquet_builder(
    path: &Path,
) -> CliResult<parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder<std::fs::File>> {
    let file = std::fs::File::open(path).map_err(|source| file_error(path, source))?;
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| parquet_error(path, &e))
}

/// The user-facing error of a Parquet read error.
pub fn parquet_error(path: &Path, e: &dyn std::fmt::Display) -> CliError {
    CliError::Usage(format!(
        "{}: not a readable Parquet file: {e}",
        path.display()
    ))
}

fn read_parquet(
    spec: &InputSpec,
    sink: &mut dyn RowSink,
    progress: &(dyn Fn(u64) + Sync),
) -> CliResult<(RowSource, u64)> {
    let path = spec.path;
    let builder = parquet_builder(path)?;
    let schema = builder.schema().clone();
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let key_columns = if spec.columns.is_empty() {
        if names.len() == 1 {
            vec![0]
        } else {
            return Err(CliError::Usage(format!(
                "{}: name the key column with --column; the columns are: {}",
                path.display(),
                names.join(", ")
            )));
        }
    } else {
        find_columns(path, &names, spec.columns)?
    };
    for &k in &key_columns {
        if schema.field(k).data_type().is_nested() {
            return Err(CliError::Usage(format!(
                "{}: column `{}` is of type {}, not a value a key can be made of",
                path.display(),
                names[k],
                schema.field(k).data_type()
            )));
        }
    }
    let rows_total = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), key_columns.clone());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(64 << 10)
        .build()
        .map_err(|e| parquet_error(path, &e))?;
    // The reader returns the projected columns in file order; the key joins them in the
    // order given.
    let mut in_file_order = key_columns.clone();
    in_file_order.sort_unstable();
    let order: Vec<usize> = key_columns
        .iter()
        .map(|k| in_file_order.iter().position(|x| x == k).unwrap_or(0))
        .collect();
    sink.expect(usize::try_from(rows_total).unwrap_or(0));
    let mut rows = 0u64;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    for batch in reader {
        let batch = batch.map_err(|e| parquet_error(path, &e))?;
        let columns: Vec<ArrayRef> = order
            .iter()
            .map(|&i| as_text(batch.column(i)))
            .collect::<Result<_, _>>()
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        let items = hash_parallel(spec.normalizer, &columns)
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        rows += items.len() as u64;
        sink.take(&items)?;
        if let Some(done) = bytes.saturating_mul(rows).checked_div(rows_total) {
            progress(done);
        }
    }
    Ok((
        RowSource {
            path: path.to_path_buf(),
            format: Format::Parquet,
            columns: names,
            key_columns,
            chunks: Vec::new(),
            rows,
        },
        bytes,
    ))
}

/// A column as text: string and binary columns as they are, others cast to their string form.
pub fn as_text(a: &ArrayRef) -> Result<ArrayRef, String> {
    match a.data_type() {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary => Ok(a.clone()),
        other => arrow_cast::cast(a, &DataType::Utf8)
            .map_err(|e| format!("cannot use a column of type {other} as a key: {e}")),
    }
}

/// Hashes the rows of equal-length text columns in parallel pieces, in row order.
pub fn hash_parallel(normalizer: &Normalizer, columns: &[ArrayRef]) -> Result<ChunkItems, String> {
    let rows = columns.first().map_or(0, |c| c.len());
    let piece = rows
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(1024);
    let pieces: Vec<Result<ChunkItems, String>> = (0..rows.div_ceil(piece))
        .into_par_iter()
        .map(|p| {
            let start = p * piece;
            let len = piece.min(rows - start);
            let slices: Vec<ArrayRef> = columns.iter().map(|c| c.slice(start, len)).collect();
            let mut out = Vec::with_capacity(len);
            hash_batch(&mut KeyHasher::new(normalizer), &slices, &mut out)?;
            Ok(out)
        })
        .collect();
    let mut out = Vec::with_capacity(rows);
    for p in pieces {
        out.extend(p?);
    }
    Ok(out)
}

/// Reads the key columns of a record batch as text in the key's order (for callers holding
/// Arrow data, such as the Python package).
pub fn key_columns_of(batch: &RecordBatch, columns: &[String]) -> Result<Vec<ArrayRef>, String> {
    let schema = batch.schema();
    columns
        .iter()
        .map(|name| {
            let (i, _) = schema
                .column_with_name(name.trim())
                .ok_or_else(|| format!("no column `{name}`"))?;
            as_text(batch.column(i))
        })
        .collect()
}

/// Bytes of a text file sampled by [`estimate_rows`].
const ESTIMATE_SAMPLE: usize = 1 << 20;

/// An estimate of the rows of an input, without reading it whole: a Parquet file's own count;
/// for text, the file's length over the mean length of the lines in its first MiB (exact for
/// a file that short). Rounded up; at least 1.
pub fn estimate_rows(path: &Path, format: Format) -> CliResult<u64> {
    if format == Format::Parquet {
        let rows = parquet_builder(path)?.metadata().file_metadata().num_rows();
        return Ok(rows.max(1) as u64);
    }
    let mut file = std::fs::File::open(path).map_err(|source| file_error(path, source))?;
    let len = file
        .metadata()
        .map_err(|source| file_error(path, source))?
        .len();
    let mut sample = vec![0u8; ESTIMATE_SAMPLE.min(len as usize)];
    std::io::Read::read_exact(&mut file, &mut sample).map_err(|source| file_error(path, source))?;
    let lines = sample.iter().filter(|&&b| b == b'\n').count() as u64;
    if sample.len() as u64 == len {
        return Ok((lines + u64::from(sample.last().is_some_and(|&b| b != b'\n'))).max(1));
    }
    Ok((len * lines.max(1)).div_ceil(sample.len() as u64).max(1))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::keyed::NO_KEY;
    use crate::normalize::Normalize;
    use blindjoin_core::item::items_from_records;
    use std::io::Write;

    fn file(content: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        f.flush().unwrap();
        f
    }

    fn norm(kind: Normalize) -> Normalizer {
        Normalizer {
            kind,
            country_code: None,
        }
    }

    fn read(
        content: &[u8],
        columns: &[&str],
        kind: Normalize,
    ) -> (tempfile::NamedTempFile, CliResult<Input>) {
        let f = file(content);
        let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let normalizer = norm(kind);
        let t = read_input(
            &InputSpec {
                path: f.path(),
                format: None,
                columns: &columns,
                normalizer: &normalizer,
            },
            &|_| {},
        );
        (f, t)
    }

    fn items(keys: &[&[u8]]) -> Vec<Item> {
        items_from_records(keys)
    }

    #[test]
    fn csv_quotes_embedded_commas_and_newlines() {
        let content = b"id,name,email\n\
            1,\"Kowalski, Anna\",anna@x.org\n\
            2,\"Line\nbreak \"\"quoted\"\"\",\"bob@y.org\"\n\
            3,Plain,\" Anna@X.org\"\n";
        let (_f, t) = read(content, &["email"], Normalize::Email);
        let t = t.unwrap();
        assert_eq!(t.source.columns, vec!["id", "name", "email"]);
        assert_eq!(t.source.key_columns, vec![2]);
        assert_eq!(t.keyed.items, items(&[b"anna@x.org", b"bob@y.org"]));
        assert_eq!(t.keyed.row_item, vec![0, 1, 0]);
        assert_eq!((t.keyed.empty_keys, t.keyed.duplicate_rows), (0, 1));
        assert_eq!(t.source.rows, 3);
        assert_eq!(t.bytes, content.len() as u64);
    }

    #[test]
    fn csv_bom_and_padded_header() {
        let (_f, t) = read(
            b"\xEF\xBB\xBF email , id\nA@x.org,1\r\nb@x.org,2",
            &["email"],
            Normalize::Lower,
        );
        let t = t.unwrap();
        assert_eq!(t.source.columns, vec![" email ", " id"]);
        assert_eq!(t.keyed.items, items(&[b"a@x.org", b"b@x.org"]));
        // A quoted first header after the BOM.
        let (_f, t) = read(b"\xEF\xBB\xBF\"email\"\nx\n", &["email"], Normalize::None);
        assert_eq!(t.unwrap().keyed.items, items(&[b"x"]));
    }

    #[test]
    fn csv_missing_column() {
        let (f, t) = read(
            b"\xEF\xBB\xBFid, name ,phone\n1,a,2\n",
            &["email"],
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

    fn malformed(content: &[u8]) -> (u64, String) {
        let (_f, t) = read(content, &["email"], Normalize::None);
        match t {
            Err(CliError::Malformed { line, reason, .. }) => (line, reason),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn csv_malformed_line_numbers() {
        assert_eq!(
            malformed(b"id,email\n1,a@x\n\"2\",\"multi\nline\"\n3\n4,d@x\n"),
            (5, "1 fields where the header has 2".to_owned())
        );
        assert_eq!(malformed(b"id,email\n1,a\n2,b\n3\n").0, 4);
        let (_f, t) = read(b"id,email\n1,a\n2,b\n3\n", &["email"], Normalize::None);
        assert!(t.unwrap_err().to_string().contains(": line 4: "));
        assert_eq!(
            malformed(b"id,email\n1,a,extra\n"),
            (2, "3 fields where the header has 2".to_owned())
        );
        // Broken quoting.
        assert_eq!(
            malformed(b"id,email\n1,a\n2,\"b\nc\n3,d\n"),
            (3, "quoted field is never closed".to_owned())
        );
        assert_eq!(
            malformed(b"id,email\n1,a\n2,\"b\"c\n"),
            (
                3,
                "text after the closing quote of a quoted field".to_owned()
            )
        );
        // A quote never closed on line 3 is only noticed at line 5: the error names line 3.
        assert_eq!(
            malformed(b"id,email\n1,a\n2,\"b\n3,c\n4,\"d\"e\n"),
            (
                3,
                "a quoted field opens here and runs to line 5, where text follows its closing \
                 quote (is a quote on this line never closed?)"
                    .to_owned()
            )
        );
        // Blank lines (skipped) before the bad record, CRLF line endings.
        assert_eq!(malformed(b"id,email\r\n1,a\r\n\r\n\r\n3\r\n").0, 5);
        assert_eq!(malformed(b"\n\nid,email\n\n1\n").0, 5);
        // Not UTF-8.
        assert_eq!(
            malformed(b"id,email\n1,a\n2,\xff\n"),
            (
                3,
                "field 2 is not UTF-8 text; convert the file to UTF-8 (e.g. iconv -f latin1 -t \
                 utf-8)"
                    .to_owned()
            )
        );
        // A quote inside an unquoted field is literal.
        let (_f, t) = read(b"id,email\n1,5\" pipe\n", &["email"], Normalize::None);
        assert_eq!(t.unwrap().keyed.items, items(&[b"5\" pipe"]));
    }

    #[test]
    fn errors_in_later_chunks_name_their_line() {
        // Many chunks: the bad record's line counts every line before it, quoted newlines too.
        let mut content = b"id,email\n".to_vec();
        let mut line = 1u64;
        let mut i = 0u64;
        while content.len() < 3 * CHUNK_BYTES {
            content.extend_from_slice(format!("{i},\"a\n{i}@x\"\n").as_bytes());
            line += 2;
            i += 1;
        }
        content.extend_from_slice(b"bad\n");
        line += 1;
        assert_eq!(
            malformed(&content),
            (line, "1 fields where the header has 2".to_owned())
        );
        content.truncate(content.len() - 4);
        content.extend_from_slice(b"9,\"x\"y\n");
        assert_eq!(
            malformed(&content),
            (
                line,
                "text after the closing quote of a quoted field".to_owned()
            )
        );
        // Read whole, every row keyed.
        content.truncate(content.len() - 7);
        let (_f, t) = read(&content, &["email"], Normalize::None);
        let t = t.unwrap();
        assert_eq!(t.keyed.rows() as u64, i);
        assert_eq!(t.keyed.items.len() as u64, i);
        assert!(t.source.chunks.len() >= 3, "{}", t.source.chunks.len());
        let last = t.source.chunks.last().unwrap();
        assert_eq!(last.first_row + last.rows, i);
        let sample = format!("a\n{}@x", i - 1);
        assert_eq!(
            t.keyed.items[i as usize - 1],
            items(&[sample.as_bytes()])[0]
        );
    }

    #[test]
    fn csv_empty_files() {
        // No header at all: an error naming the file and the column, whatever the bytes.
        for content in [&b""[..], b"\xEF\xBB\xBF", b"\n", b"\r\n\r\n"] {
            let (f, t) = read(content, &["email"], Normalize::None);
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
        // A header and no rows: an input of no rows.
        for content in [&b"id,email\n"[..], b"id,email"] {
            let (_f, t) = read(content, &["email"], Normalize::None);
            let t = t.unwrap();
            assert_eq!(t.source.columns.len(), 2);
            assert_eq!(t.keyed.rows(), 0);
        }
    }

    #[test]
    fn any_reader_reads_as_the_file_does() {
        let content = b"\xEF\xBB\xBFid,email\r\n1,A@x.org\r\n2,\"b@x.org\"\r\n3,a@X.org\r\n";
        let normalizer = norm(Normalize::Email);
        let f = file(content);
        let columns = ["email".to_owned()];
        let spec = InputSpec {
            path: f.path(),
            format: None,
            columns: &columns,
            normalizer: &normalizer,
        };
        let from_file = read_input(&spec, &|_| {}).unwrap();
        let from_bytes = read_input_from(&spec, &content[..]).unwrap();
        assert_eq!(from_file.keyed.items, items(&[b"a@x.org", b"b@x.org"]));
        assert_eq!(from_bytes.keyed, from_file.keyed);
        assert_eq!(from_bytes.source.chunks, from_file.source.chunks);
    }

    #[test]
    fn csv_duplicates_and_empty_keys() {
        let content = b"k,email\n1,a@x\n2,\n3, A@X \n4,   \n5,b@x\n6,a@x\n7,\"\"\n";
        let (_f, t) = read(content, &["email"], Normalize::Email);
        let t = t.unwrap().keyed;
        assert_eq!(t.items, items(&[b"a@x", b"b@x"]));
        assert_eq!(t.row_item, vec![0, NO_KEY, 0, NO_KEY, 1, 0, NO_KEY]);
        assert_eq!(t.empty_keys, 3);
        assert_eq!(t.duplicate_rows, 2);
    }

    #[test]
    fn composite_keys() {
        let content =
            b"first,last,dob\nAnna,Nowak,1990\nanna ,NOWAK,1990\nAnn,aNowak,1990\nBo,,1991\n";
        let (_f, t) = read(content, &["last", "first", " dob"], Normalize::Lower);
        let t = t.unwrap();
        assert_eq!(t.source.key_columns, vec![1, 0, 2]);
        let key = |fields: &[&[u8]]| {
            let mut k = Vec::new();
            for f in fields {
                k.extend_from_slice(&(f.len() as u64).to_le_bytes());
                k.extend_from_slice(f);
            }
            k
        };
        assert_eq!(
            t.keyed.items,
            items_from_records(&[
                key(&[b"nowak", b"anna", b"1990"]),
                key(&[b"anowak", b"ann", b"1990"]),
            ])
        );
        assert_eq!(t.keyed.row_item, vec![0, 0, 1, NO_KEY]);
    }

    #[test]
    fn lines_mode_crlf_empty_lines_and_duplicates() {
        let (_f, t) = read(b"a\r\nb\r\n\r\na\r\n\nc", &[], Normalize::None);
        let t = t.unwrap();
        assert!(t.source.columns.is_empty());
        assert_eq!(t.source.format, Format::Lines);
        assert_eq!(t.keyed.items, items(&[b"a", b"b", b"c"]));
        assert_eq!(t.keyed.row_item, vec![0, 1, NO_KEY, 0, NO_KEY, 2]);
        assert_eq!((t.keyed.empty_keys, t.keyed.duplicate_rows), (2, 1));

        // The empty remainder after the final newline is not a record; commas and quotes are data.
        let (_f, t) = read(b"\xEF\xBB\xBFx,\"y\"\n\n", &[], Normalize::None);
        let t = t.unwrap();
        assert_eq!(t.keyed.rows(), 2);
        assert_eq!(t.keyed.items, items(&[b"x,\"y\""]));
        assert_eq!(t.keyed.empty_keys, 1);

        for empty in [&b""[..], b"\xEF\xBB\xBF"] {
            let (_f, t) = read(empty, &[], Normalize::None);
            assert_eq!(t.unwrap().keyed.rows(), 0);
        }
        let (_f, t) = read(b"\n", &[], Normalize::None);
        assert_eq!(t.unwrap().keyed.empty_keys, 1);
        // Bytes that are not UTF-8 are keys as they are.
        let (_f, t) = read(b"\xff\xfe\n", &[], Normalize::None);
        assert_eq!(t.unwrap().keyed.items, items(&[b"\xff\xfe"]));
    }

    #[test]
    fn long_lines_span_chunks() {
        let long = vec![b'x'; CHUNK_BYTES * 2 + 17];
        let mut content = b"short\n".to_vec();
        content.extend_from_slice(&long);
        content.extend_from_slice(b"\nend\n");
        let (_f, t) = read(&content, &[], Normalize::None);
        let t = t.unwrap();
        assert_eq!(t.keyed.items, items(&[b"short", &long, b"end"]));
    }

    #[test]
    fn missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.csv");
        let normalizer = norm(Normalize::None);
        let e = read_input(
            &InputSpec {
                path: &path,
                format: None,
                columns: &[],
                normalizer: &normalizer,
            },
            &|_| {},
        )
        .unwrap_err();
        assert!(
            matches!(&e, CliError::File { path: p, .. } if *p == path),
            "{e:?}"
        );
    }

    #[test]
    fn formats_by_extension() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            Format::of_input(None, &p("a.parquet"), false),
            Format::Parquet
        );
        assert_eq!(Format::of_input(None, &p("a.PQ"), true), Format::Parquet);
        assert_eq!(Format::of_input(None, &p("a.csv"), true), Format::Csv);
        assert_eq!(Format::of_input(None, &p("a.txt"), false), Format::Lines);
        assert_eq!(Format::of_input(None, &p("a.csv"), false), Format::Lines);
        assert_eq!(
            Format::of_input(Some(Format::Csv), &p("a.parquet"), true),
            Format::Csv
        );
    }

    #[test]
    fn the_row_estimate_is_exact_for_a_short_file_and_close_for_a_long_one() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short.csv");
        std::fs::write(&short, "id\n1\n2\n3").unwrap();
        assert_eq!(estimate_rows(&short, Format::Csv).unwrap(), 4);
        let long = dir.path().join("long.txt");
        let text: String = (0..400_000).map(|i| format!("key{i:07}\n")).collect();
        std::fs::write(&long, text).unwrap();
        let est = estimate_rows(&long, Format::Lines).unwrap();
        assert!((399_000..=401_000).contains(&est), "{est}");
    }
}
