//! `#[derive(FromJson)]`'s expansion: a decoder that takes a struct's fields out of a parsed
//! object one call each, and an enum's variant by its representation.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_derive_internals::ast::{Container, Data, Field, Style, Variant};
use serde_derive_internals::attr::{Default as FieldDefault, TagType};
use syn::DeriveInput;

use super::{json_path, transparent_field};

pub(crate) fn expand(_input: &DeriveInput, container: &Container) -> syn::Result<TokenStream> {
    refuse_unsupported(container)?;

    let ident = &container.ident;
    let name = ident.to_string();
    let (body, into) = match &container.data {
        Data::Struct(style, fields) => struct_body(container, *style, fields, &name)?,
        Data::Enum(variants) => (enum_body(container, variants, &name)?, None),
    };

    let json = json_path();
    let mut generics = container.generics.clone();
    for param in generics.type_params_mut() {
        param.bounds.push(syn::parse_quote!(#json::FromJson));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let mut de_generics = generics.clone();
    de_generics.params.insert(0, syn::parse_quote!('de));
    let (de_impl_generics, _, _) = de_generics.split_for_impl();

    let placeholder = placeholder_body(container)?;
    let decode_into = into.map(|into| {
        quote! {
            fn decode_into(&mut self, value: #json::Value) -> ::core::result::Result<(), #json::Error> {
                #into
            }
        }
    });
    Ok(quote! {
        impl #impl_generics #json::FromJson for #ident #ty_generics #where_clause {
            fn from_json(value: #json::Value) -> ::core::result::Result<Self, #json::Error> {
                #body
            }

            #decode_into

            fn placeholder() -> Self {
                #placeholder
            }
        }

        impl #de_impl_generics #json::__private::serde::Deserialize<'de> for #ident #ty_generics #where_clause {
            fn deserialize<__D: #json::__private::serde::Deserializer<'de>>(
                deserializer: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                #json::deserialize(deserializer)
            }
        }
    })
}

fn refuse_unsupported(container: &Container) -> syn::Result<()> {
    let attrs = &container.attrs;
    let refuse = |what: &str| {
        Err(syn::Error::new_spanned(
            &container.original.ident,
            format!(
                "FromJson does not implement #[serde({what})]; derive serde's Deserialize instead"
            ),
        ))
    };
    if attrs.type_from().is_some() {
        return refuse("from = ...");
    }
    if attrs.type_try_from().is_some() {
        return refuse("try_from = ...");
    }
    if attrs.remote().is_some() {
        return refuse("remote = ...");
    }
    if container.generics.lifetimes().next().is_some() {
        return refuse("borrow (a type with lifetimes)");
    }
    for field in container.data.all_fields() {
        if !field.attrs.borrowed_lifetimes().is_empty() {
            return refuse("borrow");
        }
    }
    if let Data::Enum(variants) = &container.data {
        if variants
            .iter()
            .any(|v| v.attrs.deserialize_with().is_some())
        {
            return refuse("deserialize_with on a variant");
        }
    }
    Ok(())
}

/// `from_json`'s body and, for a struct with named fields, `decode_into`'s (which
/// `from_json` then calls on a placeholder).
fn struct_body(
    container: &Container,
    style: Style,
    fields: &[Field],
    name: &str,
) -> syn::Result<(TokenStream, Option<TokenStream>)> {
    let json = json_path();
    if container.attrs.transparent() {
        let inner = transparent_field(container, fields)?;
        let member = &inner.member;
        let others = fields.iter().filter(|f| f.member != inner.member).map(|f| {
            let member = &f.member;
            quote!(#member: ::core::default::Default::default())
        });
        return Ok((
            quote! {
                ::core::result::Result::Ok(Self {
                    #member: #json::FromJson::from_json(value)?,
                    #(#others,)*
                })
            },
            None,
        ));
    }
    let body = match style {
        Style::Struct => {
            let expected = format!("struct {name}");
            let fields_code = named_fields(container, fields, Target::InPlace)?;
            return Ok((
                quote! {
                    let mut __out = <Self as #json::FromJson>::placeholder();
                    #json::FromJson::decode_into(&mut __out, value)?;
                    ::core::result::Result::Ok(__out)
                },
                Some(quote! {
                    let mut __fields = #json::Fields::of(value, #expected)?;
                    #fields_code
                }),
            ));
        }
        Style::Newtype => quote! {
            ::core::result::Result::Ok(Self(#json::FromJson::from_json(value)?))
        },
        Style::Tuple => {
            let expected = format!("tuple struct {name} with {} elements", fields.len());
            tuple_fields(fields.len(), &expected, quote!(Self))
        }
        Style::Unit => quote! {
            #json::unit(::core::option::Option::Some(value))?;
            ::core::result::Result::Ok(Self)
        },
    };
    Ok((body, None))
}

/// Where [`named_fields`] decodes to: a value built at the end (`ctor { ... }`, for an enum's
/// struct variant), or the fields of `self` in place (a struct's `decode_into`).
enum Target {
    Ctor(TokenStream),
    InPlace,
}

/// Decodes named fields from `__fields` (a `json::Fields` in scope) into `target`.
///
/// Each field is decoded in place by `Fields::required` or `Fields::optional`, one
/// non-generic function for every field of every type, into its slot: `self`'s field (which
/// holds a placeholder, or its default, first), or a local that starts as one. A field that
/// fails keeps that value and leaves its error in `__fields`, which `finish` returns once at
/// the end. (A `?` per field made every field's error path drop the fields before it; a
/// generic call per field inlined each field's decoder into its type's; a value built from
/// locals moved every field once more: most of a decoder's size.)
fn named_fields(
    container: &Container,
    fields: &[Field],
    target: Target,
) -> syn::Result<TokenStream> {
    let json = json_path();
    let in_place = matches!(target, Target::InPlace);
    let container_default = container.attrs.default();
    let mut inits = Vec::new();
    // The fields decoded, in order, each into its slot.
    let mut steps = Vec::new();
    let mut names = Vec::new();
    let mut flatten = None;
    let needs_default =
        !container_default.is_none() && fields.iter().any(|f| f.attrs.default().is_none());

    for (i, field) in fields.iter().enumerate() {
        let member = &field.member;
        let ty = field.ty;
        let local = format_ident!("__f{}", i);
        // The field's slot, and how it is set to a value.
        let slot = if in_place {
            quote!(self.#member)
        } else {
            quote!(#local)
        };
        let set = |value: TokenStream| {
            if in_place {
                quote!(self.#member = #value;)
            } else {
                quote!(let mut #local: #ty = #value;)
            }
        };
        let field_default = match field.attrs.default() {
            FieldDefault::Default => Some(quote!(::core::default::Default::default())),
            FieldDefault::Path(path) => Some(quote!(#path())),
            FieldDefault::None => match container_default {
                FieldDefault::None => None,
                _ => Some(quote!(__default.#member)),
            },
        };
        if !in_place {
            inits.push(quote!(#member: #local));
        }
        if field.attrs.skip_deserializing() {
            let value =
                field_default.unwrap_or_else(|| quote!(::core::default::Default::default()));
            steps.push(set(value));
            continue;
        }
        if field.attrs.flatten() {
            if flatten.is_some() {
                return Err(syn::Error::new_spanned(
                    field.original,
                    "FromJson implements one #[serde(flatten)] field per struct",
                ));
            }
            flatten = Some(set(quote!(__fields.flattened::<#ty>())));
            continue;
        }
        let wire = field.attrs.name().deserialize_name().value.clone();
        names.push(wire.clone());
        let aliases: Vec<String> = field
            .attrs
            .aliases()
            .iter()
            .map(|a| a.value.clone())
            .filter(|a| *a != wire)
            .collect();
        names.extend(aliases.iter().cloned());

        // The short forms: one call each.
        if field.attrs.deserialize_with().is_none() && aliases.is_empty() {
            steps.push(match &field_default {
                None if in_place => quote!(__fields.required(#wire, &mut #slot);),
                None => {
                    let init = set(quote!(<#ty as #json::FromJson>::placeholder()));
                    quote! { #init __fields.required(#wire, &mut #slot); }
                }
                Some(default) => {
                    let init = set(default.clone());
                    quote! { #init __fields.optional(#wire, &mut #slot); }
                }
            });
            continue;
        }

        // The field's value if present (an Option), by its name or an alias.
        let mut present = match field.attrs.deserialize_with() {
            Some(with) => quote!(__fields.take_with(#wire, |v| #with(v))?),
            None => quote!(__fields.take_opt::<#ty>(#wire)?),
        };
        for alias in &aliases {
            let alias_take = match field.attrs.deserialize_with() {
                Some(with) => quote!(__fields.take_with(#alias, |v| #with(v))?),
                None => quote!(__fields.take_opt::<#ty>(#alias)?),
            };
            present = quote!(match #present { ::core::option::Option::Some(v) => ::core::option::Option::Some(v), ::core::option::Option::None => #alias_take });
        }
        let value = match &field_default {
            Some(default) => quote!(match #present {
                ::core::option::Option::Some(v) => v,
                ::core::option::Option::None => #default,
            }),
            None => quote!(match #present {
                ::core::option::Option::Some(v) => v,
                ::core::option::Option::None => <#ty as #json::FromJson>::absent()
                    .ok_or_else(|| #json::missing(#wire))?,
            }),
        };
        steps.push(set(quote! {{
            let __result = (|| -> ::core::result::Result<#ty, #json::Error> {
                ::core::result::Result::Ok(#value)
            })();
            __fields.keep(__result)
        }}));
    }
    // The flattened field takes what is left, so it is decoded last.
    steps.extend(flatten);

    let deny = if container.attrs.deny_unknown_fields() {
        quote!(__fields.deny_unknown(&[#(#names),*]);)
    } else {
        quote!()
    };
    let default = if needs_default {
        quote!(let __default: Self = ::core::default::Default::default();)
    } else {
        quote!()
    };
    Ok(match target {
        Target::InPlace => quote! {
            #default
            #(#steps)*
            #deny
            __fields.finish()
        },
        Target::Ctor(ctor) => quote! {
            #default
            #(#steps)*
            let __value = #ctor { #(#inits),* };
            #deny
            __fields.finish()?;
            ::core::result::Result::Ok(__value)
        },
    })
}

/// `placeholder()`'s body: every field's placeholder; for an enum, its first unit variant,
/// else its first variant. A type whose chosen variant or fields hold the type itself by
/// `Box` or `Arc` would recurse on a decoding error (an `Option`, `Vec` or map of it is
/// empty and does not); the crate has no such type, and a new one would need a unit variant
/// first or a hand-written `FromJson`.
fn placeholder_body(container: &Container) -> syn::Result<TokenStream> {
    let json = json_path();
    let of_fields = |fields: &[Field], style: Style, ctor: TokenStream| {
        let values = fields.iter().map(|f| {
            let ty = f.ty;
            if f.attrs.skip_deserializing() {
                quote!(::core::default::Default::default())
            } else {
                quote!(<#ty as #json::FromJson>::placeholder())
            }
        });
        match style {
            Style::Struct => {
                let members = fields.iter().map(|f| &f.member);
                quote!(#ctor { #(#members: #values),* })
            }
            Style::Newtype | Style::Tuple => quote!(#ctor(#(#values),*)),
            Style::Unit => quote!(#ctor),
        }
    };
    Ok(match &container.data {
        Data::Struct(style, fields) => of_fields(fields, *style, quote!(Self)),
        Data::Enum(variants) => {
            let variant = variants
                .iter()
                .find(|v| matches!(v.style, Style::Unit))
                .or_else(|| variants.first())
                .ok_or_else(|| {
                    syn::Error::new_spanned(&container.ident, "an enum without variants")
                })?;
            let ident = &variant.ident;
            of_fields(&variant.fields, variant.style, quote!(Self::#ident))
        }
    })
}

/// Decodes a tuple of `len` items from `value` into `ctor(...)`.
fn tuple_fields(len: usize, expected: &str, ctor: TokenStream) -> TokenStream {
    let json = json_path();
    let items = (0..len).map(|i| quote!(#json::item(&mut __items, #i)?));
    quote! {
        let mut __items = #json::tuple(value, #len, #expected)?;
        ::core::result::Result::Ok(#ctor(#(#items),*))
    }
}

fn enum_body(container: &Container, variants: &[Variant], name: &str) -> syn::Result<TokenStream> {
    let json = json_path();
    let expected = format!("enum {name}");
    let live: Vec<&Variant> = variants
        .iter()
        .filter(|v| !v.attrs.skip_deserializing())
        .collect();
    let other = live.iter().find(|v| v.attrs.other());
    let tagged: Vec<&Variant> = live
        .iter()
        .copied()
        .filter(|v| !v.attrs.other() && !v.attrs.untagged())
        .collect();
    if live.iter().any(|v| v.attrs.untagged()) && !matches!(container.attrs.tag(), TagType::None) {
        return Err(syn::Error::new_spanned(
            &container.ident,
            "FromJson does not implement #[serde(untagged)] variants of a tagged enum",
        ));
    }
    let names: Vec<String> = tagged
        .iter()
        .map(|v| v.attrs.name().deserialize_name().value.clone())
        .collect();
    let patterns = |v: &Variant| {
        let mut all = vec![v.attrs.name().deserialize_name().value.clone()];
        all.extend(v.attrs.aliases().iter().map(|a| a.value.clone()));
        all.sort();
        all.dedup();
        quote!(#(#all)|*)
    };
    let fallback = match other {
        Some(v) => {
            let ident = &v.ident;
            quote!(_ => ::core::result::Result::Ok(Self::#ident))
        }
        None => {
            quote!(_ => ::core::result::Result::Err(#json::Error::unknown_variant(&__name, &[#(#names),*])))
        }
    };

    match container.attrs.tag() {
        TagType::External | TagType::Adjacent { .. } => {
            let head = match container.attrs.tag() {
                TagType::Adjacent { tag, content } => quote! {
                    let mut __fields = #json::Fields::of(value, #expected)?;
                    let __name: ::std::string::String = __fields.take(#tag)?;
                    let __content: ::core::option::Option<#json::Value> = __fields.take_opt(#content)?;
                },
                _ => quote! {
                    let (__name, __content) = #json::external(value, #expected)?;
                },
            };
            let arms = tagged
                .iter()
                .map(|v| {
                    let pattern = patterns(v);
                    let wire = v.attrs.name().deserialize_name().value.clone();
                    let body = external_variant(container, v, name)?;
                    Ok(quote!(#pattern => (|| -> ::core::result::Result<Self, #json::Error> { #body })().map_err(|e| e.in_field(#wire)),))
                })
                .collect::<syn::Result<Vec<_>>>()?;
            Ok(quote! {
                #head
                match __name.as_str() {
                    #(#arms)*
                    #fallback
                }
            })
        }
        TagType::Internal { tag } => {
            let arms = tagged
                .iter()
                .map(|v| {
                    let pattern = patterns(v);
                    let ident = &v.ident;
                    let body = match v.style {
                        Style::Unit => quote!(::core::result::Result::Ok(Self::#ident)),
                        Style::Newtype => quote! {
                            ::core::result::Result::Ok(Self::#ident(#json::FromJson::from_json(__fields.rest())?))
                        },
                        Style::Struct => named_fields(container, &v.fields, Target::Ctor(quote!(Self::#ident)))?,
                        Style::Tuple => {
                            return Err(syn::Error::new_spanned(
                                v.original,
                                "serde cannot decode a tuple variant of an internally tagged enum",
                            ))
                        }
                    };
                    Ok(quote!(#pattern => { #body }))
                })
                .collect::<syn::Result<Vec<_>>>()?;
            Ok(quote! {
                let mut __fields = #json::Fields::of(value, #expected)?;
                let __name: ::std::string::String = __fields.take(#tag)?;
                match __name.as_str() {
                    #(#arms)*
                    #fallback
                }
            })
        }
        TagType::None => {
            let attempts = live
                .iter()
                .map(|v| {
                    let body = untagged_variant(container, v, name)?;
                    Ok(quote! {
                        if let ::core::result::Result::Ok(v) = (|value: #json::Value| -> ::core::result::Result<Self, #json::Error> { #body })(value.clone()) {
                            return ::core::result::Result::Ok(v);
                        }
                    })
                })
                .collect::<syn::Result<Vec<_>>>()?;
            Ok(quote! {
                #(#attempts)*
                ::core::result::Result::Err(#json::no_variant_matched(#name))
            })
        }
    }
}

/// A variant's decoder from `__content` (an `Option<Value>`: absent for a bare name).
fn external_variant(container: &Container, v: &Variant, name: &str) -> syn::Result<TokenStream> {
    let json = json_path();
    let ident = &v.ident;
    let expected = match v.style {
        Style::Struct => format!("struct variant {name}::{ident}"),
        Style::Tuple => format!("tuple variant {name}::{ident}"),
        _ => format!("newtype variant {name}::{ident}"),
    };
    Ok(match v.style {
        Style::Unit => quote! {
            #json::unit(__content)?;
            ::core::result::Result::Ok(Self::#ident)
        },
        Style::Newtype => quote! {
            ::core::result::Result::Ok(Self::#ident(#json::FromJson::from_json(#json::content(__content, #expected)?)?))
        },
        Style::Tuple => {
            let tuple = tuple_fields(v.fields.len(), &expected, quote!(Self::#ident));
            quote! {
                let value = #json::content(__content, #expected)?;
                #tuple
            }
        }
        Style::Struct => {
            let fields = named_fields(container, &v.fields, Target::Ctor(quote!(Self::#ident)))?;
            quote! {
                let mut __fields = #json::Fields::of(#json::content(__content, #expected)?, #expected)?;
                #fields
            }
        }
    })
}

/// A variant's decoder from the whole `value` (untagged).
fn untagged_variant(container: &Container, v: &Variant, name: &str) -> syn::Result<TokenStream> {
    let json = json_path();
    let ident = &v.ident;
    Ok(match v.style {
        Style::Unit => quote! {
            #json::unit(::core::option::Option::Some(value))?;
            ::core::result::Result::Ok(Self::#ident)
        },
        Style::Newtype => quote! {
            ::core::result::Result::Ok(Self::#ident(#json::FromJson::from_json(value)?))
        },
        Style::Tuple => {
            let expected = format!("tuple variant {name}::{ident}");
            tuple_fields(v.fields.len(), &expected, quote!(Self::#ident))
        }
        Style::Struct => {
            let expected = format!("struct variant {name}::{ident}");
            let fields = named_fields(container, &v.fields, Target::Ctor(quote!(Self::#ident)))?;
            quote! {
                let mut __fields = #json::Fields::of(value, #expected)?;
                #fields
            }
        }
    })
}
