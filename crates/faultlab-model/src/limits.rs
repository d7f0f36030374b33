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

/// Whether `bytes` hold more than `limit` JSON values, counted without parsing: an upper bound, one for the
/// root, one per `,` and one per `{` or `[` outside strings (a container's first element is counted by its
/// bracket). Invalid JSON is counted the same way; the parser then says what is wrong with it.
pub fn too_many_values(bytes: &[u8], limit: usize) -> bool {
    let (mut count, mut in_string, mut escaped) = (1usize, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b',' | b'{' | b'[' => {
                count += 1;
                if count > limit {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
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
        let count = |text: &str| (1..=64).find(|&limit| !too_many_values(text.as_bytes(), limit)).unwrap();
        assert_eq!(count("{}"), 2, "the root and its bracket: an upper bound");
        assert_eq!(count(r#"{"a":1,"b":[2,3]}"#), 5, "object, 1, array, 2, 3");
        assert_eq!(count("[{},{},{}]"), 7, "at most twice the values: the brackets and commas");
        assert_eq!(count(r#"{"text":"a,b,[c],{d} \" , \\"}"#), 2, "brackets and commas in strings are text");
        assert!(too_many_values("[0,0,0,0]".as_bytes(), 4));
        assert!(!too_many_values("[0,0,0,0]".as_bytes(), 5));
    }
}
