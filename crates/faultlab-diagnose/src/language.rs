//! The word lists the heuristics read text with: how a tool message says it failed, how an agent's message admits
//! a failure or claims success, which tool names are writes. English only, lower-cased, matched on whole words.

use crate::model::Outcome;

/// Phrases that admit something went wrong (or that the agent is retrying).
const FAILURE_PHRASES: &[&str] = &[
    "error",
    "errors",
    "fail",
    "failed",
    "fails",
    "failing",
    "failure",
    "unsuccessful",
    "unable",
    "couldn't",
    "could not",
    "can't",
    "cannot",
    "didn't",
    "did not",
    "wasn't",
    "was not",
    "not able",
    "timed out",
    "timeout",
    "time out",
    "unavailable",
    "unreachable",
    "problem",
    "issue",
    "sorry",
    "unfortunately",
    "went wrong",
    "no response",
    "try again",
    "retry",
    "retrying",
    // A refusal, a limit or an outage told in the words a service's failure takes.
    "rejected",
    "refused",
    "denied",
    "forbidden",
    "not found",
    "rate limit",
    "rate limited",
    "throttled",
    "outage",
    "offline",
    "not responding",
    "unresponsive",
    "is down",
    "was down",
    "are down",
    "were down",
];

/// Phrases that tell a not-found failure (`ENOENT`, `404`, `no such file`), and only that one: after another
/// failure, "there is no …" is the answer an agent that swallowed the error gives.
const NOT_FOUND_PHRASES: &[&str] = &[
    "does not exist",
    "doesn't exist",
    "no such",
    "missing",
    "there is no",
    "there's no",
    "is not there",
    "isn't there",
];

/// Words that claim a task was carried out.
const SUCCESS_WORDS: &[&str] = &[
    "success",
    "successful",
    "successfully",
    "succeeded",
    "done",
    "completed",
    "complete",
    "created",
    "sent",
    "saved",
    "updated",
    "deleted",
    "booked",
    "scheduled",
    "confirmed",
    "finished",
    "worked",
];

/// Words that turn the success word after them into an admission (`not sent`, `never completed`).
const NEGATIONS: &[&str] = &["not", "never", "no"];

/// Verbs in a tool's name that make it a write (a call with a side effect).
const WRITE_VERBS: &[&str] = &[
    "add", "append", "assign", "book", "buy", "cancel", "charge", "commit", "create", "delete", "insert", "move",
    "order", "patch", "pay", "post", "publish", "purchase", "push", "put", "refund", "register", "remove", "rename",
    "reserve", "save", "send", "set", "submit", "transfer", "update", "upload", "upsert", "write",
];

/// Verbs in a tool's name that make it a read, when they come before any write verb (`get_order`).
const READ_VERBS: &[&str] = &[
    "check", "count", "describe", "download", "fetch", "find", "get", "list", "lookup", "query", "read", "search",
    "show", "status", "view",
];

/// Lower-cased words, apostrophes kept (curly ones straightened).
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace('\u{2019}', "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches('\'').to_owned())
        .collect()
}

fn contains_phrase(words: &[String], phrase: &str) -> bool {
    let parts: Vec<&str> = phrase.split(' ').collect();
    words.windows(parts.len()).any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
}

/// Whether an agent's message admits a failure (or says it is retrying).
pub fn admits_failure(text: &str) -> bool {
    let words = words(text);
    FAILURE_PHRASES.iter().any(|p| contains_phrase(&words, p))
        || words.windows(2).any(|w| {
            (NEGATIONS.contains(&w[0].as_str()) || w[0].ends_with("n't")) && SUCCESS_WORDS.contains(&w[1].as_str())
        })
}

