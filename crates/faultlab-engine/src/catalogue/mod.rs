//! The fault catalogue: every fault the lab can put on the wire, one file each.
//!
//! A fault's file owns everything about it: its parameters (a struct named like the enum arm), their limits and
//! validation, its `apply`, its [`Category`], its [`Effect`] (what a client sees), its examples, and its docs with
//! four sections: *What it does on the wire*, *What a robust client should do*, *Example* and *How it is graded*.
//! The fault joins the closed [`FaultKind`] enum with one line in the [`catalogue!`] list below; its name is the
//! file's name, and serde, the JSON Schema and [`FaultKind::name`] derive it from the arm.
//!
//! A fault is a pure transformation of one reply (plus the request it answers) into [`WireAction`]s; matching,
//! probability and timing of *when* it applies belong to the [`Engine`](crate::Engine) and the rules, and turning
//! actions into bytes belongs to [`render`](crate::render).
//!
//! A *preset* is another spelling of a fault with fixed parameters (`auth_expired` is `http_status` 401): it is
//! read as that fault, and written and recorded under that fault's name. The *schedule presets* (`burst_failure`,
//! `server_outage`, `cascading_failure`) are `http_status` 503 on a rule [`Schedule`]: they keep their own name
//! (written, recorded, and in the 503's `data.fault`), since the schedule is what tells them apart.
//!
//! The auth faults ([`auth`]) are not in [`FaultKind`]: they act on the authorization server and on admission to
//! the endpoint, not on a reply, and `faultlab-auth` plays them. Their types live here, one file each with the same
//! four sections, so that a rules file's `auth` key can hold one.

use crate::rules::Schedule;
use bytes::Bytes;
use faultlab_wire::Frame;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use strum::IntoStaticStr;

pub mod auth;
pub mod docs;
pub mod observe;
mod schema;

