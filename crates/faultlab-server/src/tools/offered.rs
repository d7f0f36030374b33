//! The lab's own resources and prompts: plain, correct items, enough of them (12 each) that the standing
//! pagination fault `list_pagination {list: resources | prompts}` arms has several pages to break. Reading a
//! resource or getting a prompt never fails on purpose; the faults act on the lists.

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, Role,
};

/// How many resources and how many prompts the server offers: with the default page size of 5, three pages.
pub const ITEMS: usize = 12;

/// The URI of resource `n` (1-based).
pub fn uri(n: usize) -> String {
    format!("faultlab://lab/note-{n:02}")
}

/// The name of prompt `n` (1-based).
pub fn prompt_name(n: usize) -> String {
    format!("lab_prompt_{n:02}")
}

fn note_text(n: usize) -> String {
    format!("Lab note {n} of {ITEMS}: a correct resource; list_pagination with list resources breaks the list's pages.")
}

/// Every resource, in list order.
pub fn resources() -> Vec<Resource> {
    (1..=ITEMS)
        .map(|n| {
            Resource::new(uri(n), format!("note-{n:02}"))
                .with_description(format!("Lab note {n} of {ITEMS}"))
                .with_mime_type("text/plain")
                .with_size(note_text(n).len() as u64)
        })
        .collect()
}

/// The resource at `uri`, or -32002 (resource not found) naming it.
pub fn read(request: &ReadResourceRequestParams) -> Result<ReadResourceResult, ErrorData> {
    let found = (1..=ITEMS).find(|&n| uri(n) == request.uri);
    let Some(n) = found else {
        return Err(ErrorData::resource_not_found(format!("no resource {:?}", request.uri), None));
    };
    Ok(ReadResourceResult::new(vec![ResourceContents::text(note_text(n), uri(n))]))
}

/// Every prompt, in list order; each takes an optional `topic`.
pub fn prompts() -> Vec<Prompt> {
    let topic = || vec![PromptArgument::new("topic").with_description("What to ask about (optional)")];
    (1..=ITEMS)
        .map(|n| Prompt::new(prompt_name(n), Some(format!("Lab prompt {n} of {ITEMS}")), Some(topic())))
        .collect()
}

/// Prompt `name` with its `topic`, or -32602 naming the prompt.
pub fn get(request: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    let found = (1..=ITEMS).find(|&n| prompt_name(n) == request.name);
    let Some(n) = found else {
        return Err(ErrorData::invalid_params(format!("no prompt {:?}", request.name), None));
    };
    let topic = request.arguments.as_ref().and_then(|a| a.get("topic")).and_then(|t| t.as_str()).unwrap_or("faults");
    let text = format!("Lab prompt {n}: explain how an MCP client should recover from {topic}.");
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
        .with_description(format!("Lab prompt {n} of {ITEMS}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_item_can_be_read_or_got_and_unknown_ones_are_errors() {
        for resource in resources() {
            let read = read(&ReadResourceRequestParams::new(resource.uri.clone())).unwrap();
            assert_eq!(read.contents.len(), 1, "{}", resource.uri);
        }
        let missing = read(&ReadResourceRequestParams::new("faultlab://lab/note-13")).unwrap_err();
        assert!(missing.message.contains("note-13"), "{missing:?}");
        for prompt in prompts() {
            assert_eq!(get(&GetPromptRequestParams::new(prompt.name.clone())).unwrap().messages.len(), 1);
        }
        let missing = get(&GetPromptRequestParams::new("lab_prompt_00")).unwrap_err();
        assert_eq!(missing.code.0, -32602);
    }
}