/// Whether an agent's message tells the user of a failure whose tool message was `failure`: it admits a failure
/// ([`admits_failure`]), names the failure's HTTP status (a 4xx or 5xx the failure's text holds: "the converter
/// returned a 503"), or the failure was a not-found and the message says the thing is not there.
pub fn tells_failure(text: &str, failure: Option<&str>) -> bool {
    if admits_failure(text) {
        return true;
    }
    let Some(failure) = failure else { return false };
    let (said, failed) = (words(text), words(failure));
    let status = |w: &String| w.len() == 3 && w.parse::<u16>().is_ok_and(|code| (400..600).contains(&code));
    let not_found = ["not found", "no such", "enoent", "does not exist", "doesn't exist", "404"]
        .iter()
        .any(|p| failure.to_lowercase().contains(p));
    failed.iter().filter(|w| status(w)).any(|code| said.contains(code))
        || (not_found && NOT_FOUND_PHRASES.iter().any(|p| contains_phrase(&said, p)))
}

/// Words too common in failures and answers to tell anything: a failure's distinctive words are the others.
const COMMON_WORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "been",
    "before",
    "call",
    "could",
    "error",
    "errors",
    "exception",
    "from",
    "have",
    "into",
    "message",
    "occurred",
    "please",
    "request",
    "response",
    "result",
    "server",
    "service",
    "should",
    "some",
    "than",
    "that",
    "their",
    "then",
    "there",
    "this",
    "tool",
    "traceback",
    "were",
    "what",
    "when",
    "which",
    "while",
    "with",
    "would",
    "your",
];

/// The words of `failure` (a failed call's tool message) that name something: four letters or more, not common,
/// and in none of the texts `before` it (so a word the user or the call said first is not one).
pub fn distinctive_words(failure: &str, before: &[String]) -> Vec<String> {
    let said: std::collections::HashSet<String> = before.iter().flat_map(|t| words(t)).collect();
    let mut found: Vec<String> = words(failure)
        .into_iter()
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic))
        .filter(|w| !COMMON_WORDS.contains(&w.as_str()) && !said.contains(w))
        .collect();
    found.dedup();
    found
}

/// Whether `text` uses any of `words` (whole words, lower-cased).
pub fn says_any(text: &str, wanted: &[String]) -> bool {
    let said = words(text);
    wanted.iter().any(|w| said.contains(w))
}

/// Whether an agent's message claims success, without admitting a failure.
pub fn claims_success(text: &str) -> bool {
    !admits_failure(text) && words(text).iter().any(|w| SUCCESS_WORDS.contains(&w.as_str()))
}

/// How a tool message's text reports its outcome. A failure is a text that starts with `Error`, `Exception`,
/// `Traceback` or `An error occurred` (what agent frameworks put in a tool message for a failed call); its kind
/// comes from the words in it.
pub fn tool_status(text: &str) -> Outcome {
    let lower = text.trim_start().to_lowercase();
    let failed = ["error", "exception", "traceback", "an error occurred"].iter().any(|p| lower.starts_with(p));
    if failed { failure_kind(&lower) } else { Outcome::Ok }
}

/// The kind of a failure from its text: a timeout, a lost connection, or another error.
pub fn failure_kind(text: &str) -> Outcome {
    let lower = text.to_lowercase();
    if ["timed out", "timeout", "deadline exceeded"].iter().any(|p| lower.contains(p)) {
        Outcome::Timeout
    } else if ["connection lost", "connection reset", "connection closed", "disconnected", "broken pipe"]
        .iter()
        .any(|p| lower.contains(p))
    {
        Outcome::Lost
    } else {
        Outcome::Error
    }
}

/// Whether a tool name reads as a write: the first of its words (split at `_ - . /` and camelCase) that is a known
/// verb is a write verb (`create_order`, `calendar.book`; not `get_order`), or the name is listed in `extra`.
pub fn is_write(tool: &str, extra: &[String]) -> bool {
    if extra.iter().any(|t| t == tool) {
        return true;
    }
    let mut spaced = String::new();
    for (i, c) in tool.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            spaced.push(' ');
        }
        spaced.push(c);
    }
    let words = words(&spaced.replace(['_', '-', '.', '/'], " "));
    let verb = words.iter().find(|w| WRITE_VERBS.contains(&w.as_str()) || READ_VERBS.contains(&w.as_str()));
    verb.is_some_and(|w| WRITE_VERBS.contains(&w.as_str()))
}

