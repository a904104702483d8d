//! (placeholder: plain)
