//! `#[derive(FromJson)]`: a decoder from a parsed `serde_json::Value` for a type that also
//! derives serde's `Serialize`, and a `serde::Deserialize` that goes through it (`from_json`); `#[derive(ToJson)]`:
//! the writer of their JSON (`to_json`). The runtime and the reasons are in
//! `kljson`.
//!
//! The type's `#[serde(...)]` attributes are read by `serde_derive_internals`, serde's own
//! parser of them, so a field's name, default and representation are the ones the derived
//! `Serialize` beside it uses. Attributes this derive does not implement (`from`,
//! `try_from`, `remote`, borrowed lifetimes, more than one `flatten`) are compile errors,
//! never silently ignored.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use serde_derive_internals::ast::{Container, Field};
use serde_derive_internals::{Ctxt, Derive};
use syn::{parse_macro_input, DeriveInput, Ident};

mod from_json;
mod to_json;

/// Derives `kljson::FromJson` and a `serde::Deserialize` through it.
#[proc_macro_derive(FromJson, attributes(serde))]
pub fn derive_from_json(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_with(&input, Derive::Deserialize, from_json::expand)
}

/// Derives `kljson::ToJson`: writes the value as the derived
/// `serde::Serialize` beside it would through `serde_json::to_string` (`tests/native/json.rs`
/// compares the two on the crate's own types).
#[proc_macro_derive(ToJson, attributes(serde))]
pub fn derive_to_json(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive_with(&input, Derive::Serialize, to_json::expand)
}

/// Reads the type's serde attributes as serde does for `derive` and expands it with
/// `expand`; errors become compile errors.
fn derive_with(
    input: &DeriveInput,
    derive: Derive,
    expand: fn(&DeriveInput, &Container) -> syn::Result<TokenStream>,
) -> proc_macro::TokenStream {
    let cx = Ctxt::new();
    let private = Ident::new("__private", Span::call_site());
    let container = Container::from_ast(&cx, input, derive, &private);
    let result = cx.check().and_then(|()| match &container {
        Some(container) => expand(input, container),
        None => Err(syn::Error::new_spanned(input, "unreadable type")),
    });
    match result {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

/// Where the runtime is: the `kljson` crate, a dependency of every crate that derives.
fn json_path() -> TokenStream {
    quote!(::kljson)
}

/// The field a `#[serde(transparent)]` struct stands for (serde's checks mark it).
fn transparent_field<'a>(
    container: &Container,
    fields: &'a [Field<'a>],
) -> syn::Result<&'a Field<'a>> {
    fields
        .iter()
        .find(|f| f.attrs.transparent())
        .ok_or_else(|| syn::Error::new_spanned(&container.ident, "no field to be transparent to"))
}
