//! Prints each text of `tests/fixtures/tokens.json` with its script, its o200k_base count
//! and the estimator's features, as TSV, for refitting the weights in
//! `src/types/tokens.rs`: `cargo run --example token_features --features testing`.

use knowledgelens::testing::tokens::fixture_texts;
use knowledgelens::types::tokens::token_features;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens.json");
    let text = std::fs::read_to_string(path).expect("the token fixture");
    for t in fixture_texts(&text).expect("the token fixture's JSON") {
        let values: Vec<String> = token_features(&t.text)
            .values()
            .iter()
            .map(f64::to_string)
            .collect();
        println!("FEAT\t{}\t{}\t{}", t.script, t.tokens, values.join("\t"));
    }
}