/// Declares the catalogue: each `Arm(module)` line is one fault, whose file `catalogue/<module>.rs` defines the
/// parameters struct `Arm` implementing [`Fault`]; each preset line names a file whose struct converts into a
/// [`FaultKind`]. Attributes before a line go on its enum arm (serde aliases, schema transforms).
macro_rules! catalogue {
    (
        faults { $( $(#[$meta:meta])* $arm:ident($module:ident), )* }
        presets { $( $preset:ident($preset_module:ident), )* }
    ) => {
        $( pub mod $module; pub use $module::$arm; )*
        $( pub mod $preset_module; pub use $preset_module::$preset; )*

        /// What happens to one reply on the wire. Closed on purpose: a new fault is a new file and one line in
        /// `catalogue!`. Written as `{"type": "<name>", <parameters>}`; presets are read as the fault they stand for.
        #[derive(
            Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::IntoStaticStr, strum::VariantNames,
        )]
        #[serde(tag = "type", rename_all = "snake_case", from = "Spelled", into = "Spelled")]
        #[strum(serialize_all = "snake_case")]
        pub enum FaultKind {
            $( $(#[$meta])* $arm($arm), )*
        }

        /// Every spelling a user may write: the faults and the presets. Read, then turned into a [`FaultKind`];
        /// written from one (a 503 on a schedule as its preset, so it reads back the same).
        #[derive(Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", rename_all = "snake_case")]
        #[schemars(rename = "FaultKind")]
        enum Spelled {
            $( $(#[$meta])* $arm($arm), )*
            $( $preset($preset), )*
        }

        impl From<Spelled> for FaultKind {
            fn from(spelled: Spelled) -> Self {
                match spelled {
                    $( Spelled::$arm(fault) => Self::$arm(fault), )*
                    $( Spelled::$preset(preset) => preset.into(), )*
                }
            }
        }

        $( impl From<$arm> for FaultKind {
            fn from(fault: $arm) -> Self {
                Self::$arm(fault)
            }
        } )*

        impl From<FaultKind> for Spelled {
            fn from(fault: FaultKind) -> Self {
                match fault {
                    FaultKind::HttpStatus(HttpStatus { schedule: Some(schedule), .. }) => schedule.into(),
                    $( FaultKind::$arm(fault) => Spelled::$arm(fault), )*
                }
            }
        }

        impl FaultKind {
            /// Where the fault sits in the taxonomy.
            pub fn category(&self) -> Category {
                match self {
                    $( Self::$arm(fault) => fault.category(), )*
                }
            }

            /// What the client sees for the request the fault fires on.
            pub fn effect(&self) -> Effect {
                match self {
                    $( Self::$arm(fault) => fault.effect(), )*
                }
            }

            /// Whether the fault exists only between an agent and its model (`faultlab model`): a model's answer
            /// cut inside a tool call, a 529, a token quota have no meaning on the MCP wire, where the proxy
            /// refuses them.
            pub fn model_only(&self) -> bool {
                match self {
                    $( Self::$arm(_) => <$arm as Fault>::MODEL_ONLY, )*
                }
            }

            /// Why only `faultlab serve` commits the fault (a task's own behaviour, which a proxy cannot put on
            /// another server's replies), when it is such a fault: the proxy's fronts refuse it with this reason.
            pub fn serve_only(&self) -> Option<&'static str> {
                match self {
                    $( Self::$arm(_) => <$arm as Fault>::SERVE_ONLY, )*
                }
            }

            /// Checks the fault's parameters; the message names the parameter and its allowed range.
            pub fn validate(&self) -> Result<(), String> {
                match self {
                    $( Self::$arm(fault) => fault.validate(), )*
                }
            }

            /// As [`FaultKind::apply_with`], also saying when the fault could not apply: `wrong_value` and
            /// `contradictory` send the reply unchanged rather than a result invalid against the tool's output
            /// schema.
            pub fn apply_checked(&self, reply: Reply<'_>, earlier: &Earlier) -> Applied {
                match self {
                    $( Self::$arm(fault) => fault.apply(reply, earlier), )*
                }
            }

            /// The `faultlab serve` tool that arms the fault, if one does (a tool arms its own reply or a standing
            /// fault on the connection's later replies: a fault on a schedule needs a rule).
            pub fn serve_tool(&self) -> Option<ServeTool> {
                if self.schedule().is_some() {
                    return None;
                }
                match self {
                    $( Self::$arm(_) => <$arm as Fault>::SERVE_TOOL, )*
                }
            }

            /// Every fault and preset name with its file's text (whose `//!` header is its documentation), in
            /// catalogue order.
            fn sources() -> Vec<(&'static str, &'static str)> {
                vec![
                    $( (stringify!($module), include_str!(concat!(stringify!($module), ".rs"))), )*
                    $( (stringify!($preset_module), include_str!(concat!(stringify!($preset_module), ".rs"))), )*
                ]
            }

            /// Every fault and preset name with its examples, as users write them (JSON), in catalogue order.
            pub fn examples() -> Vec<(&'static str, &'static [&'static str])> {
                vec![
                    $( (stringify!($module), <$arm as Fault>::EXAMPLES), )*
                    $( (stringify!($preset_module), $preset_module::EXAMPLES), )*
                ]
            }
        }
    };
}

/// Declares one fault in its file: the parameters struct (with the derives and strictness every fault has) and
/// its [`Fault`] impl, from named keys, in this order: `category:` ([`Category`] arm), `effect:` ([`Effect`] arm),
/// `serve_tool:` (the `faultlab serve` tool that arms it, or `None`), `examples:` (JSON strings, at least one), then
/// the optional `serve_only:` (why only `faultlab serve` commits it), `model_only:` (set by [`model_fault!`]), `category_of:` and `effect_of:` (closures,
/// when the category or the effect depends on the parameters) and `validate:`, and `apply:` (returns [`Applied`] or the actions). Named keys, so a
/// reader never counts commas to tell the effect from the category.
macro_rules! fault {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $fields:tt
        category: $category:ident,
        effect: $effect:ident,
        serve_tool: $tool:expr,
        examples: [$($example:literal),+ $(,)?],
        $(serve_only: $serve_only:expr,)?
        $(model_only: $model_only:expr,)?
        $(category_of: |$cself:pat_param| $cbody:expr,)?
        $(effect_of: |$eself:pat_param| $ebody:expr,)?
        $(validate: |$vself:pat_param| $vbody:expr,)?
        apply: |$aself:pat_param, $reply:pat_param, $earlier:pat_param| $abody:expr $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name $fields

        impl $crate::catalogue::Fault for $name {
            const EXAMPLES: &[&str] = &[$($example),+];
            const CATEGORY: $crate::catalogue::Category = $crate::catalogue::Category::$category;
            const EFFECT: $crate::catalogue::Effect = $crate::catalogue::Effect::$effect;
            const SERVE_TOOL: Option<$crate::catalogue::ServeTool> = {
                #[allow(unused_imports)]
                use $crate::catalogue::ServeTool;
                $tool
            };
            $(const SERVE_ONLY: Option<&'static str> = Some($serve_only);)?
            $(const MODEL_ONLY: bool = $model_only;)?
            $(fn category(&self) -> $crate::catalogue::Category {
                let $cself = self;
                $cbody
            })?
            $(fn effect(&self) -> $crate::catalogue::Effect {
                let $eself = self;
                $ebody
            })?
            $(fn validate(&self) -> Result<(), String> {
                let $vself = self;
                $vbody
            })?
            fn apply(
                &self,
                reply: $crate::catalogue::Reply<'_>,
                earlier: &$crate::catalogue::Earlier,
            ) -> $crate::catalogue::Applied {
                let ($aself, $reply, $earlier) = (self, reply, earlier);
                $crate::catalogue::Applied::from($abody)
            }
        }
    };
}

/// Declares a fault of the model hop only (see [`FaultKind::model_only`]): its parameters struct and its [`Fault`]
/// impl, as [`fault!`] does, from the same keys but `serve_tool:` (it has none) and `apply:`. `faultlab model`
/// performs it in each API's shapes (`faultlab_model::hop`); on the MCP wire, where the proxy refuses it, its
/// `apply` leaves the reply unchanged and says why.
macro_rules! model_fault {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $fields:tt
        category: $category:ident,
        effect: $effect:ident,
        examples: [$($example:literal),+ $(,)?],
        $(validate: |$vself:pat_param| $vbody:expr $(,)?)?
    ) => {
        fault! {
            $(#[$meta])*
            pub struct $name $fields
            category: $category,
            effect: $effect,
            serve_tool: None,
            examples: [$($example),+],
            model_only: true,
            $(validate: |$vself| $vbody,)?
            apply: |_, reply, _| {
                $crate::catalogue::Applied::skipped(reply, "a fault of the model hop only (faultlab model)".into())
            },
        }
    };
}

/// Declares a preset in its file: the struct users write (strict, as a fault's), its examples, and what it is read
/// as.
macro_rules! preset {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $fields:tt
        examples: [$($example:literal),+ $(,)?],
        read_as: |$preset:pat_param| $into:expr $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name $fields

        pub(super) const EXAMPLES: &[&str] = &[$($example),+];

        impl From<$name> for $crate::catalogue::FaultKind {
            fn from($preset: $name) -> Self {
                $into
            }
        }
    };
}

catalogue! {
    faults {
        #[serde(alias = "delayed")]
        #[schemars(transform = latency::accept_delayed_alias)]
        Latency(latency),
        Disconnect(disconnect),
        #[serde(alias = "malformed_response")]
        #[schemars(transform = malformed::accept_faultline_alias)]
        Malformed(malformed),
        Duplicate(duplicate),
        WrongId(wrong_id),
        MissingId(missing_id),
        Truncated(truncated),
        NonJsonLine(non_json_line),
        Framing(framing),
        Oversized(oversized),
        SplitWrite(split_write),
        ProgressAfterResult(progress_after_result),
        ListChangedStorm(list_changed_storm),
        HttpStatus(http_status),
        HtmlPage(html_page),
        NotJsonrpc(not_jsonrpc),
        ProtocolError(protocol_error),
        LateResponse(late_response),
        InvalidResult(invalid_result),
        Timeout(timeout),
        RateLimit(rate_limit),
        InvalidSchema(invalid_schema),
        MissingField(missing_field),
        Empty(empty),
        PartialResult(partial_result),
        WrongValue(wrong_value),
        Contradictory(contradictory),
        Stale(stale),
        Replayed(replayed),
        OutOfOrder(out_of_order),
        OutputSchemaViolation(output_schema_violation),
        ErrorStructuredContent(error_structured_content),
        MissingStructuredContent(missing_structured_content),
        ContentStructuredMismatch(content_structured_mismatch),
        BrokenPagination(broken_pagination),
        PageError(page_error),
        ListDrift(list_drift),
        UnknownTool(unknown_tool),
        RequestAfterResult(request_after_result),
        ElicitationCompleteUnknown(elicitation_complete_unknown),
        ToolCallCut(tool_call_cut),
        ToolArgumentsInvalid(tool_arguments_invalid),
        UnknownToolCall(unknown_tool_call),
        DuplicateCallId(duplicate_call_id),
        Overloaded(overloaded),
        ContextLengthExceeded(context_length_exceeded),
        TokenQuota(token_quota),
        Refusal(refusal),
        SlowDrip(slow_drip),
        StreamCut(stream_cut),
        StreamCutAgain(stream_cut_again),
        StreamRetry(stream_retry),
        EmptyEventId(empty_event_id),
        StreamReplay(stream_replay),
        ResumeRefused(resume_refused),
        StreamLost(stream_lost),
        SessionLifecycle(session_lifecycle),
        SessionExpiredInFlight(session_expired_in_flight),
        TaskLifecycle(task_lifecycle),
        TaskRequired(task_required),
        InputRequired(input_required),
        AskBack(ask_back),
        ProgressStream(progress_stream),
    }
    presets {
        AuthExpired(auth_expired),
        Forbidden(forbidden),
        BurstFailure(burst_failure),
        ServerOutage(server_outage),
        CascadingFailure(cascading_failure),
    }
}

/// What a fault's file implements.
pub trait Fault {
    /// How users write it, as JSON (at least one). The catalogue's tests parse each, and run each through every
    /// front that can carry it, checking that the client sees [`Fault::EFFECT`].
    const EXAMPLES: &[&str];
    /// Where it sits in the taxonomy (reports, the oracle), unless [`Fault::category`] says otherwise.
    const CATEGORY: Category;
    /// What the client sees for the faulted request.
    const EFFECT: Effect;
    /// The `faultlab serve` tool that arms this fault, on its own reply or on later ones ([`Arms`]; `None`: only
    /// rules arm it). `faultlab
    /// faults NAME` lists it among the places the fault exists; the server's tests check it.
    const SERVE_TOOL: Option<ServeTool>;
    /// A fault of the model hop only ([`FaultKind::model_only`]), declared with `model_fault!`.
    const MODEL_ONLY: bool = false;
    /// Why only `faultlab serve` commits it ([`FaultKind::serve_only`]); `None` for a fault a proxy can apply.
    const SERVE_ONLY: Option<&'static str> = None;
    /// The category, when it depends on the parameters.
    fn category(&self) -> Category {
        Self::CATEGORY
    }
    /// The effect, when it depends on the parameters (a fault `faultlab serve` commits in several ways: a call
    /// held open for ever is a timeout where its siblings end in a result).
    fn effect(&self) -> Effect {
        Self::EFFECT
    }
    /// Checks the parameters; the message names the parameter and its allowed range.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    /// What the wire does with `reply`, given what the engine learnt from earlier replies.
    fn apply(&self, reply: Reply<'_>, earlier: &Earlier) -> Applied;
}

/// A `faultlab serve` tool that arms a fault on its own reply, and where the server offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeTool {
    pub name: &'static str,
    pub offered: Offered,
    pub arms: Arms,
}

/// Which replies a `faultlab serve` tool faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arms {
    /// Its own reply (or the connection it arrives on).
    OwnReply,
    /// A standing fault ([`crate::Standing`]) on the connection's later replies: the lists a client fetches next,
    /// calls to a tool that is gone. It needs a connection that outlives the call (stdio, 2025-11-25 sessions).
    LaterReplies,
}

/// Where `faultlab serve` offers a tool (what the tool does needs that transport).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    Everywhere,
    /// Streamable HTTP only: it answers with a status line.
    HttpOnly,
    /// stdio and 2025-11-25 HTTP sessions: it needs a cancellation the connection outlives.
    StdioAndSessions,
    /// 2025-11-25 HTTP sessions only: it acts on the session or on its resumable response streams.
    Sessions,
}

impl ServeTool {
    pub const fn everywhere(name: &'static str) -> Self {
        Self { name, offered: Offered::Everywhere, arms: Arms::OwnReply }
    }

    pub const fn http_only(name: &'static str) -> Self {
        Self { name, offered: Offered::HttpOnly, arms: Arms::OwnReply }
    }

    pub const fn stdio_and_sessions(name: &'static str) -> Self {
        Self { name, offered: Offered::StdioAndSessions, arms: Arms::OwnReply }
    }

    pub const fn sessions(name: &'static str) -> Self {
        Self { name, offered: Offered::Sessions, arms: Arms::OwnReply }
    }

    /// A tool that arms a standing fault on the connection's later replies ([`Arms::LaterReplies`]).
    pub const fn standing(name: &'static str) -> Self {
        Self { name, offered: Offered::StdioAndSessions, arms: Arms::LaterReplies }
    }

    /// Which replies it faults, in words.
    pub fn arms_what(&self) -> &'static str {
        match self.arms {
            Arms::OwnReply => "on its own reply",
            Arms::LaterReplies => "as a standing fault on the connection's later replies",
        }
    }

    /// Where it is offered, in words (empty when everywhere).
    pub fn restriction(&self) -> &'static str {
        match self.offered {
            Offered::Everywhere => "",
            Offered::HttpOnly => " (over Streamable HTTP only)",
            Offered::StdioAndSessions => " (over stdio and 2025-11-25 HTTP sessions only)",
            Offered::Sessions => " (in 2025-11-25 HTTP sessions only)",
        }
    }
}

