//! Writing output files atomically: completely or not at all.
//!
//! Output goes to a temporary file in the target's directory, which is flushed, fsync'd and then
//! renamed over the target. On any error the temporary file is removed and the target (or an
//! older file at its path) is left untouched; a crash can at worst leave a stray hidden
//! `.<name>.<random>.tmp` file next to the target. The file is created with the temporary file's
//! permissions: readable and writable by the owner only on Unix, as fits files of personal data.

//! Writing output files atomically: completely or not at all, and the matched rows of an input
//! read back by index.
//!
//! Output goes to a temporary file in the target's directory, which is flushed, fsync'd and then
//! renamed over the target. On any error the temporary file is removed and the target (or an
//! older file at its path) is left untouched; a crash can at worst leave a stray hidden
//! `.<name>.<random>.tmp` file next to the target. The file is created with the temporary file's
//! permissions: readable and writable by the owner only on Unix, as fits files of personal data.
//!
//! The matched rows are not kept in memory while the protocol runs: [`prepare_output`] reads
//! them back from the input by index. A CSV or lines input is read again only in the chunks
//! that hold matched rows ([`crate::input::Chunk`]); each chunk is decoded with Arrow in
//! parallel and its matched rows taken by index (`arrow-select`'s `take`). A Parquet input is
//! read again in record batches. The rows are written as CSV (`arrow-csv`: a header, standard
//! quoting, `\n` line endings), Parquet (snappy-compressed, every column as it was read: strings
//! for CSV inputs, the file's own types for Parquet inputs) or lines (the bytes of a lines input
//! as they were, one row per line).

use crate::error::{CliError, CliResult};
use crate::input::{Chunk, Format, RowSource, parquet_builder, parquet_error};
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which columns of a matched row are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputColumns {
    /// Every column of the input.
    #[default]
    All,
    /// Only the key column(s), as written in the input (not normalised).
    Key,
    /// Only the row's index among the input's data rows (`row`, from 0), for users who must not
    /// copy rows.
    RowId,
}

/// How the matched rows are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputSpec {
    /// The format; `None` chooses by [`output_format`].
    pub format: Option<Format>,
    /// Which columns.
    pub columns: OutputColumns,
}

/// The output's format: `given`, else the output file's extension (`.csv`, `.parquet`, `.pq`),
/// else the input's (CSV for a Parquet input).
pub fn output_format(given: Option<Format>, path: &Path, input: Format) -> Format {
    given
        .or_else(|| Format::of_extension(path))
        .unwrap_or(match input {
            Format::Parquet => Format::Csv,
            f => f,
        })
}

/// Checks before a run that the output can be written in its format: lines hold one column.
pub fn check_output_spec(
    path: &Path,
    spec: &OutputSpec,
    input: Format,
    key_columns: usize,
) -> CliResult<()> {
    let format = output_format(spec.format, path, input);
    let one_column = match spec.columns {
        OutputColumns::All => input == Format::Lines,
        OutputColumns::Key => key_columns <= 1,
        OutputColumns::RowId => true,
    };
    if format == Format::Lines && !one_column {
        return Err(CliError::Usage(format!(
            "{}: a lines output holds one column; write CSV or Parquet, or choose one column with \
             --output-columns key or row-id",
            path.display()
        )));
    }
    Ok(())
}

