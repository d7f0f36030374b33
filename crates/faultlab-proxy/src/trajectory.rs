//! The trajectory writer lives with its reader in `faultlab_engine::trajectory` (one set of record types for
//! both); the proxy's fronts keep calling it `Trajectory`.

pub use faultlab_engine::trajectory::{Writer as Trajectory, frames_written};