/// The six fault categories (MCP-Faultline's taxonomy), for reports and the oracle.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema, IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
#[derive(strum::VariantArray)]
pub enum Category {
    Transport,
    Protocol,
    Data,
    Authorization,
    Temporal,
    Systemic,
}

impl Category {
    pub const ALL: &[Category] = <Category as strum::VariantArray>::VARIANTS;

    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// What a client sees for the request a fault fired on. Recorded in the trajectory (`effect`), read by the trace
/// clinic, and checked on the wire for every example by the catalogue's tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Effect {
    /// The reply's result arrives intact (perhaps late, split, framed oddly, or among extra frames).
    Result,
    /// A valid result arrives for the request, but its content is not the server's answer (empty, partial,
    /// changed, contradicted, old, padded). The client cannot tell it from a good answer by its shape.
    WrongData,
    /// An error arrives for the request: a JSON-RPC error, an HTTP error status.
    Error,
    /// What arrives is not a valid reply: not JSON, not JSON-RPC, or a result MCP does not allow.
    Invalid,
    /// No reply the client can match to the request arrives (none at all, or one with a wrong or missing id).
    Timeout,
    /// The connection (stdio) or the response stream (HTTP) is lost.
    TransportLoss,
}

impl Effect {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Largest padding the `oversized` fault adds, in bytes (64 MiB: four times the usual 16 MiB line limit, enough
/// to trip any client's limit without exhausting the machine).
pub const MAX_OVERSIZED_BYTES: usize = 64 * 1024 * 1024;
// The lab's own stdio fronts carry its largest fault by default: the frame limit leaves at least 64 KiB for the
// rest of the reply around the padding.
const _: () = assert!(faultlab_wire::MAX_LINE_BYTES >= MAX_OVERSIZED_BYTES + 64 * 1024);
/// Most notifications one `list_changed_storm` sends.
pub const MAX_STORM_COUNT: u32 = 10_000;
/// Most pieces one `split_write` cuts a reply into.
pub const MAX_SPLIT_PARTS: u8 = 64;
/// Longest `latency` (and `out_of_order` hold), in ms; the server's `delay` tool has the same ceiling.
pub const MAX_LATENCY_MS: u64 = 30_000;
/// Longest `retry_after_sec` of `rate_limit` and `http_status`, in seconds (one day).
pub const MAX_RETRY_AFTER_SEC: u32 = 86_400;

pub use ask_back::{Ask, AskVariant};
pub use broken_pagination::PaginationVariant;
pub use elicitation_complete_unknown::UNKNOWN_ELICITATION_ID;
pub use framing::FramingStyle;
pub use input_required::InputVariant;
pub use list_drift::ListName;
pub use malformed::MalformedVariant;
pub use missing_field::DEFAULT_MISSING_POINTER;
pub use progress_stream::ProgressShape;
pub use request_after_result::AskMethod;
pub use session_lifecycle::LifecycleVariant;
pub use stream_replay::ReplayVariant;
pub use task_lifecycle::{TaskEnding, TaskVariant};

/// The faults that act on list replies (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`) rather than on a tool's result: a rule matches them on the method, and the tests that run every
/// example on a `tools/call` reply run these on a list instead.
pub const LIST_FAULTS: &[&str] = &["broken_pagination", "page_error", "list_drift"];

/// The faults that act on a Streamable HTTP response stream and its resumption rather than on the reply: an HTTP
/// front turns each into a `faultlab_http::resume::Plan` for the request's stream; elsewhere (stdio) the reply
/// passes unchanged and the fault is recorded as skipped.
pub const STREAM_FAULTS: &[&str] =
    &["stream_cut", "stream_cut_again", "stream_retry", "empty_event_id", "stream_replay", "resume_refused"];

/// A parameter outside `min..=max`, as [`Fault::validate`] reports it.
pub(crate) fn within<T: PartialOrd + std::fmt::Display>(name: &str, value: T, min: T, max: T) -> Result<(), String> {
    if value < min || value > max { Err(format!("{name} must be between {min} and {max}")) } else { Ok(()) }
}

/// One step of what the wire does instead of (or around) writing a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireAction {
    /// One frame in the transport's normal framing (a line; an SSE `message` event; a JSON body). The bytes need
    /// not be valid JSON: truncated and non-JSON frames are sent this way.
    Send(Bytes),
    /// One frame with altered framing.
    SendFramed { bytes: Bytes, framing: WireFraming },
    /// Wait before the next action. Only this reply's actions wait; other messages keep flowing.
    Pause(Duration),
    /// Close the connection (stdio) or abort the response stream (HTTP). Nothing after it is sent.
    Close,
    /// Answer with an HTTP status instead (HTTP), `body` of the `media` type; stdio writes `body` (a JSON-RPC
    /// error, or the page a reverse proxy would send) as it is.
    HttpStatus { status: u16, retry_after_sec: Option<u32>, body: Bytes, media: Media },
    /// Hold the rest of this reply until `release` is signalled, or `max` has passed (other messages keep flowing).
    AwaitRelease { release: out_of_order::Release, max: Duration },
    /// Signal `release` once everything before this action has been written.
    Release(out_of_order::Release),
}

/// The media type of a status answer's body: a server's JSON (a JSON-RPC error, or JSON that is not JSON-RPC), or
/// the HTML page a reverse proxy in front of it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Media {
    #[default]
    Json,
    Html,
}