/// Writes the given rows of `source` (indices among its data rows, ascending) to a temporary
/// file next to `path` (see the module doc): the output appears at `path` when
/// [`Prepared::persist`] is called, and never if the value is dropped. A row index out of range
/// is an error. `progress` is told the rows written so far.
pub fn prepare_output(
    path: &Path,
    source: &RowSource,
    rows: &[usize],
    spec: &OutputSpec,
    progress: &dyn Fn(u64),
) -> CliResult<Prepared> {
    let format = output_format(spec.format, path, source.format);
    check_output_spec(path, spec, source.format, source.key_columns.len())?;
    if let Some(w) = rows.windows(2).find(|w| w[0] >= w[1]) {
        return Err(CliError::Usage(format!(
            "rows to write must be ascending ({} before {})",
            w[0], w[1]
        )));
    }
    if let Some(&last) = rows.last()
        && last as u64 >= source.rows
    {
        return Err(CliError::Usage(format!(
            "{}: row {last} out of range ({} rows)",
            source.path.display(),
            source.rows
        )));
    }
    let schema = output_schema(source, spec, format)?;
    prepare_with(path, |w| {
        let mut sink = Sink::new(path, w, format, schema.clone());
        let mut written = 0u64;
        emit(source, rows, spec, format, &schema, &mut |piece| {
            // A cancelled run stops writing; the temporary file goes with the error.
            crate::signals::check()?;
            written += match piece {
                Piece::Batch(batch) => {
                    sink.write(batch)?;
                    batch.num_rows()
                }
                Piece::Csv { bytes, rows } => {
                    sink.write_csv(bytes)?;
                    rows
                }
            } as u64;
            progress(written);
            Ok(())
        })?;
        sink.finish()
    })
}

/// The schema of the written rows.
fn output_schema(source: &RowSource, spec: &OutputSpec, format: Format) -> CliResult<SchemaRef> {
    let string = |name: &str| Field::new(name, DataType::Utf8, true);
    Ok(match (spec.columns, source.format) {
        (OutputColumns::RowId, _) => Arc::new(Schema::new(vec![Field::new(
            "row",
            DataType::UInt64,
            false,
        )])),
        // Lines written as lines keep their bytes; in CSV or Parquet they are text.
        (_, Format::Lines) if format == Format::Lines => Arc::new(Schema::new(vec![Field::new(
            "line",
            DataType::Binary,
            false,
        )])),
        (_, Format::Lines) => Arc::new(Schema::new(vec![string("line")])),
        (OutputColumns::All, Format::Csv) => Arc::new(Schema::new(
            source.columns.iter().map(|c| string(c)).collect::<Vec<_>>(),
        )),
        (OutputColumns::Key, Format::Csv) => Arc::new(Schema::new(
            source
                .key_columns
                .iter()
                .map(|&k| string(&source.columns[k]))
                .collect::<Vec<_>>(),
        )),
        (columns, Format::Parquet) => {
            let builder = parquet_builder(&source.path)?;
            let schema = builder.schema().clone();
            match columns {
                OutputColumns::Key => {
                    let mut keys = source.key_columns.clone();
                    keys.sort_unstable();
                    Arc::new(
                        schema
                            .project(&keys)
                            .map_err(|e| parquet_error(&source.path, &e))?,
                    )
                }
                _ => schema,
            }
        }
    })
}

/// The chunks decoded in one parallel wave.
const WAVE_CHUNKS: usize = 16;

fn input_error(source: &RowSource, e: io::Error) -> CliError {
    CliError::File {
        path: source.path.clone(),
        source: e,
    }
}

fn changed(source: &RowSource) -> CliError {
    CliError::Usage(format!(
        "{}: the file changed while the protocol ran; its rows cannot be read back",
        source.path.display()
    ))
}

fn arrow_failure(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("cannot assemble the output rows: {e}"))
}

