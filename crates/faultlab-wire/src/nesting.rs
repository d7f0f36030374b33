//! A nesting-depth limit for every JSON or YAML file the tool reads (rules, scenarios, targets, tasks, oracles,
//! reports, traces), checked on the raw text before any parser sees it.
//!
//! Parsers pay for depth before they refuse it: 100,000 levels of YAML cost tens of seconds (quadratic) before
//! the error. This scan is one pass over the bytes, so a pathological file is refused in milliseconds, with the
//! line where the limit was crossed. It over-approximates rather than under: a bracket inside a YAML plain scalar
//! (`a[0]`) may count, which real files never pile up 128 deep.

/// Deepest nesting a file may have: serde_json's own recursion limit, so a JSON file the parser would accept is
/// never refused here.
pub const MAX_NESTING: usize = 128;

/// A file nested deeper than [`MAX_NESTING`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: nested deeper than {limit} levels (flatten it; the limit keeps parsing fast)")]
pub struct TooDeep {
    /// 1-based line where the limit was crossed.
    pub line: usize,
    pub limit: usize,
}

/// The syntax to scan for: YAML adds indentation, `- ` items, comments, single quotes and block scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

/// Refuses `text` if it nests deeper than [`MAX_NESTING`]: open `[`/`{` outside strings, plus (YAML) the block
/// collections the line sits in, by indentation and by `- `/`? ` indicators at its start.
pub fn check(text: &str, syntax: Syntax) -> Result<(), TooDeep> {
    check_with_limit(text, syntax, MAX_NESTING)
}

/// [`check`] with another limit (tests use small ones).
pub fn check_with_limit(text: &str, syntax: Syntax, limit: usize) -> Result<(), TooDeep> {
    let yaml = syntax == Syntax::Yaml;
    let bytes = text.as_bytes();
    let too_deep = |line| Err(TooDeep { line, limit });
    let mut line = 1;
    // Open flow collections (`[`, `{`) and, for YAML, the indentation of each enclosing block collection.
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    // Inside a quoted string: its quote byte.
    let mut quote: Option<u8> = None;
    // The indentation of the line that opened a YAML block scalar (`|`, `>`): more indented lines are its text.
    let mut block_scalar: Option<usize> = None;
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        if line_start && yaml && quote.is_none() && flow == 0 {
            line_start = false;
            let indent = bytes[i..].iter().take_while(|&&b| b == b' ').count();
            let rest = &bytes[i + indent..];
            let blank = rest.first().is_none_or(|&b| matches!(b, b'\n' | b'\r' | b'#'));
            if let Some(parent) = block_scalar {
                if blank || indent > parent {
                    i += rest.iter().position(|&b| b == b'\n').map_or(rest.len() + indent, |n| indent + n);
                    continue;
                }
                block_scalar = None;
            }
            if blank {
                i += indent;
                continue;
            }
            while indents.last().is_some_and(|&last| last >= indent) {
                indents.pop();
            }
            indents.push(indent);
            i += indent;
            // `- - - x` nests one sequence per indicator on a single line.
            let mut depth = indents.len();
            while i + 1 < bytes.len() && matches!(bytes[i], b'-' | b'?') && matches!(bytes[i + 1], b' ' | b'\n') {
                depth += 1;
                i += 1;
                while i < bytes.len() && bytes[i] == b' ' {
                    i += 1;
                }
            }
            if depth > limit {
                return too_deep(line);
            }
            continue;
        }
        line_start = false;
        let b = bytes[i];
        let prev = if i == 0 { b'\n' } else { bytes[i - 1] };
        match quote {
            Some(b'"') if b == b'\\' => i += 1,
            Some(q) if b == q => {
                // '' inside a single-quoted YAML string is an escaped quote, not its end.
                if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 1;
                } else {
                    quote = None;
                }
            }
            Some(_) if b == b'\n' => line += 1,
            Some(_) => {}
            None => match b {
                b'\n' => {
                    line += 1;
                    line_start = true;
                }
                b'"' if !yaml || starts_node(prev) => quote = Some(b),
                b'\'' if yaml && starts_node(prev) => quote = Some(b),
                b'#' if yaml && matches!(prev, b' ' | b'\t' | b'\n') => {
                    i += bytes[i..].iter().position(|&c| c == b'\n').map_or(bytes.len() - i, |n| n) - 1;
                }
                b'[' | b'{' if !yaml || flow > 0 || matches!(prev, b' ' | b'\t' | b'\n') => {
                    flow += 1;
                    if flow + if yaml { indents.len() } else { 0 } > limit {
                        return too_deep(line);
                    }
                }
                b']' | b'}' if flow > 0 => flow -= 1,
                b'|' | b'>'
                    if yaml && flow == 0 && matches!(prev, b' ' | b'\n') && ends_block_header(&bytes[i + 1..]) =>
                {
                    block_scalar = Some(indents.last().copied().unwrap_or(0));
                }
                _ => {}
            },
        }
        i += 1;
    }
    Ok(())
}