impl Media {
    /// The `Content-Type` it is sent with.
    pub const fn content_type(self) -> &'static str {
        match self {
            Self::Json => "application/json",
            Self::Html => "text/html; charset=utf-8",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFraming {
    Crlf,
    Bom,
    /// Written in this many separate writes (at least 2).
    Split {
        parts: u8,
    },
}

/// What a fault sees: the reply it acts on and, when the engine saw it, the request that reply answers.
#[derive(Debug, Clone, Copy)]
pub struct Reply<'a> {
    pub frame: &'a Frame,
    pub request: Option<&'a Frame>,
}

/// What the [`Engine`](crate::Engine) learnt from earlier replies on the same connection scope: the replies
/// themselves, for the faults that resend them (`stale`, `replayed`; only replies to `tools/call` that no fault
/// fired on are remembered), and the called tool's output schema from a `tools/list` reply, for the faults that
/// must keep a result valid against it (`wrong_value`, `contradictory`).
#[derive(Debug, Clone, Default)]
pub struct Earlier {
    /// The last such reply to a call of the same tool as the request this reply answers.
    pub same_tool: Option<Bytes>,
    /// The last such reply to a call of any tool.
    pub any_tool: Option<Bytes>,
    /// The `outputSchema` the server listed for the tool this reply answers a call of, if it listed one.
    pub output_schema: Option<OutputSchema>,
}

/// A tool's `outputSchema`, as the engine saw it in a `tools/list` reply.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputSchema {
    /// The schema as listed.
    Listed(Arc<serde_json::Value>),
    /// The tool lists a schema too large to keep (the engine bounds its memory). Kept as a marker rather than
    /// forgotten: a fault that must keep the result valid then skips instead of guessing.
    TooLarge,
}

