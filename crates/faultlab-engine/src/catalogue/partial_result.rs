//! `partial_result`: only the first half of the result arrives, in a well-formed reply.
//!
//! **What it does on the wire.** With n ≥ 2 content blocks, only the first ⌊n/2⌋ are kept. With a single text
//! block, only the first ⌊c/2⌋ characters (Unicode scalar values, never a split character) of its `text` are
//! kept: `{"status":"ok"}` becomes `{"stat`. Everything else (`jsonrpc`, `id`, `isError`, `structuredContent`) is
//! kept, so the reply is valid JSON-RPC and a valid `CallToolResult`; unlike `truncated`, the frame itself is
//! whole. A reply with no content, with one non-text block, or an error is sent unchanged.
//!
//! **What a robust client should do.** Not take the part for the whole: detect the incomplete data (a text that
//! no longer parses, fewer items than announced) and retry or report it.
//!
//! **Example.** `{"type": "partial_result"}`
//!
//! **How it is graded.** The call "succeeds" with half the data; a retry or an honest report passes, a claimed
//! complete result fails (false recovery).

use super::rewrite_content;
use serde_json::Value;

fault! {
    /// Only the first half of the content blocks (of a single text block: the first half of its text).
    pub struct PartialResult {}
    category: Data,
    effect: WrongData,
    serve_tool: None,
    examples: [r#"{"type": "partial_result"}"#],
    apply: |_, reply, _| rewrite_content(reply, |blocks| match blocks.len() {
        0 => false,
        1 => {
            let Some(Value::String(text)) = blocks[0].get_mut("text") else {
                return false;
            };
            let half = text.chars().count() / 2;
            let cut = text.char_indices().nth(half).map_or(text.len(), |(at, _)| at);
            text.truncate(cut);
            true
        }
        n => {
            blocks.truncate(n / 2);
            true
        }
    }),
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use bytes::Bytes;

    fn run(json: &str) -> Vec<WireAction> {
        super::super::tests::run(PartialResult {}, &frame(json))
    }

    #[test]
    fn half_the_blocks() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}}"#;
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}]}}"#;
        assert_eq!(run(reply), vec![WireAction::Send(Bytes::from(expected))]);
    }

    #[test]
    fn half_a_single_text_on_a_character_boundary() {
        let reply = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ééab"}],"isError":false}}"#;
        let expected = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"éé"}],"isError":false}}"#;
        assert_eq!(run(reply), vec![WireAction::Send(Bytes::from(expected))]);
    }

    #[test]
    fn nothing_to_halve_passes_unchanged() {
        for reply in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#,
        ] {
            assert_eq!(run(reply), vec![WireAction::Send(Bytes::from(reply))]);
        }
    }
}
