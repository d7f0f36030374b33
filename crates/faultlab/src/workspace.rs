//! Placeholder until this command lands.

use crate::Failure;
use crate::cli::WorkspaceServerArgs;

pub fn run(_args: WorkspaceServerArgs) -> Result<(), Failure> {
    Err(Failure::new(1, anyhow::anyhow!("not built yet")))
}
