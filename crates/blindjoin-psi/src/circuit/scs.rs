//! (placeholder: scs)
