//! `faultlab compare A.json B.json`: two eval reports side by side, with a significance test per row.
//!
//! Exit codes: 0 compared; 2 with `--fail-on-regression`, B is significantly worse than A on a row (or a bad
//! argument); 1 a report cannot be read or is not an eval report.

use crate::cli::{CompareArgs, CompareFormat};
use crate::exit::Failure;
use crate::report;
use anyhow::anyhow;
use faultlab_eval::compare;

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    let a = report::read(&args.a)?;
    let b = report::read(&args.b)?;
    let (a_name, b_name) = (args.a.display().to_string(), args.b.display().to_string());
    let comparison = compare::compare(&a_name, &a, &b_name, &b);
    match args.format {
        CompareFormat::Console => out!("{}", compare::console(&comparison)),
        CompareFormat::Json => {
            outln!("{}", serde_json::to_string_pretty(&comparison).expect("plain data serialises"))
        }
        CompareFormat::Md => out!("{}", compare::markdown(&comparison)),
    }
    let worse: Vec<String> = comparison.regressions().map(|r| r.label()).collect();
    if args.fail_on_regression && !worse.is_empty() {
        return Err(Failure::failed(anyhow!(
            "B ({b_name}) is significantly worse than A ({a_name}) on: {}",
            worse.join(", ")
        )));
    }
    Ok(())
}
