//! The JSON Schemas in `schemas/` are generated from the Rust types; this test fails when they drift.
//! Regenerate with `FAULTLAB_UPDATE_SCHEMAS=1 cargo test -p faultlab --test it schemas`.

use std::path::PathBuf;

fn check(name: &str, schema: schemars::Schema) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas").join(name);
    let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    if std::env::var_os("FAULTLAB_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        shipped == generated,
        "{} is out of date; run FAULTLAB_UPDATE_SCHEMAS=1 cargo test -p faultlab --test it schemas",
        path.display()
    );
}

#[test]
fn shipped_schemas_match_the_types() {
    check("diagnostic-event.schema.json", schemars::schema_for!(faultlab_engine::recorder::Record));
    check("fault.schema.json", schemars::schema_for!(faultlab_engine::FaultKind));
    check("scenario.schema.json", schemars::schema_for!(faultlab_run::scenario::Scenario));
    check("target.schema.json", schemars::schema_for!(faultlab_run::target::TargetFile));
    check("rules.schema.json", schemars::schema_for!(faultlab_proxy::rules::RulesFile));
    check("task.schema.json", schemars::schema_for!(faultlab_eval::task::Task));
    check("oracle.schema.json", schemars::schema_for!(faultlab_eval::oracle::Oracle));
    check("baseline.schema.json", schemars::schema_for!(faultlab_run::baseline::Baseline));
    check("claim.schema.json", schemars::schema_for!(faultlab_eval::contract::Claim));
    check("agent-task.schema.json", schemars::schema_for!(faultlab_eval::contract::AgentTask));
    check("explore-oracle.schema.json", schemars::schema_for!(faultlab_explore::oracle::ExploreOracle));
    check("model-script.schema.json", schemars::schema_for!(faultlab_model::script::Script));
}
