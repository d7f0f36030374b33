//! Layer 5, efficiency (informational): calls, retries, duplicates, fallback depth and duration.

use super::{Efficiency, Run, count};
use std::collections::HashSet;

pub(super) fn efficiency(run: &Run) -> Efficiency {
    let retries = run.keys.windows(2).filter(|w| w[0] == w[1]).count();
    let mut seen = HashSet::new();
    let duplicates = run.keys.iter().filter(|k| !seen.insert(k.as_str())).count();
    let fallbacks: HashSet<&str> =
        run.ev.calls.iter().filter(|c| run.acceptable.find(&c.tool).is_some()).map(|c| c.tool.as_str()).collect();
    Efficiency {
        tool_calls: count(run.ev.calls.len()),
        retries: count(retries),
        duplicates: count(duplicates),
        fallback_depth: count(fallbacks.len()),
        duration_ms: run.ev.duration_ms,
    }
}
