//! `broken_pagination`: a list the server really sent in one reply is handed out in pages whose cursors misbehave.
//!
//! **What it does on the wire.** It acts on replies to `tools/list`, `resources/list`,
//! `resources/templates/list` and `prompts/list` (match the rule on the method; it fires on each such request).
//! The list the upstream returned is cut into pages of `page_size` items, and the request's `cursor` says which
//! page is sent: no cursor is the first page, `faultlab-page-N` (a cursor the fault issued) is page N + 1. The
//! upstream still receives the client's requests, cursors included, and the fault pages what it answers, so it
//! needs an upstream that answers a cursor it never issued with its whole list, as servers that do not paginate
//! do. The `variant` says how the cursors break:
//! - `stuck`: every page is the first, with `nextCursor` `faultlab-page-1`: the cursor never advances (a client
//!   that follows it fetches the same tools forever: in one public report 8 tools became about 160).
//! - `cycle`: page 1 leads to cursor A (`faultlab-page-1`, page 2), A to B (`faultlab-page-2`, page 1 again), B
//!   back to A: the pages repeat with no end.
//! - `empty-continuation`: the first page's `nextCursor` is `""`, and a request with cursor `""` gets the rest.
//!   Since 2026-07-28 an empty string is a cursor like any other; a client that reads it as the end loses the
//!   tools past the first page.
//! - `empty-end`: pages are right, but the last one carries `nextCursor: ""` where 2025-11-25 servers mean the end,
//!   and a request with cursor `""` gets the first page again (as a server that reads `""` as no cursor does): a
//!   client that follows it loops.
//! - `repeated-name`: pages are right, but each page after the first starts with the last item of the page before,
//!   so one name is listed twice.
//! - `endless`: after the real pages, empty pages follow, each with a next cursor, up to a million pages: the
//!   client must bound what it fetches.
//!
//! A reply that is not such a list, an error, a list the upstream paginates itself (it has a `nextCursor`), or a
//! request whose cursor the fault did not issue, is sent unchanged with a `fault_skipped` reason.
//!
//! **What a robust client should do.** Bound the pages and items it fetches (a page limit, a repeated-cursor
//! check), de-duplicate names and say when it saw a name twice, follow `""` as a cursor in 2026-07-28 sessions, and
//! stop with a clear error (keeping what it has) rather than loop or hang.
//!
//! **Example.** `{"type": "broken_pagination", "variant": "stuck"}`
//!
//! **How it is graded.** By what the client fetched: a client passes when it stops within its bound, reports the
//! loop or repetition, and (for `empty-continuation`) still sees every tool. Looping until a deadline, an
//! unbounded number of pages, or a tool list missing or repeating names it uses, fails.

use super::{Applied, Reply, rewrite_result, within};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn default_page_size() -> u32 {
    1
}

fault! {
    /// A list reply (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`) cut into pages of
    /// `page_size` items whose cursors break as `variant` says.
    pub struct BrokenPagination {
        pub variant: PaginationVariant,
        /// Items per page, 1 to 1000 (default 1).
        #[serde(default = "default_page_size")]
        pub page_size: u32,
    }
    category: Protocol,
    effect: WrongData,
    serve_tool: Some(ServeTool::standing("list_pagination")),
    examples: [
        r#"{"type": "broken_pagination", "variant": "stuck"}"#,
        r#"{"type": "broken_pagination", "variant": "cycle"}"#,
        r#"{"type": "broken_pagination", "variant": "empty-continuation"}"#,
        r#"{"type": "broken_pagination", "variant": "empty-end"}"#,
        r#"{"type": "broken_pagination", "variant": "repeated-name", "page_size": 2}"#,
        r#"{"type": "broken_pagination", "variant": "endless"}"#,
    ],
    validate: |fault| within("page_size", fault.page_size, 1, MAX_PAGE_SIZE),
    apply: |fault, reply, _| apply(reply, fault.variant, fault.page_size as usize),
}

/// Largest `page_size`.
pub const MAX_PAGE_SIZE: u32 = 1000;
/// Most pages an `endless` list has: far more than any client should fetch, and still an end.
pub const ENDLESS_PAGES: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PaginationVariant {
    /// Every page is the first, with the same next cursor.
    Stuck,
    /// Cursor A leads to B and B back to A.
    Cycle,
    /// `""` is the first page's next cursor, and a real one (2026-07-28).
    EmptyContinuation,
    /// `""` is the last page's next cursor (the end, in 2025-11-25); following it starts over.
    EmptyEnd,
    /// Each page after the first repeats the last item of the page before.
    RepeatedName,
    /// Empty pages follow the real ones, each with a next cursor (a million pages).
    Endless,
}

