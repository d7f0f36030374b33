//! Scenarios about the tool surface: `toolSurface` turns on the reference client's tool list (listed before the
//! first call, again after `notifications/tools/list_changed` or a -32602 for a listed tool, at most `pageLimit`
//! pages a listing), with `resources: true` / `prompts: true` its resources and prompts lists too (again after their
//! own `list_changed`), and a step's `expect.surface` checks what the lists said about its call.

use faultlab_client::surface::{ListEnd, ListName, SurfaceObservation, Validation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `toolSurface` in a scenario file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SurfaceOptions {
    /// Pages one listing fetches at most (1 to 1000, default 20); the listing then stops and says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_limit: Option<u32>,
    /// Also keep the resources list: listed before the first call and after `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resources: bool,
    /// Also keep the prompts list: listed before the first call and after `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompts: bool,
}

impl SurfaceOptions {
    /// The lists kept beside the tools.
    pub fn lists(&self) -> Vec<ListName> {
        [(self.resources, ListName::Resources), (self.prompts, ListName::Prompts)]
            .into_iter()
            .filter_map(|(on, list)| on.then_some(list))
            .collect()
    }

    pub fn page_limit(&self) -> u32 {
        self.page_limit.unwrap_or(faultlab_client::surface::DEFAULT_PAGE_LIMIT)
    }

    pub fn validate(&self) -> Result<(), String> {
        let max = faultlab_client::surface::MAX_PAGE_LIMIT;
        match self.page_limit {
            Some(limit) if limit == 0 || limit > max => {
                Err(format!("toolSurface.pageLimit must be between 1 and {max}"))
            }
            _ => Ok(()),
        }
    }
}

/// `expect.surface`: what the tool list said about the call. Every field is optional; all given ones must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SurfaceExpect {
    /// Listings made before the call because of a change (list_changed, or a -32602 for a listed tool): exactly.
    pub relists: Option<u32>,
    /// The called tool is in the latest list.
    pub listed: Option<bool>,
    /// The called tool was listed earlier and is not any more.
    pub vanished: Option<bool>,
    /// The arguments fit the latest listed `inputSchema`.
    pub arguments_valid: Option<bool>,
    /// How the last listing before the call ended: `complete`, `page_limit`, `repeated_cursor` or `error`.
    pub list_end: Option<ListEnd>,
    /// Pages the listings before the call fetched, at most.
    pub max_pages: Option<u32>,
    /// Tools the last listing kept, at least.
    pub min_tools: Option<u32>,
    /// Names the last listing saw more than once: exactly this many.
    pub duplicate_names: Option<u32>,
    /// The result against the tool's `outputSchema`: `valid`, `invalid`, `missing`, `skipped_is_error` or
    /// `no_schema`.
    pub validation: Option<Validation>,
    /// A JSON text block differs from `structuredContent`.
    pub content_disagrees: Option<bool>,
    /// What the resources list the client keeps says (needs `toolSurface.resources`).
    pub resources: Option<ListExpect>,
    /// What the prompts list the client keeps says (needs `toolSurface.prompts`).
    pub prompts: Option<ListExpect>,
}

/// `expect.surface.resources` and `.prompts`: the listings of that list before the call and what it then holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListExpect {
    /// Listings of the list made before the call because of its `list_changed`: exactly.
    pub relists: Option<u32>,
    /// How its last listing before the call ended.
    pub list_end: Option<ListEnd>,
    /// Pages its listings before the call fetched, at most.
    pub max_pages: Option<u32>,
    /// Items the client holds after the listings, at least.
    pub min_items: Option<u32>,
    /// An item (a resource's URI, a prompt's name) the client holds.
    pub holds: Option<String>,
    /// An item the client no longer holds (or never did).
    pub lacks: Option<String>,
}