/// Phrases of an error about the moment, not the request: the same call can pass later (rate limits, overload,
/// unavailability, HTTP 429/500/502/503/504). Such an error says nothing about the arguments. A 500 can also be a
/// server's bug on these arguments, but the SDKs retry it with backoff as transient (AWS's standard retry mode,
/// Google's API guidance), so a bounded retry of it is no harm.
const TRANSIENT_PHRASES: &[&str] = &[
    "rate limit",
    "rate limited",
    "ratelimit",
    "too many requests",
    "429",
    // A bare 500 is too common a number in errors about arguments ("at most 500 items").
    "internal server error",
    "http 500",
    "status 500",
    "error 500",
    "502",
    "503",
    "504",
    "bad gateway",
    "gateway timeout",
    "service unavailable",
    "unavailable",
    "overloaded",
    "try again",
    "retry after",
    "temporarily",
    "throttled",
    "quota",
];

/// Whether an error's text names a transient condition (see `TRANSIENT_PHRASES`).
pub fn is_transient(text: &str) -> bool {
    let words = words(text);
    TRANSIENT_PHRASES.iter().any(|p| contains_phrase(&words, p))
}

/// Whether a result's text says the thing it was asked to make exists already.
pub fn says_already_done(text: &str) -> bool {
    let words = words(text);
    ["already", "duplicate", "conflict"].iter().any(|p| contains_phrase(&words, p))
}

/// Whether an argument name is an idempotency key (which makes a repeated write safe).
pub fn is_idempotency_key(name: &str) -> bool {
    let flat: String = name.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase();
    flat.contains("idempotency")
        || ["requestid", "clientrequestid", "clienttoken", "dedupkey", "dedupekey"].contains(&flat.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admissions_and_claims() {
        assert!(admits_failure("Sorry, I couldn't book it."));
        assert!(admits_failure("The order was not sent."));
        assert!(admits_failure("It wasn’t completed"));
        assert!(!admits_failure("Your meeting is booked for 3pm."));
        assert!(admits_failure("The converter was down, so I used the exchange rate."));
        assert!(admits_failure("I hit the provider's rate limit on INIT."));
        // "There is no c.txt" tells a not-found, not any failure: after a 500 it is an error swallowed.
        assert!(tells_failure("There is no c.txt here.", Some("Error: ENOENT: no such file or directory")));
        assert!(!tells_failure("There are no open tickets.", Some("Error: internal server error")));
        // The failure's own status named; another number is no mention.
        assert!(tells_failure("The converter returned a 503.", Some("Error: service unavailable (503)")));
        assert!(!tells_failure("There are 503 tickets.", Some("Error: 500 Internal Server Error")));
        assert!(claims_success("Done! Your meeting is booked for 3pm."));
        assert!(!claims_success("The order was not sent."));
        assert!(!claims_success("The capital of France is Paris."));
    }

    #[test]
    fn tool_texts() {
        assert_eq!(tool_status("Error: lab_probe failed: injected tool error"), Outcome::Error);
        assert_eq!(tool_status("Error: timed out after 500 ms"), Outcome::Timeout);
        assert_eq!(tool_status("Error: connection lost: the server closed stdout"), Outcome::Lost);
        assert_eq!(tool_status("lab_probe ok: probe"), Outcome::Ok);
        assert_eq!(tool_status("No errors found"), Outcome::Ok);
        assert!(is_transient("Error: 429 Too Many Requests: rate limit exceeded"));
        assert!(is_transient("Error: HTTP 503: Service unavailable"));
        assert!(is_transient("Error: 500 Internal Server Error"));
        assert!(is_transient("Error: HTTP 500"));
        assert!(!is_transient("Error: `limit` must be at most 500"));
        assert!(!is_transient("Error: `date` must be YYYY-MM-DD, got 12/03"));
    }

    #[test]
    fn write_names() {
        for write in ["create_order", "sendEmail", "calendar.book", "files/write", "SetValue", "order_pizza"] {
            assert!(is_write(write, &[]), "{write}");
        }
        for read in ["lab_probe", "get_order", "search", "listFiles", "settings_read"] {
            assert!(!is_write(read, &[]), "{read}");
        }
        assert!(is_write("lab_probe", &["lab_probe".into()]));
    }
}
