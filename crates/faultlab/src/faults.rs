//! `faultlab faults [NAME]`: the fault catalogue, listed or one fault explained, printed from the catalogue's
//! own documentation (`faultlab_engine::catalogue::docs`) and data (category, effect, examples, serve tool).
//!
//! Exit codes: 0 printed; 1 an unknown NAME (the message names the closest ones).

use crate::exit::Failure;
use anyhow::anyhow;
use faultlab_engine::catalogue::docs::{self, Entry};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  faultlab faults               every fault: name, category, what the client \
sees, one line\n  faultlab faults latency       one fault: what it does on the wire, what a robust client does, \
an example rule, where it exists\n\
Exit codes: 0 printed; 1 an unknown NAME (the message names the closest ones).")]
pub struct FaultsArgs {
    /// A fault or preset name (as written in rules: `latency`, `auth_expired`, …). Without it, the whole list.
    pub name: Option<String>,
}

pub fn run(args: FaultsArgs) -> Result<(), Failure> {
    match args.name {
        None => out!("{}", list(&docs::entries())),
        Some(name) => match docs::find(&name) {
            Some(entry) => out!("{}", explain(&entry)),
            None => match faultlab_auth::faults::doc(&name) {
                Some(doc) => out!("{}", explain_auth(&doc)),
                None => return Err(Failure::usage(anyhow!("{}", unknown(&name)))),
            },
        },
    }
    Ok(())
}

/// One line per fault and preset.
fn list(entries: &[Entry]) -> String {
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut text = format!("{:width$}  {:14} {:15} WHAT IT DOES\n", "NAME", "CATEGORY", "CLIENT SEES");
    for entry in entries {
        let category = entry.category.name();
        text.push_str(&format!("{:width$}  {category:14} {:15} {}\n", entry.name, entry.effect.name(), entry.summary));
    }
    text.push_str(&format!(
        "\n{} faults and presets. `faultlab faults NAME` explains one; a rule arms it in `faultlab proxy` \
         (--rules FILE or --fault) and in eval tasks.\n",
        entries.len()
    ));
    text.push_str(&auth_list());
    text
}

/// The auth faults: what `--auth-fault` takes on `faultlab serve --transport http --auth` and `faultlab proxy
/// --listen ... --auth` (they act on the authorization server and the protected resource, not on a reply).
fn auth_list() -> String {
    let names: Vec<&str> = faultlab_auth::faults::DOCS.iter().map(|(name, _)| *name).collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut text = String::from(
        "\nAuth faults (`--auth --auth-fault NAME` or JSON, on `faultlab serve --transport http` and `faultlab proxy \
         --listen`, or a rules file's `auth:` on `faultlab proxy --listen ADDR --auth`; see docs/auth.md):\n",
    );
    for name in names {
        let doc = faultlab_auth::faults::doc(name).unwrap_or_default();
        let summary = doc.lines().next().unwrap_or("").split_once(": ").map_or("", |(_, s)| s);
        text.push_str(&format!("{name:width$}  {summary}\n"));
    }
    text
}

/// An auth fault's doc header, its sections reflowed.
fn explain_auth(doc: &str) -> String {
    let mut lines = doc.splitn(2, '\n');
    let first = lines.next().unwrap_or("");
    let first = match first.split_once(": ") {
        Some((name, summary)) => format!("{} — {summary}", name.trim_matches('`')),
        None => first.to_owned(),
    };
    let mut text = format!(
        "{first}\nan auth fault: `--auth --auth-fault` on `faultlab serve --transport http` and `faultlab proxy \
         --listen`, or a rules file's `auth:` on `faultlab proxy --listen ADDR --auth`\n"
    );
    let body = lines.next().unwrap_or("");
    for section in body.split("## ").filter(|s| !s.trim().is_empty()) {
        let (title, body) = section.split_once('\n').unwrap_or((section, ""));
        text.push_str(&format!("\n{}\n{}", title.trim(), reflow(body.trim())));
    }
    // The example's fault (`--auth-fault '{...}'`), as a rules file writes it.
    let example = body.split("--auth-fault '").nth(1).and_then(|rest| rest.split('\'').next());
    if let Some(fault) = example.and_then(|json| faultlab_auth::AuthFault::parse(json).ok()) {
        text.push_str(&format!(
            "\nIn a rules file (faultlab proxy --listen ADDR --auth --rules FILE)\n{}",
            indent(&auth_rules_file(&fault))
        ));
    }
    text
}

/// The rules file (YAML) that plays `fault`: aimed at the first `write_file` call when it acts at a request,
/// otherwise as the example gives it (a `match` would be refused, saying where the fault acts).
fn auth_rules_file(fault: &faultlab_auth::AuthFault) -> String {
    match fault.acts_elsewhere() {
        None => format!(
            "auth:\n  fault: {{ type: {} }}\n  match: {{ method: tools/call, tool: write_file, nth: 1 }}\n",
            fault.name()
        ),
        Some(elsewhere) => {
            let json = serde_json::to_string(fault).expect("plain data serialises");
            format!("# {} acts {elsewhere}: no `match`\nauth:\n  fault: {json}\n", fault.name())
        }
    }
}

/// The inline rule (`--fault`) that arms `example` on every tool call.
fn inline_rule(example: &str) -> String {
    format!("{{match: {{tool: \"*\"}}, fault: {example}}}")
}

/// The rules file (YAML) that arms `example` on every tool call.
pub fn rules_file(name: &str, example: &str) -> String {
    format!("seed: 1\nrules:\n  - name: {name}\n    match: {{ tool: \"*\" }}\n    fault: {example}\n")
}

