//! The trace clinic's integration tests, one binary.
//!
//! - `corpus`: every detector on its hand-made positive and negative traces, the demo's traces, a real proxy
//!   trajectory, thresholds moving findings in and out.
//! - `false_findings`: the false findings once raised on ordinary traces (the demo's PASS runs, distinct calls in
//!   proxy trajectories), and findings on runs the lab passed saying why they disagree.
//! - `labelled`: the whole corpus against `tests/corpus/labels.json`: no false positive, no miss, and the precision
//!   and recall table in `docs/diagnose.md`.
//! - `parse`: malformed traces get errors naming the message index (or line); tolerated extras; trajectory mapping.
//! - `report`: console and Markdown snapshots, the JSON shape, the HTML page's findings and self-containment.

mod corpus;
mod false_findings;
mod labelled;
mod parse;
mod report;
mod util;
