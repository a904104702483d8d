//! The keys of Arrow record batches: every row's key columns read as text, normalised and
//! hashed to an item exactly as the CLI does for a file (`blindjoin_cli::input::hash_parallel`,
//! which joins several columns with `KeyHasher::composite`), then deduplicated in row order.

use arrow_array::{ArrayRef, RecordBatch};
use blindjoin_cli::error::{CliError, CliResult};
use blindjoin_cli::input::{as_text, hash_parallel};
use blindjoin_cli::keyed::{Dedup, Keyed, MAX_DISTINCT_KEYS};
use blindjoin_cli::normalize::Normalizer;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rows hashed in one parallel wave (batches are hashed side by side within a wave, and each
/// batch in parallel pieces).
const WAVE_ROWS: usize = 1 << 20;

/// The error of a run stopped by the caller (Ctrl-C).
pub fn cancelled() -> CliError {
    CliError::Usage("cancelled by the user (KeyboardInterrupt)".to_owned())
}

/// The keyed rows of `batches`, whose columns are the key columns in key order (`label` names
/// the data in errors). Stops with [`cancelled`] between waves once `cancel` is set.
pub fn hash_batches(
    batches: &[RecordBatch],
    normalizer: &Normalizer,
    label: &str,
    cancel: &AtomicBool,
) -> CliResult<Keyed> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut dedup = Dedup::with_capacity(rows);
    let mut start = 0;
    while start < batches.len() {
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        let mut end = start + 1;
        let mut wave = batches[start].num_rows();
        while end < batches.len() && wave + batches[end].num_rows() <= WAVE_ROWS {
            wave += batches[end].num_rows();
            end += 1;
        }
        let hashed: Vec<CliResult<_>> = batches[start..end]
            .par_iter()
            .map(|b| hash_batch(b, normalizer, label))
            .collect();
        for items in hashed {
            dedup.extend(&items?).map_err(|_| too_many(label))?;
        }
        start = end;
    }
    dedup.finish().map_err(|_| too_many(label))
}

fn too_many(label: &str) -> CliError {
    CliError::Usage(format!(
        "{label}: more than {MAX_DISTINCT_KEYS} distinct keys"
    ))
}

/// The item of every row of `batch` (whose columns are the key columns, in key order), `None`
/// where the row has no key.
pub(crate) fn hash_batch(
    batch: &RecordBatch,
    normalizer: &Normalizer,
    label: &str,
) -> CliResult<Vec<Option<blindjoin_core::item::Item>>> {
    let schema = batch.schema();
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            as_text(c).map_err(|e| CliError::Usage(format!("{label}: column `{}`: {e}", f.name())))
        })
        .collect::<CliResult<_>>()?;
    hash_parallel(normalizer, &columns).map_err(|e| CliError::Usage(format!("{label}: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};
    use blindjoin_cli::keyed::NO_KEY;
    use blindjoin_cli::normalize::Normalize;
    use blindjoin_core::item::items_from_records;
    use std::sync::Arc;

    fn batch(names: &[&str], columns: Vec<ArrayRef>) -> RecordBatch {
        let fields: Vec<Field> = names
            .iter()
            .zip(&columns)
            .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    #[test]
    fn keys_across_batches_in_row_order() {
        let normalizer = Normalizer {
            kind: Normalize::Email,
            country_code: None,
        };
        let a = batch(
            &["email"],
            vec![Arc::new(StringArray::from(vec![
                Some("A@x"),
                None,
                Some(" b@x "),
            ]))],
        );
        let b = batch(
            &["email"],
            vec![Arc::new(StringArray::from(vec![
                Some("a@x"),
                Some("c@x"),
                Some("  "),
            ]))],
        );
        let keyed = hash_batches(&[a, b], &normalizer, "<test>", &AtomicBool::new(false)).unwrap();
        assert_eq!(
            keyed.items,
            items_from_records(&[b"a@x".as_slice(), b"b@x", b"c@x"])
        );
        assert_eq!(keyed.row_item, vec![0, NO_KEY, 1, 0, 2, NO_KEY]);
        assert_eq!((keyed.empty_keys, keyed.duplicate_rows), (2, 1));
    }

    #[test]
    fn numbers_are_keys_by_their_text_and_cancel_stops() {
        let normalizer = Normalizer {
            kind: Normalize::None,
            country_code: None,
        };
        let ids = batch(&["id"], vec![Arc::new(Int64Array::from(vec![42, 7]))]);
        let keyed = hash_batches(
            std::slice::from_ref(&ids),
            &normalizer,
            "<test>",
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(keyed.items, items_from_records(&[b"42".as_slice(), b"7"]));
        let stopped = hash_batches(&[ids], &normalizer, "<test>", &AtomicBool::new(true));
        assert!(stopped.is_err());
    }
}
