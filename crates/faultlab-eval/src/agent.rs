//! The built-in control agents (filled in below).