/// What a fault did with one reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub actions: Vec<WireAction>,
    /// Why the fault could not apply, when it could not; the actions then send the reply unchanged.
    pub skipped: Option<String>,
}

impl From<Vec<WireAction>> for Applied {
    fn from(actions: Vec<WireAction>) -> Self {
        Self { actions, skipped: None }
    }
}

impl Applied {
    fn skipped(reply: Reply<'_>, reason: String) -> Self {
        Self { actions: unchanged(reply), skipped: Some(reason) }
    }
}

impl From<Schedule> for Spelled {
    fn from(schedule: Schedule) -> Self {
        match schedule {
            Schedule::Burst(preset) => Self::BurstFailure(preset),
            Schedule::Outage(preset) => Self::ServerOutage(preset),
            Schedule::Cascade(preset) => Self::CascadingFailure(preset),
        }
    }
}

impl FaultKind {
    /// The fault's name as written in rules and diagnostics (`latency`, `http_status`, a schedule preset's own).
    pub fn name(&self) -> &'static str {
        match self.schedule() {
            Some(schedule) => schedule.preset(),
            None => self.into(),
        }
    }

    /// Whether the fault acts on the request's response stream ([`STREAM_FAULTS`]).
    pub fn on_stream(&self) -> bool {
        STREAM_FAULTS.contains(&self.name())
    }

    /// The schedule a schedule preset brings (`burst_failure` is a 503 on a burst).
    pub fn schedule(&self) -> Option<&Schedule> {
        match self {
            Self::HttpStatus(HttpStatus { schedule, .. }) => schedule.as_ref(),
            _ => None,
        }
    }

    /// The effect of the fault or preset called `name`, as trajectories record it; `None` for a name this catalogue
    /// does not know. (A fault the proxy applies has one effect whatever its parameters, so its first example
    /// stands for it; only serve-only faults, which no trajectory records, vary by variant.)
    pub fn effect_of(name: &str) -> Option<Effect> {
        let (_, examples) = Self::examples().into_iter().find(|(fault, _)| *fault == name)?;
        let fault: Self = serde_json::from_str(examples.first()?).ok()?;
        Some(fault.effect())
    }

    /// What the wire does with `reply` under this fault, with no earlier replies known (`stale` and `replayed`
    /// then send the reply unchanged).
    pub fn apply(&self, reply: Reply<'_>) -> Vec<WireAction> {
        self.apply_with(reply, &Earlier::default())
    }

    /// What the wire does with `reply` under this fault, given the connection's earlier replies.
    pub fn apply_with(&self, reply: Reply<'_>, earlier: &Earlier) -> Vec<WireAction> {
        self.apply_checked(reply, earlier).actions
    }
}

