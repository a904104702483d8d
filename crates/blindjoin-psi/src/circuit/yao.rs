//! (placeholder: yao)