/// The rules file (YAML) that arms `example` on the first model request (`faultlab model --rules`).
fn model_rules_file(name: &str, example: &str) -> String {
    format!("seed: 1\nrules:\n  - name: {name}\n    match: {{ nth: 1 }}\n    fault: {example}\n")
}

/// Everything the catalogue knows about one fault.
fn explain(entry: &Entry) -> String {
    let mut text = format!("{} — {}\n", entry.name, entry.summary);
    text.push_str(&format!("category: {}; the client sees: {}", entry.category.name(), entry.effect.name()));
    if let Some(fault) = entry.preset_of {
        text.push_str(&format!("; a preset, read and recorded as `{fault}`"));
    }
    if !entry.aliases.is_empty() {
        text.push_str(&format!("; also written as {}", entry.aliases.join(", ")));
    }
    text.push('\n');
    // The file's sections as written, except its example, which is shown below as a rule.
    for section in entry.sections.iter().filter(|s| s.title != docs::EXAMPLE) {
        text.push_str(&format!("\n{}\n{}", section.title, reflow(&section.text)));
    }
    let example = entry.examples[0];
    let fault = serde_json::from_str::<faultlab_engine::FaultKind>(example).ok();
    // A fault of the model hop only is put on model requests (the first, here): the model endpoint has no tools.
    let model_only = fault.as_ref().is_some_and(faultlab_engine::FaultKind::model_only);
    let rules = if model_only { model_rules_file(entry.name, example) } else { rules_file(entry.name, example) };
    text.push_str(&format!("\nExample rule (a rules file, e.g. faults.yaml)\n{}", indent(&rules)));
    for other in &entry.examples[1..] {
        text.push_str(&format!("  other example: {other}\n"));
    }
    text.push_str("\nWhere it exists\n");
    // A stream fault needs a response stream: over stdio the reply passes and the fault is recorded as skipped.
    let on_stream = serde_json::from_str::<faultlab_engine::FaultKind>(example).is_ok_and(|f| f.on_stream());
    let fronts = if on_stream {
        "the Streamable HTTP front (`--listen`; over stdio it is recorded as skipped)"
    } else {
        "both fronts (stdio and Streamable HTTP)"
    };
    let serve_only = fault.as_ref().and_then(faultlab_engine::FaultKind::serve_only);
    if model_only {
        text.push_str(
            "  faultlab proxy and faultlab eval: refused (a fault of the model hop: it has no meaning on the MCP wire)\n",
        );
    } else if let Some(why) = serve_only {
        // A task's own behaviour: the proxy and eval's rules refuse it, saying so.
        text.push_str(&format!("  faultlab proxy and faultlab eval: refused ({why})\n"));
    } else {
        text.push_str(&format!(
            "  faultlab proxy, {fronts}: --rules faults.yaml, or inline:\n    \
             faultlab proxy --fault '{}' -- <your server>\n",
            inline_rule(example)
        ));
        text.push_str("  faultlab eval: a task's `faults:` (the same rule format)\n");
    }
    if fault.as_ref().is_some_and(|f| faultlab_model::hop::HopFault::of(f).is_some()) {
        text.push_str(
            "  faultlab model: --rules faults.yaml, on the model hop (match by method, nth, after, every, probability; \
             docs/model.md)\n",
        );
    }
    match entry.serve_tool {
        Some(tool) => {
            let over = tool.restriction();
            let arms = tool.arms_what();
            text.push_str(&format!("  faultlab serve: the `{}` tool arms it {arms}{over}\n", tool.name))
        }
        None if model_only => text.push_str("  faultlab serve: no (it serves MCP, not a model API)\n"),
        None => {
            text.push_str("  faultlab serve: no tool arms it (put the proxy in front of `faultlab serve` instead)\n")
        }
    }
    text
}

fn indent(text: &str) -> String {
    text.lines().map(|line| format!("  {line}\n")).collect()
}

/// A section's text reflowed to the terminal's usual 100 columns, indented by two: each paragraph, and each list
/// item (`- `) in it, becomes one wrapped block.
fn reflow(text: &str) -> String {
    let mut out = Vec::new();
    for paragraph in text.split("\n\n") {
        let mut items: Vec<String> = Vec::new();
        for line in paragraph.lines() {
            match items.last_mut() {
                Some(item) if !line.starts_with("- ") => {
                    item.push(' ');
                    item.push_str(line.trim());
                }
                _ => items.push(line.trim().to_owned()),
            }
        }
        let blocks: Vec<String> = items
            .iter()
            .map(|item| {
                let hang = if item.starts_with("- ") { "    " } else { "  " };
                let options = textwrap::Options::new(100).initial_indent("  ").subsequent_indent(hang);
                textwrap::fill(item, options)
            })
            .collect();
        out.push(blocks.join("\n"));
    }
    out.join("\n\n") + "\n"
}

/// The error for a name the catalogue does not know, naming the closest names.
fn unknown(name: &str) -> String {
    let entries = docs::entries();
    let names = entries.iter().flat_map(|e| std::iter::once(e.name.to_owned()).chain(e.aliases.iter().cloned()));
    let wanted = name.to_ascii_lowercase().replace('-', "_");
    let mut close: Vec<(f64, String)> = names
        .map(|candidate| {
            let score = if candidate.contains(&wanted) || (wanted.len() >= 4 && wanted.contains(&candidate)) {
                1.0
            } else {
                strsim::jaro_winkler(&wanted, &candidate)
            };
            (score, candidate)
        })
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let close: Vec<String> = close.into_iter().take(3).map(|(_, n)| n).collect();
    if close.is_empty() {
        format!("no fault is called {name:?}; `faultlab faults` lists them all")
    } else {
        format!("no fault is called {name:?}; did you mean {}? (`faultlab faults` lists them all)", close.join(", "))
    }
}
