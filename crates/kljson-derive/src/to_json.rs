//! `#[derive(ToJson)]`'s expansion: a writer of the value's JSON, as the derived
//! `serde::Serialize` beside it writes through `serde_json::to_string`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_derive_internals::ast::{Container, Data, Field, Style, Variant};
use serde_derive_internals::attr::TagType;
use syn::{DeriveInput, Ident};

use super::{json_path, transparent_field};

pub(crate) fn expand(input: &DeriveInput, container: &Container) -> syn::Result<TokenStream> {
    let refuse = |what: &str| {
        Err(syn::Error::new_spanned(
            &input.ident,
            format!("ToJson does not implement #[serde({what})]"),
        ))
    };
    if container.attrs.type_into().is_some() {
        return refuse("into = ...");
    }
    if container.attrs.remote().is_some() {
        return refuse("remote = ...");
    }
    for field in container.data.all_fields() {
        if field.attrs.serialize_with().is_some() || field.attrs.getter().is_some() {
            return refuse("serialize_with / getter");
        }
    }
    if let Data::Enum(variants) = &container.data {
        if variants
            .iter()
            .any(|v| v.attrs.serialize_with().is_some() || v.attrs.skip_serializing())
        {
            return refuse("serialize_with / skip_serializing on a variant");
        }
    }

    let json = json_path();
    let ident = &container.ident;
    let (write, fields) = match &container.data {
        Data::Struct(style, fields) => write_struct(container, *style, fields)?,
        Data::Enum(variants) => {
            let (write, fields) = write_enum(container, variants)?;
            (write, Some(fields))
        }
    };
    let write_fields = fields.map(|body| {
        quote! {
            fn write_fields(&self, __obj: &mut #json::Obj<'_>) {
                #body
            }
        }
    });
    let mut generics = container.generics.clone();
    for param in generics.type_params_mut() {
        param.bounds.push(syn::parse_quote!(#json::ToJson));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics #json::ToJson for #ident #ty_generics #where_clause {
            fn write_json(&self, __out: &mut ::std::string::String) {
                #write
            }
            #write_fields
        }
    })
}

