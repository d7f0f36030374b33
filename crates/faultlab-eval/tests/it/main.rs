//! The eval library's tests in one binary:
//!
//! - `agent`: the control agents' behaviours, call by call, against a fake server; the templating they share.
//! - `agent_model`: the control agents on the model hop, against a real scripted model endpoint.
//! - `html`: the HTML report escapes what agents wrote and lays out its heatmap and timelines.
//! - `trajectory_agreement`: diagnose, the grader and replay read one trajectory the same way.

mod agent;
mod agent_model;
mod html;
mod trajectory_agreement;
