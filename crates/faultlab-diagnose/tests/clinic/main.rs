//! The trace clinic's integration tests, one binary.
//!
//! - `corpus`: every detector on its hand-made positive and negative traces, the demo's traces, a real proxy
//!   trajectory, thresholds moving findings in and out.
//! - `parse`: malformed traces get errors naming the message index (or line); tolerated extras; trajectory mapping.
//! - `report`: console and Markdown snapshots, the JSON shape, the HTML page's findings and self-containment.

mod corpus;
mod parse;
mod report;
mod util;