/// The statements writing named `fields` (reached by `access(member)`) into `__obj`.
fn write_named(fields: &[Field], access: &dyn Fn(&syn::Member) -> TokenStream) -> TokenStream {
    let json = json_path();
    let writes = fields
        .iter()
        .filter(|f| !f.attrs.skip_serializing())
        .map(|f| {
            let value = access(&f.member);
            let write = if f.attrs.flatten() {
                quote!(#json::ToJson::write_fields(#value, __obj);)
            } else {
                let name = &f.attrs.name().serialize_name().value;
                field_write(name, &value)
            };
            match f.attrs.skip_serializing_if() {
                Some(skip) => quote!(if !#skip(#value) { #write }),
                None => write,
            }
        });
    quote!(#(#writes)*)
}

/// `write_json`'s body and, for a struct with named fields, `write_fields`' body.
fn write_struct(
    container: &Container,
    style: Style,
    fields: &[Field],
) -> syn::Result<(TokenStream, Option<TokenStream>)> {
    let json = json_path();
    if container.attrs.transparent() {
        let inner = transparent_field(container, fields)?;
        let member = &inner.member;
        return Ok((
            quote!(#json::ToJson::write_json(&self.#member, __out);),
            None,
        ));
    }
    Ok(match style {
        Style::Struct => {
            let body = write_named(fields, &|m| quote!(&self.#m));
            (
                quote! {
                    let mut __o = #json::Obj::new(__out);
                    #json::ToJson::write_fields(self, &mut __o);
                    __o.end();
                },
                Some(body),
            )
        }
        Style::Newtype => (quote!(#json::ToJson::write_json(&self.0, __out);), None),
        Style::Tuple => {
            let items = (0..fields.len()).map(syn::Index::from);
            (
                quote! {
                    let mut __a = #json::Arr::new(__out);
                    #(__a.item(&self.#items);)*
                    __a.end();
                },
                None,
            )
        }
        Style::Unit => (quote!(__out.push_str("null");), None),
    })
}

/// `write_json`'s and `write_fields`' bodies for an enum. A variant written as an object
/// writes its members through `__obj` in both (`write_fields` is what `#[serde(flatten)]`
/// of the enum needs); the other forms (a name, `null`, an array) have no fields.
fn write_enum(
    container: &Container,
    variants: &[Variant],
) -> syn::Result<(TokenStream, TokenStream)> {
    let json = json_path();
    let mut json_arms = Vec::new();
    let mut field_arms = Vec::new();
    for v in variants {
        let ident = &v.ident;
        let name = v.attrs.name().serialize_name().value.clone();
        let bindings: Vec<Ident> = (0..v.fields.len())
            .map(|i| format_ident!("__v{}", i))
            .collect();
        let pattern = match v.style {
            Style::Unit => quote!(Self::#ident),
            Style::Newtype | Style::Tuple => quote!(Self::#ident(#(#bindings),*)),
            Style::Struct => {
                let members = v.fields.iter().map(|f| &f.member);
                quote!(Self::#ident { #(#members: #bindings),* })
            }
        };
        let by_member = |m: &syn::Member| {
            let index = v.fields.iter().position(|f| f.member == *m).unwrap_or(0);
            let b = &bindings[index];
            quote!(#b)
        };
        let fields_of = write_named(&v.fields, &by_member);
        let tuple_into = |out: TokenStream| {
            quote! {
                let mut __a = #json::Arr::new(#out);
                #(__a.item(#bindings);)*
                __a.end();
            }
        };
        let struct_into = |out: TokenStream| {
            quote! {
                let mut __inner = #json::Obj::new(#out);
                {
                    let __obj = &mut __inner;
                    #fields_of
                }
                __inner.end();
            }
        };
        // The key of the enum's tag (internally or adjacently tagged), quoted.
        let tag_write = match container.attrs.tag() {
            TagType::Internal { tag } | TagType::Adjacent { tag, .. } => {
                field_write(tag, &quote!(#name))
            }
            _ => quote!(),
        };
        // What the variant writes into an object (`None`: it is not written as one).
        let members: Option<TokenStream> =
            match (container.attrs.tag(), v.style, v.attrs.untagged()) {
                (_, Style::Unit, true) | (TagType::None, Style::Unit, _) => None,
                (_, Style::Newtype, true) | (TagType::None, Style::Newtype, _) => {
                    Some(quote!(#json::ToJson::write_fields(__v0, __obj);))
                }
                (_, Style::Tuple, true) | (TagType::None, Style::Tuple, _) => None,
                (_, Style::Struct, true) | (TagType::None, Style::Struct, _) => {
                    Some(fields_of.clone())
                }
                (TagType::External, Style::Unit, _) => None,
                (TagType::External, Style::Newtype, _) => Some(quote!(__obj.field(#name, __v0);)),
                (TagType::External, Style::Tuple, _) => {
                    let tuple = tuple_into(quote!(__obj.out()));
                    Some(quote! { __obj.key(#name); #tuple })
                }
                (TagType::External, Style::Struct, _) => {
                    let inner = struct_into(quote!(__obj.out()));
                    Some(quote! { __obj.key(#name); #inner })
                }
                (TagType::Internal { .. }, Style::Unit, _) => Some(tag_write.clone()),
                (TagType::Internal { .. }, Style::Newtype, _) => Some(quote! {
                    #tag_write
                    #json::ToJson::write_fields(__v0, __obj);
                }),
                (TagType::Internal { .. }, Style::Struct, _) => Some(quote! {
                    #tag_write
                    #fields_of
                }),
                (TagType::Internal { .. }, Style::Tuple, _) => {
                    return Err(syn::Error::new_spanned(
                        v.original,
                        "serde cannot write a tuple variant of an internally tagged enum",
                    ))
                }
                (TagType::Adjacent { content, .. }, style, _) => {
                    let content_write = match style {
                        Style::Unit => quote!(),
                        Style::Newtype => quote!(__obj.field(#content, __v0);),
                        Style::Tuple => {
                            let tuple = tuple_into(quote!(__obj.out()));
                            quote! { __obj.key(#content); #tuple }
                        }
                        Style::Struct => {
                            let inner = struct_into(quote!(__obj.out()));
                            quote! { __obj.key(#content); #inner }
                        }
                    };
                    Some(quote! {
                        #tag_write
                        #content_write
                    })
                }
            };
        let untagged_newtype = matches!(v.style, Style::Newtype)
            && (v.attrs.untagged() || matches!(container.attrs.tag(), TagType::None));
        let json_body = match &members {
            Some(_) if untagged_newtype => quote!(#json::ToJson::write_json(__v0, __out);),
            Some(members) => quote! {
                let mut __o = #json::Obj::new(__out);
                {
                    let __obj = &mut __o;
                    #members
                }
                __o.end();
            },
            None => match (container.attrs.tag(), v.style, v.attrs.untagged()) {
                (TagType::External, Style::Unit, false) => quote!(#json::write_str(__out, #name);),
                (_, Style::Tuple, _) => tuple_into(quote!(__out)),
                _ => quote!(__out.push_str("null");),
            },
        };
        json_arms.push(quote!(#pattern => { #json_body }));
        let fields_body = members.unwrap_or_default();
        field_arms.push(quote!(#pattern => { #fields_body }));
    }
    Ok((
        quote! {
            #[allow(unused_variables)]
            match self {
                #(#json_arms)*
            }
        },
        quote! {
            #[allow(unused_variables)]
            match self {
                #(#field_arms)*
            }
        },
    ))
}

/// Writes field `name` with `value` into `__obj`: by `field_plain` when the name needs no
/// escaping in JSON (checked here, once), else by `field`.
fn field_write(name: &str, value: &TokenStream) -> TokenStream {
    let plain = name.chars().all(|c| c >= ' ' && c != '"' && c != '\\');
    if plain {
        quote!(__obj.field_plain(#name, #value);)
    } else {
        quote!(__obj.field(#name, #value);)
    }
}
