//! The error type of the hashing structures.

/// What went wrong while deriving hashing parameters or filling a table.
///
/// Every failure is returned to the caller; nothing is retried with other hash functions behind
/// its back (a rehash would need a new seed that both parties agree on, which is the protocol's
/// decision).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HashingError {
    /// Cuckoo insertion found no place for an item: no augmenting path to an empty bin exists
    /// and the stash is full (for a stash-less table: the stash has room for nothing).
    #[error(
        "cuckoo hashing failed: {items} items do not fit into {bins} bins and a stash of {stash} \
         (item {homeless} is left without a place); the parameters' failure probability is {bound}"
    )]
    CuckooFailed {
        /// Items being inserted.
        items: usize,
        /// Bins of the table.
        bins: usize,
        /// Stash capacity.
        stash: usize,
        /// Index of the item that found no place (not necessarily the one being inserted: the
        /// eviction walk moves items around).
        homeless: u32,
        /// What the parameters' analysis says about this event.
        bound: super::FailureBound,
    },
    /// A simple-hashing bin holds more entries than the agreed maximum bin size.
    #[error("simple hashing bin {bin} holds {size} entries, more than the maximum {max}")]
    BinOverflow {
        /// Index of the first bin that overflows.
        bin: usize,
        /// Entries in it.
        size: usize,
        /// The maximum bin size that was checked.
        max: usize,
    },
    /// Garbled Bloom filter build: every slot of an element is already taken by earlier
    /// elements, so it has no slot for its final share (DCW13 Thm 1; probability about 2^-k).
    #[error(
        "garbled Bloom filter build failed: all {k} slots of item {item} (of {items}) are taken in a \
         filter of {bits} slots"
    )]
    GbfFull {
        /// Index of the element that found no free slot.
        item: usize,
        /// Elements being inserted.
        items: usize,
        /// m.
        bits: u64,
        /// k.
        k: usize,
    },
    /// More items than the tables can index.
    #[error("{items} items are too many for the hashing tables (at most {max})")]
    TooManyItems {
        /// Items given.
        items: usize,
        /// Largest number of items supported ([`super::MAX_ITEMS`]).
        max: usize,
    },
    /// A parameter is out of range, or two inputs disagree (e.g. hashed items for another
    /// number of bins than the table's).
    #[error("invalid hashing parameter `{field}`: {reason}")]
    InvalidParam {
        /// The parameter's name.
        field: &'static str,
        /// Why it is rejected (with the value).
        reason: String,
    },
}

impl HashingError {
    /// Shorthand for [`HashingError::InvalidParam`].
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        HashingError::InvalidParam {
            field,
            reason: reason.into(),
        }
    }
}

impl From<HashingError> for blindjoin_core::Error {
    fn from(e: HashingError) -> Self {
        match e {
            HashingError::TooManyItems { .. } => blindjoin_core::Error::InvalidParam {
                field: "items",
                reason: e.to_string(),
            },
            HashingError::InvalidParam { field, reason } => {
                blindjoin_core::Error::InvalidParam { field, reason }
            }
            HashingError::CuckooFailed { bound, .. } => {
                let advice = match bound {
                    super::FailureBound::About { log2 } if log2 < 40 => {
                        "for a set this small that is likely enough to happen: run again (a new \
                         session hashes differently)"
                    }
                    _ => "please report it",
                };
                blindjoin_core::Error::HashingFailed(format!("{e}; {advice}"))
            }
            HashingError::GbfFull { .. } => blindjoin_core::Error::HashingFailed(format!(
                "{e}; with the filter sized for the set this has probability about 2^-k: please \
                 report it"
            )),
            HashingError::BinOverflow { .. } => {
                blindjoin_core::Error::HashingFailed(format!("{e}; please report it"))
            }
        }
    }
}
