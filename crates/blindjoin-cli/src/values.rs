//! The sender's value column of a sum run (`send --result sum --value-column C`): each row's
//! whole number, added up per distinct key.
//!
//! A sum run computes, inside the circuit, the sum of the sender's values over the keys both
//! parties have (the ad-conversion use case of private join-and-compute). The circuit carries
//! 32-bit values ([`blindjoin_psi::protocols::circuit_psi::VALUE_BITS`]), so every value, and
//! every key's total over its rows, must lie in 0..=2^32 − 1. Rows sharing a key add their
//! values; rows without a key never match and their value is not read.
//!
//! The column is read in a second pass over the file, after the keys: with the `csv` crate for
//! CSV (the first pass has already checked the file's quoting and field counts) and with the
//! Arrow reader for Parquet, decoding only that column. An error names the line (CSV) or row
//! (Parquet) and the value.

use crate::error::{CliError, CliResult};
use crate::input::{Format, RowSource, as_text, parquet_builder, parquet_error};
use crate::keyed::{Keyed, NO_KEY};
use arrow_array::Array;
use std::path::Path;

/// The largest value, and the largest total of one key.
pub const MAX_VALUE: u64 = u32::MAX as u64;

/// Reads column `column` of the rows in `source` and returns, per item of `keyed` (in its
/// order), the sum of the values of its rows (see the module doc).
pub fn read_values(source: &RowSource, keyed: &Keyed, column: &str) -> CliResult<Vec<u64>> {
    let path = source.path.as_path();
    let Some(col) = source
        .columns
        .iter()
        .position(|n| n.trim().trim_start_matches('\u{feff}') == column.trim())
    else {
        return Err(CliError::MissingColumn {
            path: path.to_path_buf(),
            column: column.trim().to_owned(),
            available: source
                .columns
                .iter()
                .map(|n| n.trim())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let mut sums = Sums::new(keyed, path, column.trim());
    match source.format {
        Format::Csv => read_csv(path, col, &mut sums)?,
        Format::Parquet => read_parquet(path, col, &mut sums)?,
        Format::Lines => {
            return Err(CliError::Usage(format!(
                "{}: a value column needs a CSV or Parquet input with a header",
                path.display()
            )));
        }
    }
    sums.finish()
}

/// Per-item sums under construction.
struct Sums<'a> {
    keyed: &'a Keyed,
    path: &'a Path,
    column: &'a str,
    sums: Vec<u64>,
    row: usize,
}

impl<'a> Sums<'a> {
    fn new(keyed: &'a Keyed, path: &'a Path, column: &'a str) -> Self {
        Sums {
            keyed,
            path,
            column,
            sums: vec![0; keyed.items.len()],
            row: 0,
        }
    }

    /// The error of a bad value at `place` ("line 7", "row 6").
    fn bad(&self, place: &str, reason: String) -> CliError {
        CliError::Usage(format!(
            "{}: {place}: column `{}`: {reason}",
            self.path.display(),
            self.column
        ))
    }

    /// Adds the next row's value, `text` (`None`: null), read at `place`.
    fn add(&mut self, text: Option<&[u8]>, place: impl Fn() -> String) -> CliResult<()> {
        let Some(&item) = self.keyed.row_item.get(self.row) else {
            return Err(self.changed());
        };
        self.row += 1;
        if item == NO_KEY {
            return Ok(());
        }
        let Some(text) = text else {
            return Err(self.bad(&place(), "no value".to_owned()));
        };
        let text = String::from_utf8_lossy(text);
        let value: u64 = text
            .trim()
            .parse()
            .ok()
            .filter(|&v| v <= MAX_VALUE)
            .ok_or_else(|| {
                self.bad(
                    &place(),
                    format!("`{text}` is not a whole number from 0 to {MAX_VALUE}"),
                )
            })?;
        let sum = &mut self.sums[item as usize];
        *sum += value;
        if *sum > MAX_VALUE {
            let total = *sum;
            return Err(self.bad(
                &place(),
                format!(
                    "the rows with this row's key add up to {total}, above {MAX_VALUE} (the \
                     circuit adds 32-bit values)"
                ),
            ));
        }
        Ok(())
    }

    fn changed(&self) -> CliError {
        CliError::Usage(format!(
            "{}: the file changed while it was read (its rows differ between the two passes)",
            self.path.display()
        ))
    }

    fn finish(self) -> CliResult<Vec<u64>> {
        if self.row != self.keyed.rows() {
            return Err(self.changed());
        }
        Ok(self.sums)
    }
}

fn read_csv(path: &Path, col: usize, sums: &mut Sums<'_>) -> CliResult<()> {
    let file = std::fs::File::open(path).map_err(|source| CliError::File {
        path: path.to_path_buf(),
        source,
    })?;
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(std::io::BufReader::with_capacity(1 << 20, file));
    let mut record = csv::ByteRecord::new();
    loop {
        match rdr.read_byte_record(&mut record) {
            Ok(true) => {
                let line = record.position().map_or(0, |p| p.line());
                sums.add(record.get(col), || format!("line {line}"))?;
            }
            Ok(false) => return Ok(()),
            Err(e) => {
                return Err(CliError::Usage(format!("{}: {e}", path.display())));
            }
        }
    }
}

fn read_parquet(path: &Path, col: usize, sums: &mut Sums<'_>) -> CliResult<()> {
    let builder = parquet_builder(path)?;
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), [col]);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(64 << 10)
        .build()
        .map_err(|e| parquet_error(path, &e))?;
    for batch in reader {
        let batch = batch.map_err(|e| parquet_error(path, &e))?;
        let text = as_text(batch.column(0))
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        let strings = crate::input::StringColumn::of(text.as_ref())
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        for i in 0..text.len() {
            let row = sums.row;
            let value = (!text.is_null(i)).then(|| strings.value(i));
            sums.add(value, || format!("row {row}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::input::{InputSpec, read_input};
    use crate::normalize::{Normalize, Normalizer};
    use std::io::Write;

    fn read(content: &[u8], column: &str) -> CliResult<(Keyed, Vec<u64>)> {
        let mut f = tempfile::Builder::new().suffix(".csv").tempfile().unwrap();
        f.write_all(content).unwrap();
        let normalizer = Normalizer {
            kind: Normalize::None,
            country_code: None,
        };
        let columns = ["key".to_owned()];
        let input = read_input(
            &InputSpec {
                path: f.path(),
                format: None,
                columns: &columns,
                normalizer: &normalizer,
            },
            &|_| {},
        )?;
        let values = read_values(&input.source, &input.keyed, column)?;
        Ok((input.keyed, values))
    }

    #[test]
    fn rows_of_one_key_add_up_and_keyless_rows_are_skipped() {
        let (keyed, values) = read(
            b"\xEF\xBB\xBFkey,spend\na,3\nb, 4 \n,oops\na,10\n\"c\",4294967295\n",
            "spend",
        )
        .unwrap();
        assert_eq!(keyed.items.len(), 3);
        assert_eq!(values, vec![13, 4, 4294967295]);
    }

    #[test]
    fn bad_values_name_their_line() {
        let err = |content: &[u8]| read(content, "spend").err().unwrap().to_string();
        assert!(
            err(b"key,spend\na,1\nb,x1\n").ends_with(
                "line 3: column `spend`: `x1` is not a whole number from 0 to 4294967295"
            ),
            "{}",
            err(b"key,spend\na,1\nb,x1\n")
        );
        assert!(err(b"key,spend\na,-1\n").contains("line 2: column `spend`: `-1` is not"));
        assert!(err(b"key,spend\na,\n").contains("line 2: column `spend`: `` is not"));
        assert!(err(b"key,spend\na,4294967296\n").contains("line 2"));
        assert!(
            err(b"key,spend\na,4294967295\nb,1\na,1\n").contains(
                "line 4: column `spend`: the rows with this row's key add up to 4294967296"
            )
        );
        let missing = read(b"key,spend\na,1\n", "price")
            .err()
            .unwrap()
            .to_string();
        assert!(
            missing.ends_with("no column `price`; the columns are: key, spend"),
            "{missing}"
        );
    }
}
