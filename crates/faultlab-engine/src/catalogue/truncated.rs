//! `truncated`: the frame stops halfway.
//!
//! **What it does on the wire.** Only the first half of the reply's bytes are written, followed by the normal
//! frame end (a newline on stdio, the end of the SSE event or JSON body on HTTP). The result is not JSON.
//!
//! **What a robust client should do.** Discard the unparsable frame (logging it), keep the connection, and let
//! the request reach its deadline.
//!
//! **Example.** `{"type": "truncated"}`
//!
//! **How it is graded.** The call times out or errors; the next call on the same connection succeeds.

use super::WireAction;

fault! {
    /// Only the first half of the reply's bytes, then the frame ends.
    pub struct Truncated {}
    category: Protocol,
    effect: Invalid,
    serve_tool: Some(ServeTool::everywhere("truncated_response")),
    examples: [r#"{"type": "truncated"}"#],
    apply: |_, reply, _| {
        let bytes = reply.frame.bytes();
        vec![WireAction::Send(bytes.slice(..bytes.len() / 2))]
    },
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use faultlab_wire::Kind;

    #[test]
    fn half_the_bytes_and_not_json() {
        let out = sent(&run(Truncated {}, &frame(RESULT)));
        assert_eq!(out[0].bytes().len(), RESULT.len() / 2);
        assert_eq!(out[0].kind(), &Kind::Unparsable);
    }
}
