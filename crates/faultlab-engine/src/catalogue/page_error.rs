//! `page_error`: one page of a list is answered with an error.
//!
//! **What it does on the wire.** Like `broken_pagination`, it pages what the upstream really listed in one reply
//! (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`; match the rule on the method), in
//! pages of `page_size` items with correct cursors (`faultlab-page-N`), but the request for page `page` (2 by
//! default) gets a JSON-RPC error instead: code -32603, `failed to read page N of the list (faultlab
//! page_error)`. The pages before it arrive intact. A reply that is not such a list, or the upstream's own
//! paging, is sent unchanged with a `fault_skipped` reason (see `broken_pagination`).
//!
//! **What a robust client should do.** Fail the listing with the error (or retry the page a bounded number of
//! times), saying the list is incomplete, rather than silently using the first pages as the whole list or
//! dropping what it had.
//!
//! **Example.** `{"type": "page_error", "page": 2}`
//!
//! **How it is graded.** The listing's outcome is an error (or a bounded retry of the page), not a tool list that
//! quietly lacks the later pages.

use super::broken_pagination::{list_reply, page, page_of, send_page};
use super::{Applied, Reply, WireAction, within};
use bytes::Bytes;
use serde_json::json;

fn default_page() -> u32 {
    2
}

fault! {
    /// A list reply paged correctly (1 item a page by default), except that page `page` is a JSON-RPC error.
    pub struct PageError {
        /// The page answered with an error, 2 to 1000 (default 2).
        #[serde(default = "default_page")]
        pub page: u32,
        /// Items per page, 1 to 1000 (default 1).
        #[serde(default = "one")]
        pub page_size: u32,
    }
    category: Protocol,
    effect: Error,
    serve_tool: Some(ServeTool::standing("list_pagination")),
    examples: [r#"{"type": "page_error", "page": 2}"#],
    validate: |fault| within("page", fault.page, 2, 1000)
        .and(within("page_size", fault.page_size, 1, super::broken_pagination::MAX_PAGE_SIZE)),
    apply: |fault, reply, _| apply(reply, fault.page as usize, fault.page_size as usize),
}

fn one() -> u32 {
    1
}

fn apply(reply: Reply<'_>, failing: usize, size: usize) -> Applied {
    let list = match list_reply(&reply) {
        Ok(list) => list,
        Err(reason) => return Applied::skipped(reply, reason),
    };
    let index = match list.cursor {
        None => 0,
        Some(cursor) => match page_of(cursor) {
            Some(index) => index,
            None => {
                let reason = format!("the request's cursor {cursor:?} is not one the fault issued");
                return Applied::skipped(reply, reason);
            }
        },
    };
    if index + 1 == failing {
        let id = reply.frame.value().and_then(|m| m.get("id")).cloned().unwrap_or_default();
        let message = format!("failed to read page {failing} of the list (faultlab page_error)");
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
        return Applied::from(vec![WireAction::Send(Bytes::from(error.to_string()))]);
    }
    let (items, next) = page(list.items, size, index);
    send_page(reply, list.key, items, next)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;

    const TOOLS: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a"},{"name":"b"}]}}"#;

    fn fetch(cursor: Option<&str>) -> serde_json::Value {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        let request = frame(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}).to_string());
        let applied = apply(Reply { frame: &frame(TOOLS), request: Some(&request) }, 2, 1);
        sent(&applied.actions)[0].value().unwrap().clone()
    }

    #[test]
    fn the_first_page_arrives_and_the_second_is_an_error_for_its_id() {
        assert_eq!(fetch(None)["result"], json!({"tools": [{"name": "a"}], "nextCursor": "faultlab-page-1"}));
        let error = fetch(Some("faultlab-page-1"));
        assert_eq!((error["id"].clone(), error["error"]["code"].clone()), (json!(3), json!(-32603)));
        assert!(error["error"]["message"].as_str().unwrap().contains("page 2"));
        assert!(error.get("result").is_none());
    }
}
