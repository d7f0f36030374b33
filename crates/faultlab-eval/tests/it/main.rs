//! The eval library's tests in one binary:
//!
//! - `agent`: the control agents' behaviours, call by call, against a fake server; the templating they share.
//! - `html`: the HTML report escapes what agents wrote and lays out its heatmap and timelines.

mod agent;
mod html;
