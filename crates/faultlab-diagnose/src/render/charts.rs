//! The HTML report's pictures of a trace, drawn as inline SVG (nothing fetched, readable without JavaScript):
//!
//! - the **sequence view**: one lane per party (client, faultlab proxy, server for a trajectory; agent and tools for
//!   a message trace), time going down, each call an arrow out and an arrow back, the time the call was held open
//!   a bar on the lane that held it (the server's, or the proxy's when a fault answered), faults marked by name on
//!   the proxy's lane;
//! - the **duration chart**: one bar per call, as long as it took, coloured by how it ended.
//!
//! Elements a reader (or a test) can rely on: `<svg class="sequence">` with one `<g class="call status-S">` per call
//! (its `<rect class="held">` the bar), and `<table class="durations">` with one `<tr class="duration">` per call.

use super::html::esc;
use crate::model::{Call, Outcome, Trace, TraceFormat};
use std::fmt::Write as _;

/// Horizontal room of the sequence view, in CSS pixels (the page's content column).
const WIDTH: f64 = 880.0;
/// Vertical room before the first call and after the last, in CSS pixels.
const MARGIN: f64 = 36.0;
/// The least vertical distance between two arrows, in CSS pixels, so that close calls stay readable.
const MIN_GAP: f64 = 22.0;
/// The tallest the time axis may be drawn, in CSS pixels: a long trace is drawn at a smaller scale.
const MAX_SPAN_PX: f64 = 900.0;
/// The largest scale of the time axis, in CSS pixels per millisecond: short traces are not stretched further.
const MAX_PX_PER_MS: f64 = 0.5;

/// The lanes' names and x positions, left to right.
fn lanes(format: TraceFormat) -> Vec<(&'static str, f64)> {
    match format {
        TraceFormat::ProxyTrajectory => {
            vec![("client", 120.0), ("faultlab proxy", WIDTH / 2.0), ("server", WIDTH - 120.0)]
        }
        TraceFormat::OpenaiMessages => vec![("agent", 160.0), ("tools", WIDTH - 160.0)],
    }
}

/// One call's place in the picture: when it went out and when (if) it came back, in the trace's milliseconds, or
/// by order where the trace records no time.
struct Span<'a> {
    call: &'a Call,
    start: f64,
    end: Option<f64>,
}

fn spans(trace: &Trace) -> Vec<Span<'_>> {
    let timed = trace.recorded.timing && trace.calls.iter().all(|c| c.ts_ms.is_some());
    trace
        .calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let result = call.result.as_ref();
            if timed {
                let start = call.ts_ms.unwrap_or_default();
                Span { call, start, end: result.map(|r| r.ts_ms.unwrap_or(start)) }
            } else {
                // Order only: the answer one step after the call.
                let step = i as f64 * 2.0;
                Span { call, start: step, end: result.map(|_| step + 1.0) }
            }
        })
        .collect()
}

/// The y of each of `times` (sorted or not), scaled to fit, at least [`MIN_GAP`] apart in time order.
fn ys(times: &[f64]) -> Vec<f64> {
    let (first, last) = times.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &t| (a.min(t), b.max(t)));
    let span = (last - first).max(1.0);
    let scale = (MAX_SPAN_PX / span).min(MAX_PX_PER_MS);
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&a, &b| times[a].total_cmp(&times[b]));
    let mut out = vec![0.0; times.len()];
    let mut previous: Option<(f64, f64)> = None;
    for i in order {
        let natural = MARGIN + (times[i] - first) * scale;
        let y = match previous {
            // Equal times share a row; later ones keep at least the gap.
            Some((t, y)) if times[i] == t => y,
            Some((_, y)) => natural.max(y + MIN_GAP),
            None => natural,
        };
        out[i] = y;
        previous = Some((times[i], y));
    }
    out
}

fn status_name(call: &Call) -> &'static str {
    call.status().map_or("pending", Outcome::name)
}

