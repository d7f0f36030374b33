//! The one model every input becomes: a timeline of entries (messages or trajectory lines) and the tool calls made
//! in it, each with its result. Detectors read only this, so an OpenAI-message trace and a proxy trajectory are
//! diagnosed by the same code.

use faultlab_wire::canonical;
use serde::Serialize;
use serde_json::Value;

/// Which kind of file a trace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// A JSON array of OpenAI chat messages (or an object holding one under `messages`).
    OpenaiMessages,
    /// `faultlab proxy --record` JSON lines.
    ProxyTrajectory,
}

/// How positions are counted in a trace, as the user finds them in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// The index in the messages array, from 0.
    Message,
    /// The line number of a JSON-lines file, from 1.
    Line,
}

impl Unit {
    pub fn name(self, count: usize) -> &'static str {
        match (self, count) {
            (Unit::Message, 1) => "message",
            (Unit::Message, _) => "messages",
            (Unit::Line, 1) => "line",
            (Unit::Line, _) => "lines",
        }
    }
}

/// Who wrote an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
    /// A trajectory line (a frame, a fault event, the ledger).
    Event,
}

impl Role {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// One message or trajectory line.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    /// Where the user finds it (see [`Unit`]).
    pub pos: usize,
    pub role: Role,
    /// The message's text (empty parts dropped), or a trajectory line's description.
    pub text: Option<String>,
    /// Milliseconds; from `ts_ms`/`timestamp` on a message (epoch) or `tsMs` on a trajectory line (since start).
    pub ts_ms: Option<f64>,
}

/// How a call ended, as the agent saw it: the trajectory's own [`Outcome`] (one idea, one type), which an
/// OpenAI-message trace is read into as well.
pub use faultlab_engine::trajectory::Outcome;

/// One tool call and what came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The `tool_calls[].id`, or the JSON-RPC id of a trajectory frame.
    pub id: String,
    pub tool: String,
    /// The parsed arguments; `None` where the trace does not record them (trajectories). Arguments that are not
    /// valid JSON are kept as a JSON string of their text.
    pub arguments: Option<Value>,
    /// Position of the entry that made the call.
    pub at: usize,
    pub ts_ms: Option<f64>,
    /// `None` when the trace holds no answer (it ends first, or the answer never came).
    pub result: Option<CallResult>,
}

impl Call {
    pub fn failed(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.status.failed())
    }

    pub fn succeeded(&self) -> bool {
        self.result.as_ref().is_some_and(|r| r.status == Outcome::Ok)
    }

    pub fn status(&self) -> Option<Outcome> {
        self.result.as_ref().map(|r| r.status)
    }

    /// The arguments with object keys sorted, for comparing two calls; `None` when not recorded.
    pub fn arguments_key(&self) -> Option<String> {
        self.arguments.as_ref().map(canonical)
    }

    /// `tool({"a":1})`, shortened for one-line summaries.
    pub fn signature(&self) -> String {
        match &self.arguments {
            Some(args) => format!("{}({})", self.tool, shorten(&args.to_string(), 60)),
            None => self.tool.clone(),
        }
    }
}

/// The answer to a call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Position of the entry that carried the answer.
    pub at: usize,
    pub ts_ms: Option<f64>,
    pub status: Outcome,
    /// The tool message's text; `None` in trajectories, which do not record payloads.
    pub text: Option<String>,
    /// Whether the server executed the request (trajectories: the proxy knows); `None` when unknown.
    pub executed: Option<bool>,
    /// The fault the proxy put on the call (trajectories only).
    pub fault: Option<String>,
}

/// What kinds of data a trace records. Detectors that need something a trace lacks are reported as not checked
/// instead of guessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    pub arguments: bool,
    pub result_text: bool,
    /// The agent's own messages (what it told the user).
    pub agent_text: bool,
    /// Timestamps on calls and results.
    pub timing: bool,
}

/// A parsed trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub format: TraceFormat,
    pub unit: Unit,
    pub entries: Vec<TimelineEntry>,
    pub calls: Vec<Call>,
    pub recorded: Recorded,
    /// The lab's own verdict on the run, when a report beside the trace names it (set by [`crate::load`]).
    pub lab: Option<crate::lab::LabVerdict>,
}

impl Trace {
    /// Indices into `calls` of every call to `tool`, in order.
    pub fn calls_of<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.calls.iter().enumerate().filter(move |(_, c)| c.tool == tool).map(|(i, _)| i)
    }

    /// Every tool name, in the order first called.
    pub fn tools(&self) -> Vec<&str> {
        let mut tools: Vec<&str> = Vec::new();
        for call in &self.calls {
            if !tools.contains(&call.tool.as_str()) {
                tools.push(&call.tool);
            }
        }
        tools
    }

    /// The assistant's messages with text, after position `pos`: `(position, text)`.
    pub fn agent_texts_after(&self, pos: usize) -> impl Iterator<Item = (usize, &str)> {
        self.entries.iter().filter(move |e| e.role == Role::Assistant && e.pos > pos).filter_map(|e| {
            let text = e.text.as_deref()?.trim();
            (!text.is_empty()).then_some((e.pos, text))
        })
    }

    pub fn entry(&self, pos: usize) -> Option<&TimelineEntry> {
        self.entries.iter().find(|e| e.pos == pos)
    }
}

/// At most `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
