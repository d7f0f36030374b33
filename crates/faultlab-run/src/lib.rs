//! Running the reference client against servers and reporting what happened.
//!
//! - [`probe`]: the seven deterministic `lab_probe` runs that cover all six probe scenarios.
//! - [`junit`]: JUnit XML for CI systems.

pub mod junit;
pub mod probe;