/// The reply with `change` applied to its JSON value, re-serialised; byte for byte unchanged when `change`
/// returns false (nothing to change) or the reply is not JSON.
fn rewrite(reply: Reply<'_>, change: impl FnOnce(&mut Value) -> bool) -> Vec<WireAction> {
    let Some(mut value) = reply.frame.value().cloned() else {
        return unchanged(reply);
    };
    if !change(&mut value) {
        return unchanged(reply);
    }
    match serde_json::to_vec(&value) {
        Ok(bytes) => vec![WireAction::Send(Bytes::from(bytes))],
        Err(_) => unchanged(reply),
    }
}

/// As [`rewrite`], on the reply's `result` object; a reply without one is sent unchanged.
fn rewrite_result(
    reply: Reply<'_>,
    change: impl FnOnce(&mut serde_json::Map<String, Value>) -> bool,
) -> Vec<WireAction> {
    rewrite(reply, |message| match message.get_mut("result") {
        Some(Value::Object(result)) => change(result),
        _ => false,
    })
}

/// As [`rewrite`], on the `content` blocks of the reply's result; a reply without them is sent unchanged.
fn rewrite_content(reply: Reply<'_>, change: impl FnOnce(&mut Vec<Value>) -> bool) -> Vec<WireAction> {
    rewrite(reply, |message| match message.pointer_mut("/result/content") {
        Some(Value::Array(blocks)) => change(blocks),
        _ => false,
    })
}

/// A JSON pointer split into its parent's pointer and its last reference token (unescaped: `~1` is `/`, `~0` is
/// `~`). `None` for the empty pointer, which has no parent.
fn split_pointer(pointer: &str) -> Option<(&str, String)> {
    let (parent, last) = pointer.rsplit_once('/')?;
    Some((parent, last.replace("~1", "/").replace("~0", "~")))
}

/// An empty pointer names the whole message (or result), which cannot be removed or replaced in place.
fn check_pointer(pointer: &str) -> Result<(), String> {
    if pointer.starts_with('/') {
        Ok(())
    } else {
        Err(format!("pointer must be a JSON pointer starting with '/', not {pointer:?}"))
    }
}