/// Produces the output batches in row order.
fn emit(
    source: &RowSource,
    rows: &[usize],
    spec: &OutputSpec,
    format: Format,
    schema: &SchemaRef,
    write: &mut dyn FnMut(Piece) -> CliResult<()>,
) -> CliResult<()> {
    if spec.columns == OutputColumns::RowId {
        for piece in rows.chunks(1 << 16) {
            let ids = UInt64Array::from_iter_values(piece.iter().map(|&r| r as u64));
            let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids) as ArrayRef])
                .map_err(arrow_failure)?;
            write(Piece::Batch(&batch))?;
        }
        return Ok(());
    }
    if source.format == Format::Parquet {
        return emit_parquet(source, rows, spec, schema, write);
    }
    let file = File::open(&source.path).map_err(|e| input_error(source, e))?;
    // Matched rows grouped by chunk: (chunk, rows within it).
    let mut groups: Vec<(Chunk, Vec<u32>)> = Vec::new();
    let mut c = 0usize;
    for &r in rows {
        let r = r as u64;
        while c < source.chunks.len() && source.chunks[c].first_row + source.chunks[c].rows <= r {
            c += 1;
        }
        let Some(chunk) = source.chunks.get(c) else {
            return Err(changed(source));
        };
        let within = (r - chunk.first_row) as u32;
        match groups.last_mut() {
            Some((g, v)) if g.first_row == chunk.first_row => v.push(within),
            _ => groups.push((*chunk, vec![within])),
        }
    }
    for wave in groups.chunks(WAVE_CHUNKS) {
        // Decoded, taken and (for a CSV output) encoded in parallel; written in order.
        let pieces: Vec<CliResult<(RecordBatch, Option<Vec<u8>>)>> = wave
            .par_iter()
            .map(|(chunk, within)| {
                let batch = chunk_batch(source, spec, format, schema, &file, chunk, within)?;
                let encoded = match format {
                    Format::Csv => Some(encode_csv(&batch)?),
                    _ => None,
                };
                Ok((batch, encoded))
            })
            .collect();
        for p in pieces {
            match p? {
                (batch, Some(bytes)) => write(Piece::Csv {
                    bytes: &bytes,
                    rows: batch.num_rows(),
                })?,
                (batch, None) => write(Piece::Batch(&batch))?,
            }
        }
    }
    Ok(())
}