/// Whether a quote after this byte opens a quoted scalar (in YAML a quote inside a plain scalar, as in `it's`,
/// is just a character).
fn starts_node(prev: u8) -> bool {
    matches!(prev, b' ' | b'\t' | b'\n' | b'[' | b'{' | b',' | b':' | b'-' | b'?')
}

/// After `|` or `>`: only chomping and indentation indicators, spaces, and a comment up to the end of the line.
fn ends_block_header(rest: &[u8]) -> bool {
    let mut k = rest.iter().take_while(|&&b| matches!(b, b'0'..=b'9' | b'+' | b'-')).count();
    k += rest[k..].iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    rest.get(k).is_none_or(|&b| matches!(b, b'\n' | b'\r' | b'#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str, syntax: Syntax, limit: usize) -> bool {
        check_with_limit(text, syntax, limit).is_ok()
    }

    #[test]
    fn json_brackets_count_outside_strings_only() {
        assert!(depth_ok(r#"{"a": [1, {"b": 2}]}"#, Syntax::Json, 3));
        assert_eq!(check_with_limit(r#"{"a": [1, {"b": [2]}]}"#, Syntax::Json, 3), Err(TooDeep { line: 1, limit: 3 }));
        assert!(depth_ok(r#"{"a": "[[[[[[\"{{{{"}"#, Syntax::Json, 1));
        // Lines of a trajectory each start at depth 0; the error names the deep one.
        let lines = "{\"a\": 1}\n{\"b\": [[[1]]]}\n";
        assert_eq!(check_with_limit(lines, Syntax::Json, 3), Err(TooDeep { line: 2, limit: 3 }));
    }

    #[test]
    fn yaml_counts_indentation_items_and_flow() {
        let nested = "a:\n  b:\n    c:\n      d: 1\n";
        assert!(depth_ok(nested, Syntax::Yaml, 4));
        assert_eq!(check_with_limit(nested, Syntax::Yaml, 3), Err(TooDeep { line: 4, limit: 3 }));
        assert_eq!(check_with_limit("x: 1\n- - - - y\n", Syntax::Yaml, 4), Err(TooDeep { line: 2, limit: 4 }));
        assert_eq!(check_with_limit("a:\n  b: [[{c: 1}]]\n", Syntax::Yaml, 4), Err(TooDeep { line: 2, limit: 4 }));
        assert!(depth_ok("a:\n  b: [[{c: 1}]]\n", Syntax::Yaml, 5));
        // Dedenting closes collections.
        assert!(depth_ok("a:\n  b: 1\nc:\n  d: 1\ne: 1\n", Syntax::Yaml, 2));
    }

    #[test]
    fn yaml_text_that_only_looks_nested_is_not_counted() {
        let text = "goal: it's fine, isn't it\nregex: a[0]{2}\nq: '[[[['\nd: \"{{{{\"\nc: x # [[[[\n";
        assert!(depth_ok(text, Syntax::Yaml, 1), "{:?}", check_with_limit(text, Syntax::Yaml, 1));
        let block = "description: |\n  [[[[ {{{{\n  - - - - -\n      deep text\nnext: 1\n";
        assert!(depth_ok(block, Syntax::Yaml, 1));
        // After the block scalar ends, counting resumes.
        assert!(!depth_ok(&format!("{block}x: [[1]]\n"), Syntax::Yaml, 2));
    }

    #[test]
    fn a_hundred_thousand_levels_are_refused_on_the_first_line_past_the_limit() {
        let flow = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(check(&flow, Syntax::Json), Err(TooDeep { line: 1, limit: MAX_NESTING }));
        assert_eq!(check(&flow, Syntax::Yaml), Err(TooDeep { line: 1, limit: MAX_NESTING }));
        assert!(check(&"- ".repeat(100_000), Syntax::Yaml).is_err());
        let keys: String = (0..200).map(|n| format!("{}k:\n", " ".repeat(n))).collect();
        assert_eq!(check(&keys, Syntax::Yaml), Err(TooDeep { line: MAX_NESTING + 1, limit: MAX_NESTING }));
    }

    #[test]
    fn every_example_and_schema_of_the_repository_passes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut pending = vec![root.join("examples"), root.join("schemas")];
        let mut checked = 0;
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                    continue;
                }
                let syntax = match path.extension().and_then(|e| e.to_str()) {
                    Some("json" | "jsonl") => Syntax::Json,
                    Some("yaml" | "yml") => Syntax::Yaml,
                    _ => continue,
                };
                let text = std::fs::read_to_string(&path).unwrap();
                assert_eq!(check(&text, syntax), Ok(()), "{}", path.display());
                checked += 1;
            }
        }
        assert!(checked > 20, "{checked} files");
    }
}
