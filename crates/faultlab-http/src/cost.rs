//! What parsing a request body may cost. serde_json turns every JSON element into a `Value` of tens of bytes (an
//! empty object in an order-preserving map, about a hundred), and the MCP server parses the body again: one 4 MiB
//! body of `{},{},…` cost `faultlab serve` about 410 MB. A body is counted before it is parsed, in one pass that
//! allocates nothing, and one with more elements than any request needs is refused (413).

use crate::rpc_error;
use axum::response::Response;
use faultlab_wire::MessageId;
use http::StatusCode;

/// Most JSON elements (objects, arrays, and the members and items in them) one request body may hold: 200,000,
/// a few MB of parsed values, against the tens of thousands the largest tool call needs.
pub const MAX_JSON_ELEMENTS: usize = 200_000;

/// The bytes of a body's start its id is read from, when the body is refused before it is parsed.
const ID_PREFIX_BYTES: usize = 4096;

/// The elements in `bytes`, counted up to a little past `max`: one, plus each `{`, `[` and `,` outside strings.
/// Not a validation: a malformed body is counted as well as it can be and left to the parser.
pub fn json_elements(bytes: &[u8], max: usize) -> usize {
    let (mut count, mut in_string, mut escaped) = (1usize, false, false);
    for &byte in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' | b',' => {
                count += 1;
                if count > max {
                    return count;
                }
            }
            _ => {}
        }
    }
    count
}

/// 413 for a body with more than [`MAX_JSON_ELEMENTS`] elements (its id read from its start, when it can be);
/// `None` when it may be parsed.
pub fn check_elements(bytes: &[u8]) -> Option<Response> {
    if json_elements(bytes, MAX_JSON_ELEMENTS) <= MAX_JSON_ELEMENTS {
        return None;
    }
    let id = MessageId::from_prefix(&bytes[..bytes.len().min(ID_PREFIX_BYTES)]).map(|id| id.to_value());
    let message = format!(
        "Request body holds more than {MAX_JSON_ELEMENTS} JSON elements (objects, arrays, their members and items); \
         it is not parsed"
    );
    Some(rpc_error(StatusCode::PAYLOAD_TOO_LARGE, -32600, &message, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_counted_outside_strings_only() {
        // One, plus two objects, an array and two commas.
        assert_eq!(json_elements(br#"{"a":[1,2,{}]}"#, 100), 6);
        assert_eq!(json_elements(br#"{"a":"[,{\",[,"}"#, 100), 2, "brackets and commas in a string do not count");
        assert_eq!(json_elements(&b"{},".repeat(1000), 10), 11, "counting stops past the limit");
    }

    #[test]
    fn a_wide_body_is_refused_with_its_id_and_a_long_string_is_not() {
        let mut wide = br#"{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"x":["#.to_vec();
        wide.extend(b"{},".repeat(MAX_JSON_ELEMENTS));
        wide.extend(b"{}]}}");
        let refused = check_elements(&wide).expect("refused");
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let mut long = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
        long.extend(b",{[".repeat(1_000_000));
        long.extend(b"\"}}");
        assert!(check_elements(&long).is_none(), "a 3 MB string is one element");
    }
}
