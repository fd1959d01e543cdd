//! `types::names`: every unit enum decoded through the shared name visitor reads back what
//! serde's derived `Serialize` writes, for every variant, and rejects anything else with
//! serde's own messages.

use std::fmt::Debug;

use kljson::names::{from_name, Named};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn check<T: Named + Serialize + DeserializeOwned + PartialEq + Debug>() {
    let type_name = std::any::type_name::<T>();
    assert_eq!(T::VARIANTS.len(), T::NAMES.len(), "{type_name}");
    for (variant, name) in T::VARIANTS.iter().zip(T::NAMES) {
        assert_eq!(
            serde_json::to_value(variant).expect("serialize"),
            Value::String(name.to_string()),
            "{type_name}::{variant:?} is written as {name:?}"
        );
        assert_eq!(from_name::<T>(name), Some(*variant), "{type_name}");
        let back: T = serde_json::from_str(&format!("\"{name}\"")).expect(name);
        assert_eq!(back, *variant, "{type_name}");
        // From a `Value` too (settings and some replies are decoded from one).
        let back: T = serde_json::from_value(Value::String(name.to_string())).expect(name);
        assert_eq!(back, *variant, "{type_name}");
        // An escaped string (not borrowed from the input) decodes the same.
        let escaped = format!("\"{}\"", name.replace('_', "\\u005f"));
        assert_eq!(serde_json::from_str::<T>(&escaped).expect(name), *variant);
    }
    assert_eq!(from_name::<T>("no_such_variant"), None, "{type_name}");
    let err = serde_json::from_str::<T>("\"no_such_variant\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("unknown variant `no_such_variant`, expected "),
        "{type_name}: {err}"
    );
    let err = serde_json::from_str::<T>("5").unwrap_err().to_string();
    assert!(
        err.starts_with("invalid type: integer `5`, expected variant identifier"),
        "{type_name}: {err}"
    );
}

#[test]
fn every_named_enum_reads_back_what_it_writes() {
    use knowledgelens::{llm, protocol, settings, state, tools, types};
    check::<settings::WebSearch>();
    check::<types::source::SourceKind>();
    check::<types::search::SearchErrorKind>();
    check::<types::error::LlmErrorKind>();
    check::<types::chat::Role>();
    check::<protocol::SearchOfferAnswer>();
    check::<protocol::ApiErrorKind>();
    check::<llm::provider::Provider>();
    check::<tools::ToolErrorKind>();
    check::<tools::Risk>();
    check::<state::search::SearchMode>();
    check::<state::search::Verdict>();
    check::<state::summary::SummaryStage>();
    check::<state::RunStatus>();
    check::<state::SynthesisReason>();
    check::<state::StopReason>();
    check::<state::config::ReadingLevel>();
    check::<state::config::PriceSource>();
}
