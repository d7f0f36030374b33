//! `--baseline FILE` and `--update-baseline` for `run` and `eval`: the exit code from the checks measured against
//! the known failures (`faultlab_run::baseline`), or the file rewritten from them.

use crate::cli::BaselineArgs;
use crate::exit::Failure;
use anyhow::{Context as _, anyhow};
use faultlab_run::baseline::{Baseline, LoadError};

/// The baseline to check against: none without `--baseline`, or when it is to be rewritten.
pub fn load(args: &BaselineArgs) -> Result<Option<Baseline>, LoadError> {
    match &args.baseline {
        Some(path) if !args.update_baseline => Baseline::load(path).map(Some),
        _ => Ok(None),
    }
}

/// With `--update-baseline`, writes the failures to the file; with a baseline, the verdict from it. `None` without
/// either: the command's own verdict stands. Checks are (id, passed), the ones that could not run left out.
pub fn finish<'a>(
    args: &BaselineArgs,
    baseline: Option<&Baseline>,
    checks: impl IntoIterator<Item = (&'a str, bool)>,
) -> Option<Result<(), Failure>> {
    let path = args.baseline.as_ref()?;
    if args.update_baseline {
        let written = Baseline::of(checks);
        let result = std::fs::write(path, written.to_yaml())
            .with_context(|| format!("cannot write the baseline {}", path.display()))
            .map_err(Failure::runtime)
            .map(|()| {
                errln!(
                    "faultlab: baseline: {} written to {}",
                    crate::console::count(written.failures.len(), "known failure", "known failures"),
                    path.display()
                )
            });
        return Some(result);
    }
    let check = baseline?.check(checks);
    let shown = path.display();
    errln!(
        "faultlab: baseline: {} failed as expected ({shown})",
        crate::console::count(check.expected.len(), "known failure", "known failures")
    );
    for id in &check.new {
        errln!("faultlab: baseline: new failure: {id}");
    }
    for id in &check.stale {
        errln!("faultlab: baseline: stale: {id} passes now; remove it from {shown}");
    }
    Some(if check.passed() {
        Ok(())
    } else {
        Err(Failure::failed(anyhow!(
            "against the baseline {shown}: {}, {}",
            crate::console::count(check.new.len(), "new failure", "new failures"),
            crate::console::count(check.stale.len(), "stale entry", "stale entries")
        )))
    })
}
