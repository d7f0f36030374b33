//! Console: each trace, its findings with evidence and the robust alternative, what was not checked, a total.

use super::{describe, evidence, headline, not_checked, place};
use crate::detect::Diagnosis;
use std::fmt::Write as _;

pub fn render(diagnoses: &[Diagnosis]) -> String {
    let mut out = String::new();
    for d in diagnoses {
        let count = match d.findings.len() {
            0 => "no findings".to_owned(),
            1 => "1 finding".to_owned(),
            n => format!("{n} findings"),
        };
        let _ = writeln!(out, "{}: {} — {count}", d.file, describe(d));
        for f in &d.findings {
            let _ = writeln!(out, "  {} {} at {}", f.severity.name().to_uppercase(), f.kind.name(), place(d, f));
            let _ = writeln!(out, "      {}", f.summary);
            let _ = writeln!(out, "      evidence: {}", evidence(d, f));
            let _ = writeln!(out, "      a robust agent {}", f.robust);
            if let Some(why) = &f.lab_disagreement {
                let _ = writeln!(out, "      against the lab's verdict: {why}");
            }
        }
        for (reason, names) in not_checked(d) {
            let _ = writeln!(out, "  not checked: {} — {reason}", names.join(", "));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", headline(diagnoses));
    out
}
