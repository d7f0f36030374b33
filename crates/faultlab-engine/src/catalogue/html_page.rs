//! `html_page`: a reverse proxy's HTML page instead of the reply.
//!
//! **What it does on the wire.** HTTP: the reply is replaced by the page a reverse proxy in front of the server
//! sends, `Content-Type: text/html; charset=utf-8`: with `status` 502, 503 or 504 nginx's error page
//! (`<html><head><title>502 Bad Gateway</title></head>...<center>nginx</center>...`); with 200 a sign-in page, as a
//! captive portal or an expired single-sign-on session serves. 503 carries `Retry-After` when `retry_after_sec` is
//! set. No JSON-RPC message answers the request. stdio has no status line: the page's lines are written on stdout
//! as they are, none of them JSON.
//!
//! **What a robust client should do.** Surface a clear error naming the status and the content type ("HTTP 502,
//! text/html: not an MCP response"), not a JSON parse trace or a hang until its deadline; a 502/503/504 may be
//! retried a bounded number of times (after `Retry-After`), a 200 page must not be retried as if it were a result.
//!
//! **Example.** `{"type": "html_page", "status": 502}`
//!
//! **How it is graded.** The call fails (effect `invalid`: no valid reply with the request's id arrived); a client
//! that waits until its deadline shows as a timeout; the connection or session stays usable for the next call.

use super::{MAX_RETRY_AFTER_SEC, Media, Reply, WireAction, within};
use bytes::Bytes;

fault! {
    /// A reverse proxy's `text/html` page instead of the reply: nginx's 502/503/504 page, or a 200 sign-in page.
    pub struct HtmlPage {
        pub status: u16,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub retry_after_sec: Option<u32>,
    }
    category: Transport,
    effect: Invalid,
    serve_tool: Some(ServeTool::http_only("html_page")),
    examples: [
        r#"{"type": "html_page", "status": 502}"#,
        r#"{"type": "html_page", "status": 200}"#,
    ],
    validate: |fault| {
        if !STATUSES.contains(&fault.status) {
            return Err(format!("status must be one of {STATUSES:?}"));
        }
        match fault.retry_after_sec {
            Some(secs) => within("retry_after_sec", secs, 0, MAX_RETRY_AFTER_SEC),
            None => Ok(()),
        }
    },
    apply: |fault, _reply, _| apply(_reply, fault.status, fault.retry_after_sec),
}

/// The statuses the page can come with: a gateway's errors, and 200 for a page served in the reply's place.
pub const STATUSES: [u16; 4] = [200, 502, 503, 504];

fn apply(_reply: Reply<'_>, status: u16, retry_after_sec: Option<u32>) -> Vec<WireAction> {
    vec![WireAction::HttpStatus { status, retry_after_sec, body: Bytes::from(page(status)), media: Media::Html }]
}

/// The page: nginx's own error page for the gateway statuses (CRLF line ends, as nginx writes it), a sign-in form
/// for 200.
pub fn page(status: u16) -> String {
    let reason = match status {
        502 => "Bad Gateway",
        503 => "Service Temporarily Unavailable",
        504 => "Gateway Time-out",
        _ => {
            return "<!DOCTYPE html>\r\n<html>\r\n<head><title>Sign in</title></head>\r\n<body>\r\n\
                    <form method=\"post\" action=\"/login\"><input name=\"user\"><input type=\"password\" \
                    name=\"password\"><button>Sign in</button></form>\r\n</body>\r\n</html>\r\n"
                .to_owned();
        }
    };
    format!(
        "<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n<center><h1>{status} {reason}</h1>\
         </center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::catalogue::Fault as _;

    #[test]
    fn nginx_s_page_with_the_status_and_no_json_rpc() {
        let actions = run(HtmlPage { status: 502, retry_after_sec: None }, &frame(RESULT));
        let [WireAction::HttpStatus { status: 502, body, media: Media::Html, retry_after_sec: None }] = &actions[..]
        else {
            panic!("{actions:?}")
        };
        let text = std::str::from_utf8(body).unwrap();
        assert!(text.starts_with("<html>\r\n<head><title>502 Bad Gateway</title>"), "{text}");
        assert!(serde_json::from_str::<serde_json::Value>(text).is_err());
    }

    #[test]
    fn a_sign_in_page_for_200_and_only_listed_statuses() {
        assert!(page(200).contains("<form"));
        assert!(HtmlPage { status: 404, retry_after_sec: None }.validate().unwrap_err().contains("status"));
    }
}
