//! (placeholder: count)