impl ListExpect {
    fn check(&self, list: ListName, seen: &SurfaceObservation, failures: &mut Vec<String>) {
        let what = list.key();
        let Some(held) = seen.held.get(&list) else {
            failures.push(format!("expected {what} observations; give the scenario toolSurface.{what}"));
            return;
        };
        if let Some(n) = self.relists
            && seen.relists_of(list) != n
        {
            failures.push(format!("expected {what} relists {n}, observed {}", seen.relists_of(list)));
        }
        if let Some(end) = self.list_end {
            let got = seen.last_of(list).map(|l| l.end);
            if got != Some(end) {
                use erased::Named;
                failures.push(format!(
                    "expected the last {what} listing to end {}, observed {}",
                    end.name(),
                    got.name()
                ));
            }
        }
        if let Some(max) = self.max_pages
            && seen.pages_of(list) > max
        {
            failures.push(format!("expected at most {max} {what} pages fetched, observed {}", seen.pages_of(list)));
        }
        if let Some(min) = self.min_items
            && (held.len() as u32) < min
        {
            failures.push(format!("expected at least {min} {what} held, observed {}", held.len()));
        }
        if let Some(item) = &self.holds
            && !held.contains(item)
        {
            failures.push(format!("expected {what} to hold {item:?}, observed {held:?}"));
        }
        if let Some(item) = &self.lacks
            && held.contains(item)
        {
            failures.push(format!("expected {what} to lack {item:?}, it is still held"));
        }
    }
}

impl SurfaceExpect {
    /// Every expectation `seen` does not meet (all of them, when the scenario kept no tool surface).
    pub fn check(&self, seen: Option<&SurfaceObservation>, failures: &mut Vec<String>) {
        let Some(seen) = seen else {
            failures.push("expected tool surface observations; give the scenario toolSurface".into());
            return;
        };
        let last = seen.last();
        let mut differs = |what: &str, want: &dyn erased::Named, got: &dyn erased::Named| {
            if want.name() != got.name() {
                failures.push(format!("expected {what} {}, observed {}", want.name(), got.name()));
            }
        };
        if let Some(n) = self.relists {
            differs("relists", &n, &seen.relists());
        }
        if let Some(b) = self.listed {
            differs("the tool listed", &b, &seen.listed);
        }
        if let Some(b) = self.vanished {
            differs("the tool vanished", &b, &seen.vanished);
        }
        if let Some(b) = self.arguments_valid {
            differs("arguments valid against the listed inputSchema", &b, &seen.arguments_valid);
        }
        if let Some(end) = self.list_end {
            differs("the last listing to end", &end, &last.map(|l| l.end));
        }
        if let Some(n) = self.duplicate_names {
            differs("duplicate names", &n, &last.map(|l| l.duplicate_names.len() as u32));
        }
        if let Some(v) = self.validation {
            differs("output validation", &v, &seen.validation);
        }
        if let Some(b) = self.content_disagrees {
            differs("content disagreeing with structuredContent", &b, &seen.content_disagrees);
        }
        if let Some(max) = self.max_pages
            && seen.pages() > max
        {
            failures.push(format!("expected at most {max} pages fetched, observed {}", seen.pages()));
        }
        if let Some(min) = self.min_tools {
            let got = last.map_or(0, |l| l.tools);
            if got < min {
                failures.push(format!("expected the last listing to keep at least {min} tools, observed {got}"));
            }
        }
        for (list, expect) in [(ListName::Resources, &self.resources), (ListName::Prompts, &self.prompts)] {
            if let Some(expect) = expect {
                expect.check(list, seen, failures);
            }
        }
    }
}

/// Values an expectation compares, by how a report says them.
mod erased {
    use faultlab_client::surface::{ListEnd, Validation};

    pub trait Named {
        fn name(&self) -> String;
    }

    impl Named for u32 {
        fn name(&self) -> String {
            self.to_string()
        }
    }

    impl Named for bool {
        fn name(&self) -> String {
            self.to_string()
        }
    }

    impl Named for ListEnd {
        fn name(&self) -> String {
            serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
        }
    }

    impl Named for Validation {
        fn name(&self) -> String {
            serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
        }
    }

