//! (placeholder: gmw)
