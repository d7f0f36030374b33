//! Streamable HTTP front (filled in next).
pub mod sessions;
