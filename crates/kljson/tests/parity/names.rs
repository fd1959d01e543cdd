//! `named_enum!` against serde's derives: the same enum declared both ways decodes every
//! string the same (value or error message) and writes the same text. A value that is not a
//! string fails with both; serde's derive also reads `{"high": null}` (a unit variant
//! written as a map), which the macro does not, and its message says "expected string or
//! map" where the macro's says "expected variant identifier".

use kljson::names::{from_name, Named};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Tide {
    High,
    Low,
    SlackWater,
}

kljson::named_enum!(Tide {
    High = "high",
    Low = "low",
    SlackWater = "slack_water",
});

/// The same enum with serde's own derived decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum BySerde {
    High,
    Low,
    SlackWater,
}

fn outcomes(value: &Value) -> (String, String, String) {
    let serde: Result<BySerde, _> = serde_json::from_value(value.clone());
    let bridge: Result<Tide, _> = serde_json::from_value(value.clone());
    let json: Result<Tide, _> = kljson::decode(&value.to_string());
    let show = |r: Result<String, String>| match r {
        Ok(v) => format!("ok {v}"),
        Err(e) => format!("err {e}"),
    };
    (
        show(
            serde
                .map(|v| serde_json::to_string(&v).unwrap())
                .map_err(|e| e.to_string()),
        ),
        show(
            bridge
                .map(|v| serde_json::to_string(&v).unwrap())
                .map_err(|e| e.to_string()),
        ),
        show(
            json.map(|v| kljson::to_string(&v))
                .map_err(|e| e.to_string()),
        ),
    )
}

/// Every variant reads back from its name, through the macro's lists and the decoders.
#[test]
fn every_variant_reads_back_from_its_name() {
    assert_eq!(Tide::ALL.len(), Tide::NAMES.len());
    for tide in Tide::ALL {
        assert_eq!(from_name::<Tide>(tide.name()), Some(tide));
        assert_eq!(Tide::from_name(tide.name()), Some(tide));
        let written = serde_json::to_string(&tide).unwrap();
        assert_eq!(written, kljson::to_string(&tide));
        assert_eq!(kljson::decode::<Tide>(&written), Ok(tide));
    }
    assert_eq!(Tide::from_name("High"), None);
    let (serde, bridge, json) = outcomes(&Value::from("neap"));
    assert_eq!(
        serde,
        "err unknown variant `neap`, expected one of `high`, `low`, `slack_water`"
    );
    assert_eq!(bridge, serde);
    assert_eq!(json, serde);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any string decodes as serde's derive decodes it, through the serde bridge and kljson.
    #[test]
    fn names_decode_as_serde_decodes_them(
        value in prop_oneof![
            prop::sample::select(vec!["high", "low", "slack_water", "High", "slack-water", ""])
                .prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::from),
        ]
    ) {
        let (serde, bridge, json) = outcomes(&value);
        prop_assert_eq!(&bridge, &serde);
        prop_assert_eq!(&json, &serde);
    }

    /// A value that is not a string is no variant, with both.
    #[test]
    fn other_values_fail_with_both(
        value in prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::Null),
            Just(serde_json::json!(["high"])),
            Just(serde_json::json!({"neap": null})),
        ]
    ) {
        let (serde, bridge, json) = outcomes(&value);
        prop_assert!(serde.starts_with("err "), "{}", serde);
        prop_assert!(bridge.starts_with("err invalid type"), "{}", bridge);
        prop_assert!(json.starts_with("err invalid type"), "{}", json);
    }
}
