//! What one request may cost the endpoint. Parsed JSON costs far more than its size (about 75 bytes for each
//! value of `[{},{},…]`, three bytes of text), so the body is bounded twice: in bytes when it is read, and in
//! JSON values, counted on the bytes before anything is built.

use http::StatusCode;

/// Default largest request body (4 MiB): a long conversation with long tool results (the interop matrix's
/// largest, an `oversized_response` of 1 MB, fits with room to spare). `--max-request-bytes` raises it.
pub const MAX_REQUEST_BYTES: usize = 4 << 20;

/// Most JSON values a request body may hold (100 000; a conversation of a few thousand messages with tool
/// schemas holds a few tens of thousands). At about 75 bytes a parsed value, at most ~8 MB of parsing per request
/// whatever its shape; the text of strings costs its own size.
pub const MAX_JSON_VALUES: usize = 100_000;

/// Default ceiling on what the requests being read and parsed hold at once, across the endpoint (256 MiB: a dozen
/// of the costliest requests). A request that would pass it gets 503 with `Retry-After`.
pub const REQUEST_MEMORY_BUDGET: usize = 256 << 20;

/// What one parsed JSON value is counted as costing, in bytes (measured: about 75 for each value of `[{},…]`).
pub const VALUE_BYTES: usize = 80;

/// A ceiling on the bytes held by requests being read and parsed, shared by every request of one endpoint: the
/// HTTP fronts' response budget, given a limit of its own.
pub use faultlab_http::body::{Budget, Held};

/// How many JSON values `bytes` hold, counted without parsing, or `None` past `limit`: an upper bound, one for
/// the root, one per `,` and one per `{` or `[` outside strings (a container's first element is counted by its
/// bracket). Invalid JSON is counted the same way; the parser then says what is wrong with it.
pub fn values(bytes: &[u8], limit: usize) -> Option<usize> {
    let count = faultlab_http::cost::json_elements(bytes, limit);
    (count <= limit).then_some(count)
}

/// Why a body that was not read whole was refused, from the status the body reader gave.
pub fn unread(status: StatusCode, max_bytes: usize) -> String {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => format!(
            "the request body is over {max_bytes} bytes, the most faultlab model reads (raise it with \
             --max-request-bytes)"
        ),
        StatusCode::REQUEST_TIMEOUT => "the request body stopped arriving before its end".to_owned(),
        _ => "the request body could not be read".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_outside_strings_as_an_upper_bound() {
        let count = |text: &str| values(text.as_bytes(), 64).unwrap();
        assert_eq!(count("{}"), 2, "the root and its bracket: an upper bound");
        assert_eq!(count(r#"{"a":1,"b":[2,3]}"#), 5, "object, 1, array, 2, 3");
        assert_eq!(count("[{},{},{}]"), 7, "at most twice the values: the brackets and commas");
        assert_eq!(count(r#"{"text":"a,b,[c],{d} \" , \\"}"#), 2, "brackets and commas in strings are text");
        assert_eq!(values(b"[0,0,0,0]", 4), None, "past the limit");
        assert_eq!(values(b"[0,0,0,0]", 5), Some(5));
    }

    #[test]
    fn the_budget_refuses_what_would_pass_it_and_takes_back_what_is_dropped() {
        let budget = Budget::new(100);
        let mut first = budget.take(60).unwrap();
        assert!(budget.take(41).is_none(), "60 + 41 > 100");
        assert!(!first.grow(41));
        assert!(first.grow(40));
        assert_eq!(budget.held(), 100);
        drop(first);
        assert_eq!(budget.held(), 0);
        assert!(budget.take(100).is_some());
    }
}
