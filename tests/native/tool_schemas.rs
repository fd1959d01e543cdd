//! The built-in tools' argument schemas ship as JSON text (`src/tools/schemas.gen.json`, so
//! `schemars` stays out of the wasm); this checks the text is exactly what `schemars` derives
//! from the argument types now, and that every built-in tool's definition carries it. To
//! rewrite the file after changing an argument type: `KL_BLESS=1 cargo test --test native tool_schemas::`.

use knowledgelens::tools::schemas::{self, render};
use knowledgelens::tools::{derived_schemas as derived, with_reasoning, ToolBox};

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(schemas::PATH)
}

#[test]
fn the_shipped_schemas_are_what_schemars_derives() {
    let want = render(&derived());
    if std::env::var_os("KL_BLESS").is_some() {
        std::fs::write(path(), &want).expect("write the schemas");
    }
    let have = std::fs::read_to_string(path()).expect("src/tools/schemas.gen.json exists");
    assert_eq!(
        have, want,
        "src/tools/schemas.gen.json is stale: KL_BLESS=1 cargo test --test native tool_schemas::"
    );
}

#[test]
fn every_built_in_tool_is_defined_with_its_derived_schema() {
    let derived = derived();
    let tools = ToolBox::builtin();
    let defined: Vec<_> = tools.definitions().collect();
    assert_eq!(
        defined.len(),
        derived.len(),
        "one derived schema per built-in tool"
    );
    for definition in defined {
        let (_, schema) = derived
            .iter()
            .find(|(name, _)| *name == definition.name)
            .unwrap_or_else(|| panic!("no derived schema for {}", definition.name));
        assert_eq!(
            *definition.parameters,
            with_reasoning(schema.clone()),
            "{}",
            definition.name
        );
        assert_eq!(definition.parameters["type"], "object");
    }
    assert_eq!(schemas::builtin("no_such_tool"), serde_json::Value::Null);
}

/// Every built-in tool says what it does: its section of `src/tools/tools.tpl`, whole (a
/// template that failed to load or a missing section would leave it empty).
#[test]
fn every_built_in_tool_has_its_description_from_the_template() {
    let template = include_str!("../../src/tools/tools.tpl");
    let tools = ToolBox::builtin();
    let mut count = 0;
    for definition in tools.definitions() {
        let description = &definition.description;
        assert!(
            description.len() > 40,
            "{}: {description:?}",
            definition.name
        );
        let section = format!(
            "<section name=\"{}\" optional>\n{description}\n</section>",
            definition.name
        );
        assert!(template.contains(&section), "{}", definition.name);
        count += 1;
    }
    assert_eq!(count, 9);
}
