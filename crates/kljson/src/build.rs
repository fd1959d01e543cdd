//! [`json!`]: `serde_json::json!`'s syntax, building the [`Value`] without serde.
//! serde_json's macro turns every interpolated expression into a `Value` through
//! `serde_json::to_value`, a serde serializer the module needed for nothing else; this one
//! goes through [`ToValue`], which the few types the crate interpolates implement directly.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A value that can be put into a [`Value`] (what [`json!`] interpolates).
pub trait ToValue {
    /// The value as JSON.
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl ToValue for Map<String, Value> {
    fn to_value(&self) -> Value {
        Value::Object(self.clone())
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::String(self.to_owned())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}

impl ToValue for Cow<'_, str> {
    fn to_value(&self) -> Value {
        Value::String(self.to_string())
    }
}

macro_rules! to_value_via_from {
    ($($t:ty),*) => {
        $(impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::from(*self)
            }
        })*
    };
}

to_value_via_from!(bool, u8, u16, u32, u64, usize, i32, i64, f64);

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue + ?Sized> ToValue for Arc<T> {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl<T: ToValue> ToValue for [T] {
    fn to_value(&self) -> Value {
        Value::Array(self.iter().map(ToValue::to_value).collect())
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        self.as_slice().to_value()
    }
}

/// Puts `key: value` into `map` (not generic, and not inlined: one call per member of every
/// `json!` object instead of the key's allocation, the insert and the old value's drop).
#[inline(never)]
pub fn put(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.insert(key.to_owned(), value);
}

/// An empty array's items (a function, so that clippy does not read the macro's pushes as a
/// `vec![]` to write).
pub fn items() -> Vec<Value> {
    Vec::new()
}

/// A JSON value from JSON-like syntax, as `serde_json::json!` writes it: objects whose keys
/// are string literals or variables (anything that is `AsRef<str>`), arrays, `null`, and any
/// expression whose type is [`ToValue`] (up to the next comma at its level). The tests below
/// hold it to serde_json's macro.
#[macro_export]
macro_rules! json {
    (null) => {
        $crate::Value::Null
    };
    ({ $($body:tt)* }) => {{
        #[allow(unused_mut)]
        let mut map = $crate::Map::new();
        $crate::json!(@object map () ($($body)*));
        $crate::Value::Object(map)
    }};
    ([ $($body:tt)* ]) => {{
        #[allow(unused_mut)]
        let mut items = $crate::build::items();
        $crate::json!(@array items () ($($body)*));
        $crate::Value::Array(items)
    }};
    ($value:expr) => {
        $crate::ToValue::to_value(&$value)
    };

    // An object's members: `key: value` pairs, the value's tokens gathered up to its comma.
    (@object $map:ident () ()) => {};
    (@object $map:ident () ($key:tt : $($rest:tt)*)) => {
        $crate::json!(@member $map $key () ($($rest)*));
    };
    (@member $map:ident $key:tt ($($value:tt)+) ($(,)?)) => {
        $crate::build::put(&mut $map, ::core::convert::AsRef::<str>::as_ref(&$key), $crate::json!($($value)+));
    };
    (@member $map:ident $key:tt ($($value:tt)+) (, $($rest:tt)+)) => {
        $crate::build::put(&mut $map, ::core::convert::AsRef::<str>::as_ref(&$key), $crate::json!($($value)+));
        $crate::json!(@object $map () ($($rest)+));
    };
    (@member $map:ident $key:tt ($($value:tt)*) ($next:tt $($rest:tt)*)) => {
        $crate::json!(@member $map $key ($($value)* $next) ($($rest)*));
    };

    // An array's items, each gathered up to its comma.
    (@array $items:ident () ()) => {};
    (@array $items:ident ($($item:tt)+) ($(,)?)) => {
        $items.push($crate::json!($($item)+));
    };
    (@array $items:ident ($($item:tt)+) (, $($rest:tt)+)) => {
        $items.push($crate::json!($($item)+));
        $crate::json!(@array $items () ($($rest)+));
    };
    (@array $items:ident ($($item:tt)*) ($next:tt $($rest:tt)*)) => {
        $crate::json!(@array $items ($($item)* $next) ($($rest)*));
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_builds_what_serde_json_builds() {
        let name = String::from("Ada");
        let key = "dynamic";
        let schema = Arc::new(serde_json::json!({"type": "object"}));
        let none: Option<u32> = None;
        let value = json!({
            "name": name,
            "tags": ["a", 1, [true, null], {}],
            "none": null,
            "ok": 1 > 0,
            "pick": if name.is_empty() { "empty" } else { "named" },
            "schema": schema,
            "maybe": none,
            "some": Some(2.5),
            "list": vec!["x", "y"],
            key: { "nested": { "deep": -1 } },
        });
        assert_eq!(
            value,
            serde_json::json!({
                "name": "Ada",
                "tags": ["a", 1, [true, null], {}],
                "none": null,
                "ok": true,
                "pick": "named",
                "schema": {"type": "object"},
                "maybe": null,
                "some": 2.5,
                "list": ["x", "y"],
                "dynamic": {"nested": {"deep": -1}},
            })
        );
        assert_eq!(json!([]), serde_json::json!([]));
        assert_eq!(json!({}), serde_json::json!({}));
        assert_eq!(json!("text"), serde_json::json!("text"));
    }
}
