//! Quantities with units as written in scenario files (`"10Gbps"`, `"25us"`, `"10MB"`), as
//! serde types. Each deserializes from a string (sizes also from a bare integer of bytes),
//! explains what it expected when the text does not fit, and serializes back to a plain
//! number in the base unit (bits per second, nanoseconds, bytes).

use crate::parse::{parse_duration, parse_rate, parse_size};
use crate::units::{BitsPerSec, Nanos};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// Defines a newtype `$name($inner)` that deserializes through `$parse` and serializes as
/// the integer `$base(&inner)`. `$allow_int`: a bare integer is taken as bytes.
#[macro_export]
macro_rules! string_quantity {
    ($name:ident, $inner:ty, $parse:expr, $what:expr, $allow_int:expr) => {
        #[derive(Copy, Clone, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: ::serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        ($parse)(s).map($name).map_err(E::custom)
                    }
                    fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<$name, E> {
                        if $allow_int {
                            ($parse)(&format!("{v}B")).map($name).map_err(E::custom)
                        } else {
                            Err(E::custom(format!("expected {} with a unit in quotes, got the bare number {v}", $what)))
                        }
                    }
                    fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        self.visit_i64(v as i64)
                    }
                    fn visit_f64<E: ::serde::de::Error>(self, v: f64) -> Result<$name, E> {
                        Err(E::custom(format!("expected {} with a unit in quotes, got the bare number {v}", $what)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

string_quantity!(Rate, BitsPerSec, parse_rate, "a rate such as \"10Gbps\"", false);
string_quantity!(Duration, Nanos, parse_duration, "a time such as \"25us\"", false);
string_quantity!(Size, u64, parse_size, "a size such as \"10MB\"", true);

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0 .0)
    }
}
impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0 .0)
    }
}
impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// The field names of a struct deserialized by serde (its `#[derive(Deserialize)]` passes
/// them to the deserializer): the keys a table of that type accepts, for `known:` lists and
/// for telling which table a key belongs to. Empty for types that are not plain structs.
pub fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Capture(Option<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for &mut Capture {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit unit_struct
            newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut c = Capture(None);
    let _ = T::deserialize(&mut c);
    c.0.unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct T {
        a: u32,
        #[serde(default)]
        b_c: Option<Size>,
    }

    #[test]
    fn fields_are_captured() {
        assert_eq!(fields_of::<T>(), &["a", "b_c"]);
        assert!(fields_of::<u32>().is_empty());
    }
}
