//! [`ToJson`]: writing JSON text, the other half of the codec, for the same reason (one
//! small writer per type, no serializer generated per type and format).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::value::{write_int, write_str, write_value};

/// A value that writes itself as JSON text, exactly as its derived `serde::Serialize` does
/// through `serde_json::to_string` (`tests/native/json.rs` checks that on the crate's types).
pub trait ToJson {
    /// Appends the value's JSON to `out`.
    fn write_json(&self, out: &mut String);

    /// Appends the value's fields to an object being written (`#[serde(flatten)]` and
    /// internally tagged newtype variants). Only structs with named fields have fields.
    fn write_fields(&self, obj: &mut Obj<'_>) {
        let _ = obj;
    }
}

/// The JSON text of `value`.
pub fn to_string<T: ToJson + ?Sized>(value: &T) -> String {
    let mut out = String::new();
    value.write_json(&mut out);
    out
}

/// An object or array being written: the opening bracket is out, and a comma goes before
/// every member but the first.
struct Open<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Open<'a> {
    fn new(out: &'a mut String, bracket: char) -> Self {
        out.push(bracket);
        Self { out, first: true }
    }

    /// Where the next member goes (after its comma).
    fn next(&mut self) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out
    }
}

/// An object being written: `{`, then `"name":value` pairs, then `}` at [`Obj::end`].
pub struct Obj<'a>(Open<'a>);

impl<'a> Obj<'a> {
    /// Opens an object.
    pub fn new(out: &'a mut String) -> Self {
        Self(Open::new(out, '{'))
    }

    /// Writes `"name":` (after a comma if needed): the value must follow.
    #[inline(never)]
    pub fn key(&mut self, name: &str) {
        let out = self.0.next();
        write_str(out, name);
        out.push(':');
    }

    /// Writes a field.
    pub fn field<T: ToJson + ?Sized>(&mut self, name: &str, value: &T) {
        self.key(name);
        value.write_json(self.0.out);
    }

    /// Writes `"name":` for a `name` that needs no escaping (the derive checked it when it
    /// ran), so saving a state does not scan the derived writers' keys again.
    #[inline(never)]
    pub fn key_plain(&mut self, name: &str) {
        let out = self.0.next();
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
    }

    /// Writes a field whose name needs no escaping ([`Obj::key_plain`]).
    pub fn field_plain<T: ToJson + ?Sized>(&mut self, name: &str, value: &T) {
        self.key_plain(name);
        value.write_json(self.0.out);
    }

    /// Where a value after [`Obj::key`] is written.
    pub fn out(&mut self) -> &mut String {
        self.0.out
    }

    /// Closes the object.
    pub fn end(self) {
        self.0.out.push('}');
    }
}

/// An array being written.
pub struct Arr<'a>(Open<'a>);

impl<'a> Arr<'a> {
    /// Opens an array.
    pub fn new(out: &'a mut String) -> Self {
        Self(Open::new(out, '['))
    }

    /// Writes an item.
    pub fn item<T: ToJson + ?Sized>(&mut self, value: &T) {
        value.write_json(self.0.next());
    }

    /// Closes the array.
    pub fn end(self) {
        self.0.out.push(']');
    }
}

impl ToJson for str {
    fn write_json(&self, out: &mut String) {
        write_str(out, self);
    }
}

impl ToJson for String {
    fn write_json(&self, out: &mut String) {
        write_str(out, self);
    }
}

impl ToJson for bool {
    fn write_json(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

macro_rules! unsigned_to_json {
    ($($ty:ty),+) => {
        $(impl ToJson for $ty {
            fn write_json(&self, out: &mut String) {
                write_int(out, false, *self as u64);
            }
        })+
    };
}

unsigned_to_json!(u8, u16, u32, u64, usize);

macro_rules! signed_to_json {
    ($($ty:ty),+) => {
        $(impl ToJson for $ty {
            fn write_json(&self, out: &mut String) {
                write_int(out, *self < 0, i64::from(*self).unsigned_abs());
            }
        })+
    };
}

signed_to_json!(i32, i64);

impl ToJson for f64 {
    fn write_json(&self, out: &mut String) {
        // serde_json's own float writer (and `null` for a number that is not finite).
        write_value(out, &Value::from(*self));
    }
}

impl ToJson for f32 {
    fn write_json(&self, out: &mut String) {
        write_value(out, &Value::from(*self));
    }
}

impl ToJson for Value {
    fn write_json(&self, out: &mut String) {
        write_value(out, self);
    }
}

impl<T: ToJson + ?Sized> ToJson for &T {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        (**self).write_fields(obj);
    }
}

impl<T: ToJson + ?Sized> ToJson for Box<T> {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        (**self).write_fields(obj);
    }
}

impl<T: ToJson + ?Sized> ToJson for Arc<T> {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        (**self).write_fields(obj);
    }
}

impl<T: ToJson> ToJson for Option<T> {
    fn write_json(&self, out: &mut String) {
        match self {
            Some(value) => value.write_json(out),
            None => out.push_str("null"),
        }
    }

    fn write_fields(&self, obj: &mut Obj<'_>) {
        if let Some(value) = self {
            value.write_fields(obj);
        }
    }
}

impl<T: ToJson> ToJson for [T] {
    fn write_json(&self, out: &mut String) {
        let mut arr = Arr::new(out);
        for item in self {
            arr.item(item);
        }
        arr.end();
    }
}

impl<T: ToJson> ToJson for Vec<T> {
    fn write_json(&self, out: &mut String) {
        self.as_slice().write_json(out);
    }
}

impl<T: ToJson> ToJson for VecDeque<T> {
    fn write_json(&self, out: &mut String) {
        let mut arr = Arr::new(out);
        for item in self {
            arr.item(item);
        }
        arr.end();
    }
}

/// A map key as the text JSON writes it.
pub trait ToJsonKey {
    /// The key.
    fn json_key(&self) -> &str;
}

impl ToJsonKey for String {
    fn json_key(&self) -> &str {
        self
    }
}

/// Writes a map's entries as a JSON object (a map type's [`ToJson`]).
pub fn write_entries<'a, K: ToJsonKey + 'a, T: ToJson + 'a>(
    out: &mut String,
    entries: impl IntoIterator<Item = (&'a K, &'a T)>,
) {
    let mut obj = Obj::new(out);
    for (k, v) in entries {
        obj.field(k.json_key(), v);
    }
    obj.end();
}

impl<K: ToJsonKey, T: ToJson> ToJson for BTreeMap<K, T> {
    fn write_json(&self, out: &mut String) {
        write_entries(out, self);
    }
}

impl<T: ToJson> ToJson for std::ops::Range<T> {
    fn write_json(&self, out: &mut String) {
        let mut obj = Obj::new(out);
        obj.field("start", &self.start);
        obj.field("end", &self.end);
        obj.end();
    }
}