/// The cursor of page `index` (0-based), as the fault issues it.
pub fn cursor(index: usize) -> String {
    format!("faultlab-page-{index}")
}

/// What a list reply is and which page its request asks for, or why the fault cannot page it.
pub(super) struct ListReply<'a> {
    /// The result member holding the list (`tools`, `resources`, `resourceTemplates`, `prompts`).
    pub key: &'static str,
    pub items: &'a [Value],
    /// The request's cursor: `None` without one.
    pub cursor: Option<&'a str>,
}

/// The list in `reply`, if it is a whole (unpaginated) list reply.
pub(super) fn list_reply<'a>(reply: &Reply<'a>) -> Result<ListReply<'a>, String> {
    let result = reply.frame.value().and_then(|m| m.get("result")).and_then(Value::as_object);
    let Some(result) = result else { return Err("the reply has no result to page".into()) };
    let by_method = reply.request.and_then(|r| r.method()).and_then(|method| match method {
        "tools/list" => Some("tools"),
        "resources/list" => Some("resources"),
        "resources/templates/list" => Some("resourceTemplates"),
        "prompts/list" => Some("prompts"),
        _ => None,
    });
    let key = by_method
        .or_else(|| ["tools", "resources", "resourceTemplates", "prompts"].into_iter().find(|k| result.contains_key(*k)))
        .ok_or("the reply is not a tools, resources, resource templates or prompts list")?;
    let items = result.get(key).and_then(Value::as_array).ok_or(format!("the result has no {key} array"))?;
    if result.contains_key("nextCursor") {
        return Err("the upstream paginates the list itself (its reply has a nextCursor)".into());
    }
    let cursor = reply.request.and_then(|r| r.value()).and_then(|r| r.pointer("/params/cursor")).and_then(Value::as_str);
    Ok(ListReply { key, items, cursor })
}

/// The page index a cursor the fault issued names; `None` for one it did not issue.
pub(super) fn page_of(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("faultlab-page-")?.parse().ok()
}

/// Page `index` of `items` and its next cursor in correct pagination.
pub(super) fn page(items: &[Value], size: usize, index: usize) -> (Vec<Value>, Option<String>) {
    let start = index.saturating_mul(size).min(items.len());
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| cursor(index + 1));
    (items[start..end].to_vec(), next)
}

/// The reply with its list replaced by `items` and `nextCursor` set (or removed).
pub(super) fn send_page(reply: Reply<'_>, key: &str, items: Vec<Value>, next: Option<String>) -> Applied {
    Applied::from(rewrite_result(reply, |result: &mut Map<String, Value>| {
        result.insert(key.into(), Value::Array(items));
        match next {
            Some(next) => result.insert("nextCursor".into(), Value::String(next)),
            None => result.shift_remove("nextCursor"),
        };
        true
    }))
}