    impl<T: Named> Named for Option<T> {
        fn name(&self) -> String {
            self.as_ref().map_or("none".into(), Named::name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultlab_client::surface::{ListReason, Listing};

    fn seen() -> SurfaceObservation {
        let listing = |reason, pages, end| Listing {
            list: ListName::Tools,
            reason,
            pages,
            tools: 3,
            end,
            duplicate_names: vec!["a".into()],
            detail: None,
        };
        SurfaceObservation {
            listings: vec![
                listing(ListReason::Initial, 1, ListEnd::Complete),
                listing(ListReason::ListChanged, 20, ListEnd::PageLimit),
            ],
            listed: false,
            vanished: true,
            arguments_valid: None,
            validation: Some(Validation::SkippedIsError),
            validation_detail: None,
            content_disagrees: false,
            held: Default::default(),
        }
    }

    #[test]
    fn resources_and_prompts_expectations_read_their_own_listings_and_what_is_held() {
        let mut seen = seen();
        let prompts = Listing {
            list: ListName::Prompts,
            reason: ListReason::ListChanged,
            pages: 2,
            tools: 11,
            end: ListEnd::RepeatedCursor,
            duplicate_names: vec![],
            detail: None,
        };
        seen.listings.push(prompts);
        seen.held.insert(ListName::Prompts, vec!["p1".into(), "p2".into()]);
        let expect = SurfaceExpect {
            relists: Some(1),
            list_end: Some(ListEnd::PageLimit),
            prompts: Some(ListExpect {
                relists: Some(1),
                list_end: Some(ListEnd::Complete),
                max_pages: Some(1),
                holds: Some("p3".into()),
                lacks: Some("p1".into()),
                min_items: Some(2),
            }),
            resources: Some(ListExpect::default()),
            ..SurfaceExpect::default()
        };
        let mut failures = Vec::new();
        expect.check(Some(&seen), &mut failures);
        assert_eq!(
            failures,
            [
                "expected resources observations; give the scenario toolSurface.resources",
                "expected the last prompts listing to end complete, observed repeated_cursor",
                "expected at most 1 prompts pages fetched, observed 2",
                "expected prompts to hold \"p3\", observed [\"p1\", \"p2\"]",
                "expected prompts to lack \"p1\", it is still held",
            ],
            "the tools expectations read the tools listings only"
        );
    }

    #[test]
    fn each_unmet_expectation_is_one_line_naming_what_was_observed() {
        let expect = SurfaceExpect {
            relists: Some(1),
            vanished: Some(true),
            list_end: Some(ListEnd::Complete),
            max_pages: Some(10),
            validation: Some(Validation::Invalid),
            duplicate_names: Some(1),
            ..SurfaceExpect::default()
        };
        let mut failures = Vec::new();
        expect.check(Some(&seen()), &mut failures);
        assert_eq!(
            failures,
            [
                "expected the last listing to end complete, observed page_limit",
                "expected output validation invalid, observed skipped_is_error",
                "expected at most 10 pages fetched, observed 21",
            ]
        );
        let mut failures = Vec::new();
        SurfaceExpect::default().check(None, &mut failures);
        assert!(failures[0].contains("toolSurface"));
    }

    #[test]
    fn surface_expectations_need_tool_surface_and_the_page_limit_is_bounded() {
        use crate::scenario::Scenario;
        let step = "steps:\n- call: {tool: ping}\n  expect: {surface: {listEnd: complete}}\n";
        let err = Scenario::parse(&format!("name: x\n{step}"), false).unwrap_err();
        assert!(err.contains("toolSurface"), "{err}");
        let scenario = Scenario::parse(&format!("name: x\ntoolSurface: {{pageLimit: 3}}\n{step}"), false).unwrap();
        assert_eq!(scenario.plan().unwrap()[0].surface.unwrap().page_limit(), 3);
        let err = Scenario::parse(&format!("name: x\ntoolSurface: {{pageLimit: 0}}\n{step}"), false).unwrap_err();
        assert!(err.contains("pageLimit"), "{err}");
        let err = Scenario::parse(
            "name: x\ntoolSurface: {}\nsteps:\n- call: {tool: ping}\n  expect: {surface: {pages: 2}}\n",
            false,
        )
        .unwrap_err();
        assert!(err.contains("pages"), "unknown keys are named: {err}");
    }
}
