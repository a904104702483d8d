//! Writing output files atomically: completely or not at all.
//!
//! Output goes to a temporary file in the target's directory, which is flushed, fsync'd and then
//! renamed over the target. On any error the temporary file is removed and the target (or an
//! older file at its path) is left untouched; a crash can at worst leave a stray hidden
//! `.<name>.<random>.tmp` file next to the target. The file is created with the temporary file's
//! permissions: readable and writable by the owner only on Unix, as fits files of personal data.

use crate::error::{CliError, CliResult};
use crate::input::Table;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes the header (if any) and the given rows of `table` to `path` atomically: a temporary
/// file in the same directory, fsync'd, then renamed over `path`. On any error nothing is left at
/// `path` (and a pre-existing file at `path` is untouched). CSV mode (the table has a header)
/// writes with `csv::Writer` (standard quoting, `\n` line endings); lines mode writes each row's
/// single field followed by `"\n"`. `rows` are indices into `table.rows`, written in the given
/// order; an index out of range is an error.
pub fn write_rows(path: &Path, table: &Table, rows: &[usize]) -> CliResult<()> {
    prepare_rows(path, table, rows)?.persist()
}

/// Writes the rows as [`write_rows`] does, to the temporary file only: the output appears at
/// `path` when [`Prepared::persist`] is called, and never if the value is dropped.
pub fn prepare_rows(path: &Path, table: &Table, rows: &[usize]) -> CliResult<Prepared> {
    let row = |i: usize| {
        table.rows.get(i).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("row {i} out of range ({} rows)", table.rows.len()),
            )
        })
    };
    prepare_with(path, |w| {
        match &table.header {
            Some(header) => {
                let mut csv = csv::WriterBuilder::new().flexible(true).from_writer(w);
                csv.write_byte_record(header)?;
                for &i in rows {
                    csv.write_byte_record(row(i)?)?;
                }
                csv.flush()?;
            }
            None => {
                for &i in rows {
                    w.write_all(row(i)?.get(0).unwrap_or_default())?;
                    w.write_all(b"\n")?;
                }
            }
        }
        Ok(())
    })
}

/// Writes arbitrary bytes to `path` atomically the same way as [`write_rows`] (used for JSON
/// reports).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> CliResult<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes `path` atomically with what `write` writes to the (buffered) temporary file.
pub(crate) fn write_atomic_with<F>(path: &Path, write: F) -> CliResult<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    prepare_with(path, write)?.persist()
}

/// An output written completely to a temporary file next to its target, not yet in place.
#[derive(Debug)]
pub struct Prepared {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Prepared {
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
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let file_error = |source| CliError::File {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = temp_next_to(path).map_err(file_error)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(file_error)?;
        w.flush().map_err(file_error)?;
    }
    tmp.as_file().sync_all().map_err(file_error)?;
    Ok(Prepared {
        tmp,
        path: path.to_path_buf(),
    })
}

/// Checks, before anything runs, that an output can be written at `path`: it is not one of
/// `inputs` (the run would replace its own input), is not a directory, and its directory
/// exists and takes a new file. Errors name the user's path, never the temporary file's.
pub fn check_output(path: &Path, inputs: &[&Path]) -> CliResult<()> {
    let fail = |reason: String| CliError::Usage(format!("{}: {reason}", path.display()));
    if path.is_dir() {
        return Err(fail("is a directory; give a file name".into()));
    }
    if let Ok(out) = std::fs::canonicalize(path) {
        for input in inputs {
            if std::fs::canonicalize(input).is_ok_and(|i| i == out) {
                return Err(fail(
                    "is also an input of this run; write the output to another file".into(),
                ));
            }
        }
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
    use crate::input::{InputSpec, read_table};
    use crate::normalize::{Normalize, Normalizer};

    fn table(content: &[u8], column: Option<&str>) -> Table {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, content).unwrap();
        read_table(&InputSpec {
            path: &path,
            column,
            normalizer: &Normalizer {
                kind: Normalize::None,
                country_code: None,
            },
        })
        .unwrap()
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn csv_rows() {
        let t = table(
            b"\xEF\xBB\xBFid,name,email\r\n\
              1,\"Kowalski, Anna\",a@x\r\n\
              2,\"say \"\"hi\"\"\",b@x\r\n\
              3,\"two\nlines\",c@x\r\n\
              4,\"plain\",\r\n",
            Some("email"),
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.csv");
        write_rows(&out, &t, &[0, 1, 2, 3]).unwrap();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            b"id,name,email\n1,\"Kowalski, Anna\",a@x\n2,\"say \"\"hi\"\"\",b@x\n3,\"two\nlines\",c@x\n4,plain,\n"
        );
        // The output reads back to the same rows.
        let back = table(&std::fs::read(&out).unwrap(), Some("email"));
        assert_eq!(back.header, t.header);
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
    fn lines_rows() {
        let t = table(b"a\r\nb,\"c\"\n\nd", None);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.txt");
        write_rows(&out, &t, &[0, 1, 2, 3]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"a\nb,\"c\"\n\nd\n");
        write_rows(&out, &t, &[3]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"d\n");
        write_rows(&out, &t, &[]).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"");
    }

    #[test]
    fn nonexistent_directory_fails_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("missing").join("out.csv");
        let t = table(b"x\n", None);
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
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn failure_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.csv");
        std::fs::write(&out, b"old").unwrap();
        let t = table(b"x\n", None);
        let e = write_rows(&out, &t, &[0, 5]).unwrap_err();
        assert!(
            matches!(&e, CliError::File { path, .. } if *path == out),
            "{e:?}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        assert_eq!(entries(dir.path()), vec!["out.csv"]);

        // Renaming over a directory fails; the temporary file is removed.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("keep"), b"k").unwrap();
        let e = write_atomic(&sub, b"new").unwrap_err();
        assert!(
            matches!(&e, CliError::File { path, .. } if *path == sub),
            "{e:?}"
        );
        assert_eq!(entries(dir.path()), vec!["out.csv", "sub"]);
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
}