/// The sequence view of one trace; nothing when it made no tool call.
pub fn sequence(out: &mut String, trace: &Trace) {
    if trace.calls.is_empty() {
        return;
    }
    let lanes = lanes(trace.format);
    let spans = spans(trace);
    let mut times: Vec<f64> = Vec::with_capacity(spans.len() * 2);
    for span in &spans {
        times.push(span.start);
        times.push(span.end.unwrap_or(span.start));
    }
    let y = ys(&times);
    let bottom = y.iter().copied().fold(0.0, f64::max) + MARGIN;
    let (left, right) = (lanes[0].1, lanes[lanes.len() - 1].1);
    let middle = lanes[lanes.len() / 2].1;
    let proxy = trace.format == TraceFormat::ProxyTrajectory;
    let _ = writeln!(
        out,
        "<svg class=\"sequence\" viewBox=\"0 0 {WIDTH} {bottom:.0}\" width=\"{WIDTH}\" height=\"{bottom:.0}\" \
         role=\"img\" aria-label=\"sequence of {} calls\">",
        spans.len()
    );
    for (name, x) in &lanes {
        let _ = writeln!(
            out,
            "<text class=\"lane-name\" x=\"{x}\" y=\"16\">{name}</text>\
             <line class=\"lane\" x1=\"{x}\" y1=\"24\" x2=\"{x}\" y2=\"{bottom:.0}\"/>"
        );
    }
    for (i, span) in spans.iter().enumerate() {
        let (y0, y1) = (y[2 * i], y[2 * i + 1]);
        let result = span.call.result.as_ref();
        let fault = result.and_then(|r| r.fault.as_deref());
        // A request the proxy answered itself never reached the server: its arrow and bar stop at the proxy.
        let reached = !(proxy && result.is_some_and(|r| r.executed == Some(false)));
        let far = if reached { right } else { middle };
        let status = status_name(span.call);
        let took = span.end.map(|end| end - span.start);
        let title = match took {
            Some(ms) if trace.recorded.timing => {
                format!("{} — {status} after {} ms", span.call.signature(), ms.round())
            }
            _ => format!("{} — {status}", span.call.signature()),
        };
        let _ = write!(out, "<g class=\"call status-{status}\"><title>{}</title>", esc(&title));
        let _ = write!(
            out,
            "<line class=\"out\" x1=\"{left}\" y1=\"{y0:.1}\" x2=\"{far}\" y2=\"{y0:.1}\"/>\
             <text class=\"label\" x=\"{:.0}\" y=\"{:.1}\">{}</text>",
            left + 8.0,
            y0 - 4.0,
            esc(&crate::model::shorten(&span.call.signature(), 48))
        );
        let held_to = if result.is_some() { y1 } else { bottom - 6.0 };
        let _ = write!(
            out,
            "<rect class=\"held\" x=\"{:.1}\" y=\"{y0:.1}\" width=\"8\" height=\"{:.1}\"/>",
            far - 4.0,
            (held_to - y0).max(3.0)
        );
        match result {
            Some(result) => {
                // A reply the proxy swallowed (a timeout, a lost connection) stops there: the client never got it.
                let swallowed = proxy && reached && matches!(result.status, Outcome::Timeout | Outcome::Lost);
                let to = if swallowed { middle } else { left };
                let _ = write!(out, "<line class=\"back\" x1=\"{far}\" y1=\"{y1:.1}\" x2=\"{to}\" y2=\"{y1:.1}\"/>");
            }
            None => {
                let _ = write!(
                    out,
                    "<text class=\"label none\" x=\"{:.0}\" y=\"{:.1}\">no answer</text>",
                    far + 10.0,
                    held_to
                );
            }
        }
        if let Some(fault) = fault {
            let at = if reached { y1 } else { y0 };
            let _ = write!(
                out,
                "<circle class=\"fault\" cx=\"{middle}\" cy=\"{at:.1}\" r=\"6\"/>\
                 <text class=\"fault-name\" x=\"{:.0}\" y=\"{:.1}\">{}</text>",
                middle + 10.0,
                at + 14.0,
                esc(fault)
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
}

/// The duration chart of one trace: a bar per call, as long as it took; a line saying why when the trace records
/// no time.
pub fn durations(out: &mut String, trace: &Trace) {
    if trace.calls.is_empty() {
        return;
    }
    if !trace.recorded.timing {
        out.push_str("<p class=\"not-checked\">Durations: this trace records no timestamps.</p>\n");
        return;
    }
    let took = |call: &Call| Some(call.result.as_ref()?.ts_ms? - call.ts_ms?);
    let longest = trace.calls.iter().filter_map(took).fold(1.0_f64, f64::max);
    out.push_str("<table class=\"durations\">\n<tbody>\n");
    for (i, call) in trace.calls.iter().enumerate() {
        let status = status_name(call);
        let (width, text) = match took(call) {
            Some(ms) => ((ms / longest * 100.0).clamp(0.5, 100.0), format!("{} ms", crate::detect::ms(ms))),
            None => (0.0, "no answer".to_owned()),
        };
        let _ = writeln!(
            out,
            "<tr class=\"duration status-{status}\"><td class=\"n\">{}</td><td class=\"tool\">{}</td>\
             <td class=\"bar\"><span style=\"width: {width:.1}%\"></span></td><td class=\"ms\">{text}</td></tr>",
            i + 1,
            esc(&call.tool)
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_times_keep_a_gap_and_equal_times_share_a_row() {
        let y = ys(&[0.0, 1.0, 1.0, 10_000.0]);
        assert_eq!(y[1], y[2]);
        assert!(y[1] - y[0] >= MIN_GAP);
        assert!(y[3] <= MARGIN + MAX_SPAN_PX + 3.0 * MIN_GAP, "a long trace is scaled down: {y:?}");
    }
}
