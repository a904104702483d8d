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
use std::path::Path;

/// Writes the header (if any) and the given rows of `table` to `path` atomically: a temporary
/// file in the same directory, fsync'd, then renamed over `path`. On any error nothing is left at
/// `path` (and a pre-existing file at `path` is untouched). CSV mode (the table has a header)
/// writes with `csv::Writer` (standard quoting, `\n` line endings); lines mode writes each row's
/// single field followed by `"\n"`. `rows` are indices into `table.rows`, written in the given
/// order; an index out of range is an error.
pub fn write_rows(path: &Path, table: &Table, rows: &[usize]) -> CliResult<()> {
    let row = |i: usize| {
        table.rows.get(i).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("row {i} out of range ({} rows)", table.rows.len()),
            )
        })
    };
    write_atomic_with(path, |w| {
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
    let file_error = |source| CliError::File {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(file_error)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        write(&mut w).map_err(file_error)?;
        w.flush().map_err(file_error)?;
    }
    tmp.as_file().sync_all().map_err(file_error)?;
    // On failure the returned temporary file is dropped, which removes it.
    tmp.persist(path).map_err(|e| file_error(e.error))?;
    sync_dir(dir);
    Ok(())
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
