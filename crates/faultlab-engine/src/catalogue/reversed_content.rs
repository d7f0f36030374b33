//! `reversed_content`: the result's content blocks arrive in reverse order, each text reversed.
//!
//! **What it does on the wire.** The reply's `result.content` array is written back to front; everything else
//! (id, `structuredContent`, `isError`) is unchanged. A reply without content blocks passes unchanged.
//!
//! **What a robust client should do.** Not assume the blocks' order carries meaning the server did not promise;
//! read what it needs by type or by `structuredContent`.
//!
//! **Example.** `{"type": "reversed_content"}`
//!
//! **How it is graded.** The answer the client reports is the server's, whatever order its blocks came in.

use super::rewrite_content;

fault! {
    /// The result's content blocks, back to front.
    pub struct ReversedContent {}
    facts: Data, WrongData, None, [r#"{"type": "reversed_content"}"#];
    apply: |_, reply, _| rewrite_content(reply, |blocks| {
        blocks.reverse();
        for text in blocks.iter_mut().filter_map(|block| block.get_mut("text")) {
            if let Some(reversed) = text.as_str().map(|s| s.chars().rev().collect::<String>()) {
                *text = reversed.into();
            }
        }
        !blocks.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    #[test]
    fn the_blocks_come_back_to_front() {
        let reply = frame(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#);
        let out = sent(&run(ReversedContent {}, &reply));
        assert_eq!(out[0].value().unwrap()["result"]["content"][0]["text"], "b");
        let one = sent(&run(ReversedContent {}, &frame(RESULT)));
        assert_eq!(one[0].value().unwrap()["result"]["content"][0]["text"], "ko");
    }
}