/// The matched rows of one chunk of a CSV or lines input.
fn chunk_batch(
    source: &RowSource,
    spec: &OutputSpec,
    format: Format,
    schema: &SchemaRef,
    file: &File,
    chunk: &Chunk,
    within: &[u32],
) -> CliResult<RecordBatch> {
    let mut data = vec![0u8; usize::try_from(chunk.len).map_err(|_| changed(source))?];
    file.read_exact_at(&mut data, chunk.offset)
        .map_err(|e| input_error(source, e))?;
    if source.format == Format::Lines {
        let body = data.strip_suffix(b"\n").unwrap_or(&data);
        let lines: Vec<&[u8]> = body
            .split(|&c| c == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .collect();
        if lines.len() as u64 != chunk.rows {
            return Err(changed(source));
        }
        let picked = within.iter().map(|&i| lines[i as usize]);
        let column: ArrayRef = if format == Format::Lines {
            Arc::new(arrow_array::BinaryArray::from_iter_values(picked))
        } else {
            Arc::new(StringArray::from_iter_values(
                picked.map(|l| String::from_utf8_lossy(l).into_owned()),
            ))
        };
        return RecordBatch::try_new(schema.clone(), vec![column]).map_err(arrow_failure);
    }
    let projection: Vec<usize> = match spec.columns {
        OutputColumns::Key => source.key_columns.clone(),
        _ => (0..source.columns.len()).collect(),
    };
    let decode_schema = Arc::new(Schema::new(
        (0..source.columns.len())
            .map(|i| Field::new(format!("c{i}"), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    let mut decoder = arrow_csv::ReaderBuilder::new(decode_schema)
        .with_header(false)
        .with_projection(projection)
        .with_batch_size(
            usize::try_from(chunk.rows)
                .unwrap_or(usize::MAX)
                .clamp(1, 1 << 16),
        )
        .build_decoder();
    let mut rest = &data[..];
    let mut batches = Vec::new();
    loop {
        loop {
            let n = decoder.decode(rest).map_err(|_| changed(source))?;
            rest = &rest[n..];
            if n == 0 || decoder.capacity() == 0 {
                break;
            }
        }
        match decoder.flush().map_err(|_| changed(source))? {
            Some(b) => batches.push(b),
            None => break,
        }
    }
    let all = match batches.len() {
        1 => batches.pop().ok_or_else(|| changed(source))?,
        _ => {
            let s = batches
                .first()
                .map(RecordBatch::schema)
                .ok_or_else(|| changed(source))?;
            arrow_select::concat::concat_batches(&s, &batches).map_err(arrow_failure)?
        }
    };
    if all.num_rows() as u64 != chunk.rows {
        return Err(changed(source));
    }
    let idx = UInt32Array::from(within.to_vec());
    let columns = all
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrow_failure)?;
    RecordBatch::try_new(schema.clone(), columns).map_err(arrow_failure)
}

/// The matched rows of a Parquet input, batch by batch.
fn emit_parquet(
    source: &RowSource,
    rows: &[usize],
    spec: &OutputSpec,
    schema: &SchemaRef,
    write: &mut dyn FnMut(Piece) -> CliResult<()>,
) -> CliResult<()> {
    let builder = parquet_builder(&source.path)?;
    let builder = match spec.columns {
        OutputColumns::Key => {
            let mask = parquet::arrow::ProjectionMask::roots(
                builder.parquet_schema(),
                source.key_columns.clone(),
            );
            builder.with_projection(mask)
        }
        _ => builder,
    };
    let reader = builder
        .with_batch_size(64 << 10)
        .build()
        .map_err(|e| parquet_error(&source.path, &e))?;
    let mut start = 0u64;
    let mut next = 0usize; // the first entry of `rows` not yet written
    for batch in reader {
        if next == rows.len() {
            break;
        }
        let batch = batch.map_err(|e| parquet_error(&source.path, &e))?;
        let end = start + batch.num_rows() as u64;
        let take_end = next + rows[next..].partition_point(|&r| (r as u64) < end);
        if take_end > next {
            let idx = UInt32Array::from_iter_values(
                rows[next..take_end]
                    .iter()
                    .map(|&r| (r as u64 - start) as u32),
            );
            let columns = batch
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
                .collect::<Result<Vec<_>, _>>()
                .map_err(arrow_failure)?;
            let batch = RecordBatch::try_new(schema.clone(), columns).map_err(arrow_failure)?;
            write(Piece::Batch(&batch))?;
        }
        next = take_end;
        start = end;
    }
    if next < rows.len() {
        return Err(changed(source));
    }
    Ok(())
}

/// Rows on their way to the output: a record batch, or rows already encoded as CSV lines.
enum Piece<'a> {
    Batch(&'a RecordBatch),
    Csv { bytes: &'a [u8], rows: usize },
}

/// A batch's rows as CSV lines (no header).
fn encode_csv(batch: &RecordBatch) -> CliResult<Vec<u8>> {
    let mut w = arrow_csv::WriterBuilder::new()
        .with_header(false)
        .build(Vec::with_capacity(batch.get_array_memory_size()));
    w.write(batch).map_err(arrow_failure)?;
    Ok(w.into_inner())
}

/// Where output batches go; the writer is made on the first batch.
struct Sink<'p, W: Write + Send> {
    path: &'p Path,
    format: Format,
    schema: SchemaRef,
    out: Option<W>,
    csv_started: bool,
    parquet: Option<parquet::arrow::ArrowWriter<W>>,
}

impl<'p, W: Write + Send> Sink<'p, W> {
    fn new(path: &'p Path, out: W, format: Format, schema: SchemaRef) -> Self {
        Sink {
            path,
            format,
            schema,
            out: Some(out),
            csv_started: false,
            parquet: None,
        }
    }

    fn fail(&self, e: impl std::fmt::Display) -> CliError {
        CliError::File {
            path: self.path.to_path_buf(),
            source: io::Error::other(e.to_string()),
        }
    }

    fn write(&mut self, batch: &RecordBatch) -> CliResult<()> {
        let path = self.path;
        let fail = |e: &dyn std::fmt::Display| CliError::File {
            path: path.to_path_buf(),
            source: io::Error::other(e.to_string()),
        };
        match self.format {
            Format::Csv => {
                self.csv_header()?;
                if let Some(out) = self.out.as_mut() {
                    let mut w = arrow_csv::WriterBuilder::new()
                        .with_header(false)
                        .build(out);
                    w.write(batch).map_err(|e| fail(&e))?;
                }
            }
            Format::Parquet => {
                if self.parquet.is_none()
                    && let Some(out) = self.out.take()
                {
                    let props = parquet::file::properties::WriterProperties::builder()
                        .set_compression(parquet::basic::Compression::SNAPPY)
                        .build();
                    self.parquet = Some(
                        parquet::arrow::ArrowWriter::try_new(out, self.schema.clone(), Some(props))
                            .map_err(|e| fail(&e))?,
                    );
                }
                if let Some(w) = self.parquet.as_mut() {
                    w.write(batch).map_err(|e| fail(&e))?;
                }
            }
            Format::Lines => {
                let Some(out) = self.out.as_mut() else {
                    return Ok(());
                };
                let column = batch.column(0);
                let io = |e: io::Error| CliError::File {
                    path: path.to_path_buf(),
                    source: e,
                };
                if let Some(ids) = column.as_any().downcast_ref::<UInt64Array>() {
                    for id in ids.values() {
                        writeln!(out, "{id}").map_err(io)?;
                    }
                } else {
                    let text =
                        crate::input::StringColumn::of(column.as_ref()).map_err(arrow_failure)?;
                    for i in 0..column.len() {
                        out.write_all(text.value(i)).map_err(io)?;
                        out.write_all(b"\n").map_err(io)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes the CSV header before the first rows.
    fn csv_header(&mut self) -> CliResult<()> {
        if self.csv_started {
            return Ok(());
        }
        self.csv_started = true;
        let empty = RecordBatch::new_empty(self.schema.clone());
        let path = self.path;
        if let Some(out) = self.out.as_mut() {
            let mut w = arrow_csv::WriterBuilder::new().with_header(true).build(out);
            w.write(&empty).map_err(|e| CliError::File {
                path: path.to_path_buf(),
                source: io::Error::other(e.to_string()),
            })?;
        }
        Ok(())
    }

    /// Writes rows already encoded as CSV lines.
    fn write_csv(&mut self, bytes: &[u8]) -> CliResult<()> {
        self.csv_header()?;
        if let Some(out) = self.out.as_mut() {
            out.write_all(bytes).map_err(|e| CliError::File {
                path: self.path.to_path_buf(),
                source: e,
            })?;
        }
        Ok(())
    }

    fn finish(mut self) -> CliResult<()> {
        if self.format == Format::Csv {
            // No rows: the header only.
            self.csv_header()?;
        } else if self.format == Format::Parquet && self.out.is_some() {
            // No rows: the schema only.
            let empty = RecordBatch::new_empty(self.schema.clone());
            self.write(&empty)?;
        }
        if let Some(w) = self.parquet.take() {
            w.close().map_err(|e| self.fail(e))?;
        }
        Ok(())
    }
}

/// Writes arbitrary bytes to `path` atomically the same way as [`prepare_output`] and [`Prepared::persist`] (used for JSON
/// reports).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> CliResult<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes `path` atomically with what `write` writes to the (buffered) temporary file.
pub(crate) fn write_atomic_with<F>(path: &Path, write: F) -> CliResult<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    prepare_with(path, |w| {
        write(w).map_err(|source| CliError::File {
            path: path.to_path_buf(),
            source,
        })
    })?
    .persist()
}

/// An output written completely to a temporary file next to its target, not yet in place.
#[derive(Debug)]
pub struct Prepared {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Prepared {
    /// Where the output will be.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file into place (atomically; the directory entry is then synced).
    pub fn persist(self) -> CliResult<()> {
        let path = self.path;
        // On failure the returned temporary file is dropped, which removes it.
        self.tmp.persist(&path).map_err(|e| CliError::File {
            path: path.clone(),
            source: e.error,
        })?;
        sync_dir(dir_of(&path));
        Ok(())
    }
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn temp_next_to(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(dir_of(path))
}

fn prepare_with<F>(path: &Path, write: F) -> CliResult<Prepared>
where
    F: FnOnce(&mut BufWriter<&mut File>) -> CliResult<()>,
{
    let file_error = |source| CliError::File {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = temp_next_to(path).map_err(file_error)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut w)?;
        w.flush().map_err(file_error)?;
    }
    tmp.as_file().sync_all().map_err(file_error)?;
    Ok(Prepared {
        tmp,
        path: path.to_path_buf(),
    })
}

/// Whether `a` and `b` are the same file, however they are spelled: if both exist, the same
/// device and inode (a symbolic or hard link to a file is that file); otherwise the same name
/// in the same directory, each directory canonicalised (`out/out.csv`, `./out/out.csv` and
/// `out/sub/../out.csv` are one file before it exists).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The canonical path of `path` if it exists, else its directory's canonical path joined with
/// its name (`None` if neither resolves).
fn resolved(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let dir = std::fs::canonicalize(dir_of(path)).ok()?;
    Some(dir.join(path.file_name()?))
}

/// Checks, before anything runs, that an output can be written at `path`: it is not one of
/// `inputs` however spelled ([`same_file`]; the run would replace its own input), is not a
/// directory, and its directory exists and takes a new file. Errors name the user's path,
/// never the temporary file's.
pub fn check_output(path: &Path, inputs: &[&Path]) -> CliResult<()> {
    let fail = |reason: String| CliError::Usage(format!("{}: {reason}", path.display()));
    if path.is_dir() {
        return Err(fail("is a directory; give a file name".into()));
    }
    if inputs.iter().any(|input| same_file(path, input)) {
        return Err(fail(
            "is also an input of this run; write the output to another file".into(),
        ));
    }
    let dir = dir_of(path);
    if !dir.is_dir() {
        return Err(fail(format!(
            "the directory {} does not exist",
            dir.display()
        )));
    }
    // A probe file, removed on drop: the same create call the real output makes.
    temp_next_to(path)
        .map(drop)
        .map_err(|e| fail(format!("cannot create a file in {}: {e}", dir.display())))
}

/// Makes the rename durable. Best effort: the file is already in place, so a failure here must
/// not be reported as a failed write.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::input::{InputSpec, read_input};
    use crate::normalize::{Normalize, Normalizer};

    /// The row source of `content` written to `dir/name`.
    fn source(dir: &Path, name: &str, content: &[u8], columns: &[&str]) -> RowSource {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        read_input(
            &InputSpec {
                path: &path,
                format: None,
                columns: &columns,
                normalizer: &Normalizer {
                    kind: Normalize::None,
                    country_code: None,
                },
            },
            &|_| {},
        )
        .unwrap()
        .source
    }

    fn write_rows(path: &Path, source: &RowSource, rows: &[usize]) -> CliResult<()> {
        write_spec(path, source, rows, OutputSpec::default())
    }

    fn write_spec(
        path: &Path,
        source: &RowSource,
        rows: &[usize],
        spec: OutputSpec,
    ) -> CliResult<()> {
        prepare_output(path, source, rows, &spec, &|_| {})?.persist()
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    const CSV: &[u8] = b"\xEF\xBB\xBFid,name,email\r\n\
              1,\"Kowalski, Anna\",a@x\r\n\
              2,\"say \"\"hi\"\"\",b@x\r\n\
              3,\"two\nlines\",c@x\r\n\
              4,\"plain\",\r\n";

    #[test]
    fn csv_rows() {
        let input = tempfile::tempdir().unwrap();
        let t = source(input.path(), "in.csv", CSV, &["email"]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.csv");
        write_rows(&out, &t, &[0, 1, 2, 3]).unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            b"id,name,email\n1,\"Kowalski, Anna\",a@x\n2,\"say \"\"hi\"\"\",b@x\n3,\"two\nlines\",c@x\n4,plain,\n"
        );
        // The output reads back to the same rows.
        let back = source(
            input.path(),
            "back.csv",
            &std::fs::read(&out).unwrap(),
            &["email"],
        );
        assert_eq!(back.columns, t.columns);
        assert_eq!(back.rows, t.rows);

        // A subset, replacing the earlier file; nothing else is left in the directory.
        write_rows(&out, &t, &[1, 3]).unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            b"id,name,email\n2,\"say \"\"hi\"\"\",b@x\n4,plain,\n"
        );
        write_rows(&out, &t, &[]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"id,name,email\n");
        assert_eq!(entries(dir.path()), vec!["out.csv"]);
    }

    #[test]
    fn key_and_row_id_columns() {
        let input = tempfile::tempdir().unwrap();
        let t = source(input.path(), "in.csv", CSV, &["email", "id"]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.csv");
        let key = OutputSpec {
            format: None,
            columns: OutputColumns::Key,
        };
        write_spec(&out, &t, &[1, 3], key).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"email,id\nb@x,2\n,4\n");
        let ids = OutputSpec {
            format: None,
            columns: OutputColumns::RowId,
        };
        write_spec(&out, &t, &[1, 3], ids).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"row\n1\n3\n");
        // One column in a lines file; several are refused before anything is written.
        let lines = dir.path().join("out.txt");
        let as_lines = |columns| OutputSpec {
            format: Some(Format::Lines),
            columns,
        };
        write_spec(&lines, &t, &[0, 2], as_lines(OutputColumns::RowId)).unwrap();
        assert_eq!(std::fs::read(&lines).unwrap(), b"0\n2\n");
        let e = write_spec(&lines, &t, &[0], as_lines(OutputColumns::Key)).unwrap_err();
        assert!(
            e.to_string().contains("a lines output holds one column"),
            "{e}"
        );
        let one = source(input.path(), "one.csv", CSV, &["name"]);
        write_spec(&lines, &one, &[0, 2], as_lines(OutputColumns::Key)).unwrap();
        assert_eq!(
            std::fs::read(&lines).unwrap(),
            b"Kowalski, Anna\ntwo\nlines\n"
        );
    }

    #[test]
    fn parquet_round_trip() {
        let input = tempfile::tempdir().unwrap();
        let t = source(input.path(), "in.csv", CSV, &["email"]);
        let pq = input.path().join("rows.parquet");
        write_rows(&pq, &t, &[0, 1, 2, 3]).unwrap();
        // Read back as Parquet and written as CSV: the same text as straight from the CSV.
        let back = source(
            input.path(),
            "rows.parquet",
            &std::fs::read(&pq).unwrap(),
            &["email"],
        );
        assert_eq!(back.format, Format::Parquet);
        assert_eq!(back.columns, vec!["id", "name", "email"]);
        assert_eq!(back.rows, 4);
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        write_rows(&a, &t, &[0, 2, 3]).unwrap();
        write_rows(&b, &back, &[0, 2, 3]).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        // No rows: the schema only.
        let empty = dir.path().join("empty.parquet");
        write_rows(&empty, &back, &[]).unwrap();
        let e = source(
            dir.path(),
            "empty.parquet",
            &std::fs::read(&empty).unwrap(),
            &["email"],
        );
        assert_eq!((e.rows, e.columns.len()), (0, 3));
    }

    #[test]
    fn lines_rows() {
        let input = tempfile::tempdir().unwrap();
        let t = source(input.path(), "in.txt", b"a\r\nb,\"c\"\n\n\xffd", &[]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        write_rows(&out, &t, &[0, 1, 2, 3]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"a\nb,\"c\"\n\n\xffd\n");
        write_rows(&out, &t, &[3]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"\xffd\n");
        write_rows(&out, &t, &[]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"");
        // As CSV: a `line` column of text.
        let csv = dir.path().join("out.csv");
        write_rows(&csv, &t, &[1, 3]).unwrap();
        assert_eq!(
            std::fs::read(&csv).unwrap(),
            "line\n\"b,\"\"c\"\"\"\n\u{fffd}d\n".as_bytes()
        );
    }

    #[test]
    fn nonexistent_directory_fails_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("missing").join("out.csv");
        let t = source(dir.path(), "in.txt", b"x\n", &[]);
        let e = write_rows(&out, &t, &[0]).unwrap_err();
        assert!(
            matches!(&e, CliError::File { path, .. } if *path == out),
            "{e:?}"
        );
        let e = write_atomic(&out, b"{}").unwrap_err();
        assert!(
            matches!(&e, CliError::File { path, .. } if *path == out),
            "{e:?}"
        );
        assert!(!out.exists());
        assert_eq!(entries(dir.path()), vec!["in.txt"]);
    }

    #[test]
    fn failure_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.csv");
        std::fs::write(&out, b"old").unwrap();
        let t = source(dir.path(), "in.txt", b"x\n", &[]);
        let e = write_rows(&out, &t, &[0, 5]).unwrap_err();
        assert!(e.to_string().contains("row 5 out of range (1 rows)"), "{e}");
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        // The input changed since it was read: an error, and the old file stays.
        std::fs::write(dir.path().join("in.txt"), b"").unwrap();
        let e = write_rows(&out, &t, &[0]).unwrap_err();
        assert!(matches!(&e, CliError::File { .. }), "{e:?}");
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        assert_eq!(entries(dir.path()), vec!["in.txt", "out.csv"]);

        // Renaming over a directory fails; the temporary file is removed.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("keep"), b"k").unwrap();
        let e = write_atomic(&sub, b"new").unwrap_err();
        assert!(
            matches!(&e, CliError::File { path, .. } if *path == sub),
            "{e:?}"
        );
        assert_eq!(entries(dir.path()), vec!["in.txt", "out.csv", "sub"]);
        assert_eq!(entries(&sub), vec!["keep"]);
    }

    #[test]
    fn atomic_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("report.json");
        write_atomic(&out, b"{\"a\": 1}\n").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"{\"a\": 1}\n");
        write_atomic(&out, b"").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"");
        assert_eq!(entries(dir.path()), vec!["report.json"]);
    }

    #[test]
    fn paths_are_compared_as_files_not_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("out/sub")).unwrap();
        // Neither exists: the same name in the same directory, however reached.
        let out = d.join("out/out.csv");
        assert!(same_file(&out, &d.join("out/./out.csv")));
        assert!(same_file(&out, &d.join("out/sub/../out.csv")));
        assert!(!same_file(&out, &d.join("out/sub/out.csv")));
        assert!(!same_file(&out, &d.join("out/out.json")));
        // Existing files: the same inode, through a symbolic or a hard link too.
        let input = d.join("in.csv");
        std::fs::write(&input, "id\n1\n").unwrap();
        std::os::unix::fs::symlink(&input, d.join("sym.csv")).unwrap();
        std::fs::hard_link(&input, d.join("hard.csv")).unwrap();
        std::fs::write(d.join("copy.csv"), "id\n1\n").unwrap();
        for other in ["sym.csv", "hard.csv", "out/../in.csv"] {
            assert!(same_file(&d.join(other), &input), "{other}");
            let e = check_output(&d.join(other), &[&input])
                .unwrap_err()
                .to_string();
            assert!(e.contains("is also an input of this run"), "{e}");
        }
        assert!(!same_file(&d.join("copy.csv"), &input));
        check_output(&d.join("copy.csv"), &[&input]).unwrap();
        // One exists, the other does not: different files.
        assert!(!same_file(&input, &out));
    }
}
