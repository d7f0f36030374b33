//! The trajectory writer lives with its reader in `faultlab_engine::trajectory` (one set of record types for
//! both). Here it is named for what it is, [`TrajectoryWriter`]: the engine's `Trajectory` is the reader.

pub use faultlab_engine::trajectory::{Writer as TrajectoryWriter, frames_written};

/// The writer's old name here, kept for one more merge (tests and branches written against it); new code says
/// [`TrajectoryWriter`].
pub use faultlab_engine::trajectory::Writer as Trajectory;