/// The reply unchanged, as a one-action list.
pub(crate) fn unchanged(reply: Reply<'_>) -> Vec<WireAction> {
    vec![WireAction::Send(reply.frame.bytes().clone())]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    // What every fault's unit tests use.
    pub(crate) use super::{Reply, WireAction, unchanged};

    pub(crate) fn frame(json: &str) -> Frame {
        Frame::parse(Bytes::copy_from_slice(json.as_bytes()))
    }

    /// What `fault` does to `reply`, with no request or earlier replies known.
    pub(crate) fn run(fault: impl Into<FaultKind>, reply: &Frame) -> Vec<WireAction> {
        fault.into().apply(Reply { frame: reply, request: None })
    }

    pub(crate) const RESULT: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}"#;

    pub(crate) fn sent(actions: &[WireAction]) -> Vec<Frame> {
        actions
            .iter()
            .filter_map(|a| match a {
                WireAction::Send(b) | WireAction::SendFramed { bytes: b, .. } => Some(Frame::parse(b.clone())),
                _ => None,
            })
            .collect()
    }

    /// Every example of every fault and preset, parsed.
    fn every_example() -> Vec<(&'static str, FaultKind)> {
        let mut all = Vec::new();
        for (name, examples) in FaultKind::examples() {
            assert!(!examples.is_empty(), "{name} has no examples");
            for example in examples {
                let fault = serde_json::from_str::<FaultKind>(example).unwrap_or_else(|e| panic!("{example}: {e}"));
                all.push((name, fault));
            }
        }
        all
    }

    #[test]
    fn every_example_reads_validates_and_round_trips_under_its_name() {
        let presets = ["auth_expired", "forbidden"];
        let schedules = ["burst_failure", "server_outage", "cascading_failure"];
        for (name, fault) in every_example() {
            assert!(fault.validate().is_ok(), "{name}: {fault:?}");
            let json = serde_json::to_value(&fault).unwrap();
            assert_eq!(json["type"], fault.name());
            assert_eq!(serde_json::from_value::<FaultKind>(json).unwrap(), fault);
            if presets.contains(&name) {
                assert_eq!(fault.name(), "http_status", "a preset is read as the fault it stands for");
            } else if schedules.contains(&name) {
                assert!(matches!(&fault, FaultKind::HttpStatus(h) if h.status == 503 && h.schedule.is_some()));
                assert_eq!(fault.name(), name, "a schedule preset keeps its name");
            } else {
                assert_eq!(fault.name(), name, "a fault's name is its file's name");
            }
        }
    }

    /// Each catalogue file (name, text) that declares a fault or a preset its list does not hold: a file missing
    /// from `catalogue!` is no module, so it compiles to nothing and no other test sees it. The message names the
    /// file and the line to add.
    fn unlisted(files: &[(String, String)], faults: &[&str], presets: &[&str]) -> Vec<String> {
        let mut missing = Vec::new();
        for (file, text) in files {
            let Some(module) = file.strip_suffix(".rs") else { continue };
            let mut lines = text.lines();
            let Some(declared) =
                lines.find_map(|l| ["fault! {", "model_fault! {", "preset! {"].into_iter().find(|m| l == *m))
            else {
                continue;
            };
            let (list, block) = if declared == "preset! {" { (presets, "presets") } else { (faults, "faults") };
            if list.contains(&module) {
                continue;
            }
            let arm = lines
                .find_map(|l| l.trim_start().strip_prefix("pub struct "))
                .and_then(|rest| rest.split(|c: char| !c.is_alphanumeric() && c != '_').next())
                .unwrap_or("Arm");
            missing.push(format!(
                "catalogue/{file} declares `{}` but the catalogue! list in catalogue/mod.rs does not name it, so it \
                 compiles to nothing: add `{arm}({module}),` to its `{block}` block",
                declared.trim_end_matches(" {")
            ));
        }
        missing
    }

    #[test]
    fn every_fault_file_is_in_the_catalogue_list() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/catalogue");
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".rs") {
                files.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
        let faults: Vec<&str> = <FaultKind as strum::VariantNames>::VARIANTS.to_vec();
        let presets: Vec<&str> =
            FaultKind::examples().into_iter().map(|(name, _)| name).filter(|name| !faults.contains(name)).collect();
        let missing = unlisted(&files, &faults, &presets);
        assert!(missing.is_empty(), "{}", missing.join("\n"));
        let declared =
            files.iter().filter(|(_, text)| text.contains("\nfault! {") || text.contains("\nmodel_fault! {"));
        assert_eq!(declared.count(), faults.len(), "one file per fault");

        // A file whose line was forgotten is named, with the line to add.
        let forgotten =
            "//! `noisy_neighbour`: ...\n\nfault! {\n    /// ...\n    pub struct NoisyNeighbour { pub count: u32 }\n";
        let preset = "preset! {\n    pub struct Teapot {}\n";
        let files = [("noisy_neighbour.rs".into(), forgotten.into()), ("teapot.rs".into(), preset.into())];
        let missing = unlisted(&files, &faults, &presets);
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(missing[0].contains("catalogue/noisy_neighbour.rs"), "{}", missing[0]);
        assert!(missing[0].contains("add `NoisyNeighbour(noisy_neighbour),` to its `faults` block"), "{}", missing[0]);
        assert!(missing[1].contains("add `Teapot(teapot),` to its `presets` block"), "{}", missing[1]);
    }

    #[test]
    fn presets_are_http_status_and_schedules_answer_503() {
        let read = |json: &str| serde_json::from_str::<FaultKind>(json).unwrap();
        assert_eq!(read(r#"{"type":"auth_expired"}"#), read(r#"{"type":"http_status","status":401}"#));
        assert_eq!(read(r#"{"type":"forbidden"}"#), read(r#"{"type":"http_status","status":403}"#));
        let err = serde_json::from_str::<FaultKind>(r#"{"type":"forbidden","status":500}"#).unwrap_err();
        assert!(err.to_string().contains("status"), "{err}");
        for json in [r#"{"type":"burst_failure","count":2}"#, r#"{"type":"cascading_failure","spread":1}"#] {
            let fault = read(json);
            assert_eq!((fault.category(), fault.effect()), (Category::Systemic, Effect::Error));
        }
        assert_eq!(read(r#"{"type":"forbidden"}"#).category(), Category::Authorization);
        assert_eq!(read(r#"{"type":"http_status","status":503}"#).category(), Category::Transport);
    }

    #[test]
    fn defaults_and_the_delayed_alias() {
        let delayed: FaultKind = serde_json::from_str(r#"{"type":"delayed","delay_ms":5}"#).unwrap();
        assert_eq!(delayed, FaultKind::Latency(Latency { delay_ms: 5 }));
        let missing: FaultKind = serde_json::from_str(r#"{"type":"missing_field"}"#).unwrap();
        assert_eq!(missing, FaultKind::MissingField(MissingField { pointer: DEFAULT_MISSING_POINTER.into() }));
        let outage: FaultKind = serde_json::from_str(r#"{"type":"server_outage","duration_ms":5}"#).unwrap();
        let schedule = Schedule::Outage(ServerOutage { duration_ms: 5, restart: false });
        assert_eq!(outage, FaultKind::HttpStatus(HttpStatus::scheduled(schedule)));
        assert_eq!(serde_json::to_string(&outage).unwrap(), r#"{"type":"server_outage","duration_ms":5}"#);
        let limit: FaultKind = serde_json::from_str(r#"{"type":"rate_limit"}"#).unwrap();
        assert_eq!(limit, FaultKind::RateLimit(RateLimit { retry_after_sec: None }));
        let schema = serde_json::to_string(&schemars::schema_for!(FaultKind)).unwrap();
        assert!(schema.contains(r#"["latency","delayed"]"#), "the schema accepts what serde accepts");
        assert!(schema.contains(r#""auth_expired""#), "and the presets");
    }

    #[test]
    fn pointers_split_and_unescape() {
        assert_eq!(split_pointer("/result/content"), Some(("/result", "content".into())));
        assert_eq!(split_pointer("/a~1b/c~0d"), Some(("/a~1b", "c~d".into())));
        assert_eq!(split_pointer("/x"), Some(("", "x".into())));
        assert_eq!(split_pointer(""), None);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_str::<FaultKind>(r#"{"type":"latency","delay_ms":1,"jitter":2}"#).unwrap_err();
        assert!(err.to_string().contains("jitter"), "{err}");
        let json = r#"{"type":"server_outage","duration_ms":5,"restarts":true}"#;
        let err = serde_json::from_str::<FaultKind>(json).unwrap_err();
        assert!(err.to_string().contains("restarts"), "{err}");
    }

    #[test]
    fn out_of_range_parameters_name_the_parameter() {
        let invalid = |json: &str| serde_json::from_str::<FaultKind>(json).unwrap().validate().unwrap_err();
        assert!(invalid(r#"{"type":"latency","delay_ms":30001}"#).contains("delay_ms"));
        assert!(invalid(r#"{"type":"split_write","parts":1}"#).contains("parts"));
        assert!(invalid(r#"{"type":"http_status","status":200}"#).contains("status"));
        assert!(invalid(r#"{"type":"http_status","status":429,"retry_after_sec":86401}"#).contains("retry_after_sec"));
        assert!(invalid(r#"{"type":"rate_limit","retry_after_sec":86401}"#).contains("retry_after_sec"));
        assert!(invalid(r#"{"type":"missing_field","pointer":"result"}"#).contains("pointer"));
        assert!(invalid(r#"{"type":"wrong_value","pointer":"","value":null}"#).contains("pointer"));
        assert!(invalid(r#"{"type":"burst_failure","count":0}"#).contains("count"));
        assert!(invalid(r#"{"type":"server_outage","duration_ms":0}"#).contains("duration_ms"));
    }
}
