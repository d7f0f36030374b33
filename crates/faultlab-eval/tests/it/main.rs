//! The eval library's tests in one binary:
//!
//! - `agent`: the control agents' behaviours, call by call, against a fake server; the templating they share.
//! - `html`: the HTML report escapes what agents wrote and lays out its heatmap and timelines.
//! - `trajectory_agreement`: diagnose, the grader and replay read one trajectory the same way.

mod agent;
mod html;
mod trajectory_agreement;
