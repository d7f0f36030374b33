//! Moving frames between the client and a server. A transport only carries bytes; the connection interprets them.

pub mod http;
mod stdio;

use bytes::Bytes;
use faultlab_wire::{Frame, MessageId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::sync::mpsc;

pub use http::HttpTransport;
pub use stdio::StdioTransport;

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Target {
    /// A server process spoken to over its stdin/stdout.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
        /// Variables set for the child on top of the inherited environment.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// A Streamable HTTP endpoint (plain HTTP, loopback only).
    Http {
        url: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// Something that arrived from the server side.
#[derive(Debug)]
pub enum Incoming {
    /// A frame, as received (it may be anything, including garbage).
    Frame(Frame),
    /// HTTP: the POST carrying request `id` was answered with an error status instead of a message.
    HttpStatus { id: MessageId, status: u16, retry_after: Option<String>, body: Bytes },
    /// The channel carrying request `id` broke (an aborted HTTP response), or with `id: None`, the whole
    /// connection closed (stdio EOF, the child exited).
    Lost { id: Option<MessageId>, detail: String },
    /// HTTP: the answer to request `id` is complete; nothing more can arrive for it.
    Ended { id: MessageId },
    /// HTTP: the body of request `id`'s own POST response, a single JSON document (or bytes) that is no JSON-RPC
    /// message: a gateway's `{"message": ..., "status": ...}` on a 200. Over HTTP that body is the request's answer,
    /// so the call gets it as its (invalid) reply rather than ending as if nothing had come.
    Answer { id: MessageId, frame: Frame },
}

pub type IncomingTx = mpsc::UnboundedSender<Incoming>;

/// Plain http:// on a loopback host (localhost, 127.x.y.z, [::1]): the only URLs the reference client goes to.
pub fn is_loopback_http(url: &reqwest::Url) -> bool {
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    url.scheme() == "http" && loopback
}