fn apply(reply: Reply<'_>, variant: PaginationVariant, size: usize) -> Applied {
    let list = match list_reply(&reply) {
        Ok(list) => list,
        Err(reason) => return Applied::skipped(reply, reason),
    };
    let items = list.items;
    let pages = items.len().div_ceil(size).max(1);
    let index = match (list.cursor, variant) {
        (None, _) => 0,
        (Some(""), PaginationVariant::EmptyContinuation) => 1,
        (Some(""), PaginationVariant::EmptyEnd) => 0,
        (Some(cursor), _) => match page_of(cursor) {
            Some(index) => index,
            None => {
                let reason = format!("the request's cursor {cursor:?} is not one the fault issued");
                return Applied::skipped(reply, reason);
            }
        },
    };
    let (items, next) = match variant {
        PaginationVariant::Stuck => (page(items, size, 0).0, Some(cursor(1))),
        PaginationVariant::Cycle => match index {
            0 => (page(items, size, 0).0, Some(cursor(1))),
            1 => (page(items, size, 1.min(pages - 1)).0, Some(cursor(2))),
            _ => (page(items, size, 0).0, Some(cursor(1))),
        },
        PaginationVariant::EmptyContinuation => {
            let (page_items, next) = page(items, size, index);
            (page_items, if index == 0 { next.map(|_| String::new()) } else { next })
        }
        PaginationVariant::EmptyEnd => {
            let (page_items, next) = page(items, size, index);
            (page_items, Some(next.unwrap_or_default()))
        }
        PaginationVariant::RepeatedName => {
            let (mut page_items, next) = page(items, size, index);
            if index > 0 && index < pages {
                page_items.insert(0, items[index * size - 1].clone());
            }
            (page_items, next)
        }
        PaginationVariant::Endless => {
            let (page_items, _) = page(items, size, index);
            (page_items, (index + 1 < ENDLESS_PAGES).then(|| cursor(index + 1)))
        }
    };
    send_page(reply, list.key, items, next)
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use serde_json::json;

    const TOOLS: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#;

    fn list_request(cursor: Option<&str>) -> faultlab_wire::Frame {
        let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
        frame(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}).to_string())
    }

    /// The names and the next cursor the client gets for `cursor`.
    fn fetch(variant: PaginationVariant, size: usize, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
        let request = list_request(cursor);
        let applied = apply(Reply { frame: &frame(TOOLS), request: Some(&request) }, variant, size);
        assert_eq!(applied.skipped, None, "{variant:?} {cursor:?}");
        let result = sent(&applied.actions)[0].value().unwrap()["result"].clone();
        let names = result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned());
        (names.collect(), result["nextCursor"].as_str().map(str::to_owned))
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn stuck_never_advances_and_cycle_comes_back() {
        use PaginationVariant::*;
        for cursor in [None, Some("faultlab-page-1"), Some("faultlab-page-7")] {
            assert_eq!(fetch(Stuck, 1, cursor), (names(&["a"]), Some("faultlab-page-1".into())));
        }
        assert_eq!(fetch(Cycle, 1, None), (names(&["a"]), Some("faultlab-page-1".into())));
        assert_eq!(fetch(Cycle, 1, Some("faultlab-page-1")), (names(&["b"]), Some("faultlab-page-2".into())));
        assert_eq!(fetch(Cycle, 1, Some("faultlab-page-2")), (names(&["a"]), Some("faultlab-page-1".into())));
    }

    #[test]
    fn an_empty_cursor_continues_or_ends_by_variant() {
        use PaginationVariant::*;
        assert_eq!(fetch(EmptyContinuation, 2, None), (names(&["a", "b"]), Some(String::new())));
        assert_eq!(fetch(EmptyContinuation, 2, Some("")), (names(&["c"]), None));
        assert_eq!(fetch(EmptyEnd, 2, None), (names(&["a", "b"]), Some("faultlab-page-1".into())));
        assert_eq!(fetch(EmptyEnd, 2, Some("faultlab-page-1")), (names(&["c"]), Some(String::new())));
        assert_eq!(fetch(EmptyEnd, 2, Some("")), (names(&["a", "b"]), Some("faultlab-page-1".into())), "starts over");
    }

    #[test]
    fn repeated_names_and_endless_pages() {
        use PaginationVariant::*;
        assert_eq!(fetch(RepeatedName, 2, None), (names(&["a", "b"]), Some("faultlab-page-1".into())));
        assert_eq!(fetch(RepeatedName, 2, Some("faultlab-page-1")), (names(&["b", "c"]), None));
        assert_eq!(fetch(Endless, 2, Some("faultlab-page-1")), (names(&["c"]), Some("faultlab-page-2".into())));
        assert_eq!(fetch(Endless, 2, Some("faultlab-page-5")), (vec![], Some("faultlab-page-6".into())));
        let last = cursor(ENDLESS_PAGES - 1);
        assert_eq!(fetch(Endless, 2, Some(&last)), (vec![], None), "a million pages, then the end");
    }

    #[test]
    fn what_it_cannot_page_goes_through_unchanged_with_a_reason() {
        let skipped = |reply: &str, cursor: Option<&str>| {
            let request = list_request(cursor);
            let applied = apply(Reply { frame: &frame(reply), request: Some(&request) }, PaginationVariant::Stuck, 1);
            assert_eq!(applied.actions, unchanged(Reply { frame: &frame(reply), request: None }));
            applied.skipped.unwrap()
        };
        assert!(skipped(TOOLS, Some("upstream-own")).contains("not one the fault issued"));
        let paged = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[],"nextCursor":"x"}}"#;
        assert!(skipped(paged, None).contains("paginates the list itself"));
        assert!(skipped(RESULT, None).contains("no tools array"));
        let error = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#;
        assert!(skipped(error, None).contains("no result"));
    }

    #[test]
    fn prompts_and_resources_are_paged_under_their_own_key() {
        let prompts = r#"{"jsonrpc":"2.0","id":3,"result":{"prompts":[{"name":"p"},{"name":"q"}]}}"#;
        let request = frame(r#"{"jsonrpc":"2.0","id":3,"method":"prompts/list"}"#);
        let applied = apply(Reply { frame: &frame(prompts), request: Some(&request) }, PaginationVariant::Stuck, 1);
        let result = sent(&applied.actions)[0].value().unwrap()["result"].clone();
        assert_eq!(result, json!({"prompts": [{"name": "p"}], "nextCursor": "faultlab-page-1"}));
    }
}
