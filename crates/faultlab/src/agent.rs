//! Placeholder until this command lands.

use crate::Failure;
use crate::cli::AgentArgs;

pub fn run(_args: AgentArgs) -> Result<(), Failure> {
    Err(Failure::new(1, anyhow::anyhow!("not built yet")))
}
