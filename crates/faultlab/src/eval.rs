//! Placeholder until this command lands.

use crate::Failure;
use crate::cli::EvalArgs;

pub fn run(_args: EvalArgs) -> Result<(), Failure> {
    Err(Failure::new(1, anyhow::anyhow!("not built yet")))
}
