//! Reading TOML tables into typed structs, with errors that name the file and the key.
//!
//! Every table of a scenario is a serde struct with `deny_unknown_fields`; the keys it takes
//! are its fields (read with [`fields_of`]), so no list of keys is written twice. Tables that
//! take different keys by a tag (a size distribution's `dist`) are declared with
//! [`tagged_tables!`]: one struct per tag value. Topologies and workload kinds, one file each,
//! have registries of their own (`fctlab_net::topology`, the `workloads` module).

use crate::ScenarioError;
pub use fctlab_engine::quantity::fields_of;
use serde::de::DeserializeOwned;

/// Where a table sits, for error messages: the file and the dotted key of the table.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub file: &'a str,
    pub prefix: &'a str,
}

impl At<'_> {
    /// The full key of `key` in this table.
    pub fn key(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_string()
        } else if key.is_empty() {
            self.prefix.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }
    pub fn err(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.to_string(), key: self.key(key), message: message.into() }
    }
}

/// Deserializes `table` as a `T`; an error names the key (`prefix.key`) and what was expected.
pub(crate) fn de<T: DeserializeOwned>(table: toml::Table, at: At<'_>) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let path = e.path().to_string();
        let key = if path == "." { String::new() } else { path };
        at.err(&key, clean_serde_message(&e.inner().to_string()))
    })
}

/// The value of the tag key `key` of a tagged table (`topology`, `kind`): a string.
pub(crate) fn tag(table: &toml::Table, key: &str, at: At<'_>) -> Result<String, ScenarioError> {
    match table.get(key) {
        None => Err(at.err("", format!("missing required key `{key}`"))),
        Some(v) => <String as serde::Deserialize>::deserialize(v.clone())
            .map_err(|e| at.err(key, clean_serde_message(&e.to_string()))),
    }
}

/// Splits `table` into the entries whose key is in `keys` and the others.
pub(crate) fn split(table: toml::Table, keys: &[&str]) -> (toml::Table, toml::Table) {
    table.into_iter().partition(|(k, _)| keys.contains(&k.as_str()))
}

/// serde's messages in the words of a scenario file.
pub(crate) fn clean_serde_message(m: &str) -> String {
    // The TOML value deserializer appends "in `key`"; the key is reported separately.
    let m = m.split("\nin `").next().unwrap_or(m).trim();
    if let Some(rest) = m.strip_prefix("unknown field `") {
        // "unknown field `x`, expected one of `a`, `b`" (or "expected `a`", "there are no fields")
        let (key, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let known: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
        return unknown_key(key, &known);
    }
    if let Some(rest) = m.strip_prefix("missing field ") {
        return format!("missing required key {rest}");
    }
    let m = m
        .replace("invalid type: ", "wrong type: ")
        .replace('\n', " ")
        .replace("expected u32", "expected a whole number from 0 to 4294967295")
        // TOML's integers end at 2^63 - 1, so a u64 key takes no more than that
        .replace("expected u64", "expected a whole number from 0 to 9223372036854775807")
        .replace("expected f64", "expected a number")
        .replace("expected a boolean", "expected true or false");
    // serde names internal structs ("expected struct RawNetwork"); say what the user writes.
    let mut out = String::new();
    let mut rest = m.as_str();
    while let Some(i) = rest.find("struct ") {
        out.push_str(&rest[..i]);
        out.push_str("a table");
        let tail = &rest[i + "struct ".len()..];
        let skip = tail.find(|c: char| !c.is_alphanumeric()).unwrap_or(tail.len());
        rest = &tail[skip..];
    }
    out.push_str(rest);
    out
}

/// The message for key `key` where the keys `known` are valid: the closest of them when one
/// is close (a typo), the whole list when it is short, else a pointer to the docs, so that a
/// message stays one readable line however many keys a table has, and does not change when a
/// key is added.
pub(crate) fn unknown_key(key: &str, known: &[&str]) -> String {
    if let Some(close) = closest(key, known) {
        return format!("unknown key `{key}` (did you mean `{close}`?)");
    }
    match known.len() {
        0 => format!("unknown key `{key}` (this table takes no keys)"),
        1..=8 => format!("unknown key `{key}`, expected one of {}", quoted(known)),
        _ => format!("unknown key `{key}` (not one of this table's keys, which docs/scenarios.md lists)"),
    }
}

/// The key of `known` closest to `key` by edit distance, if within a third of its length
/// (at least 1), or one that contains the other; ties go to the first.
pub(crate) fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (key.chars().count() / 3).max(1);
    let by_distance =
        known.iter().map(|k| (edit_distance(key, k), *k)).filter(|(d, _)| *d <= limit).min_by_key(|(d, _)| *d);
    by_distance.map(|(_, k)| k).or_else(|| {
        known.iter().copied().find(|k| key.len() >= 3 && k.len() >= 3 && (k.contains(key) || key.contains(k)))
    })
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// "`a`, `b`, `c`": a list of keys as serde's messages write them.
pub(crate) fn quoted(keys: &[&str]) -> String {
    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
}

/// Declares tables that take different keys by the value of a tag key: an enum with one
/// variant per tag value, each holding its own struct (with `deny_unknown_fields`), and
/// `NAMES`, `keys_of`, `parse` and `name` generated from that list.
macro_rules! tagged_tables {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($tag:literal => $variant:ident($ty:ty)),* $(,)? }) => {
        $(#[$meta])*
        $vis enum $name {
            $($variant($ty),)*
        }

        #[allow(dead_code)]
        impl $name {
            /// Every tag value, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($tag),*];

            /// The keys the table of tag `tag` takes (None for an unknown tag).
            pub fn keys_of(tag: &str) -> Option<&'static [&'static str]> {
                match tag {
                    $($tag => Some($crate::tables::fields_of::<$ty>()),)*
                    _ => None,
                }
            }

            /// The tag whose table takes `key`, other than `except` (the first in order).
            pub fn tag_taking(key: &str, except: &str) -> Option<&'static str> {
                Self::NAMES.iter().copied().find(|t| *t != except && Self::keys_of(t).is_some_and(|k| k.contains(&key)))
            }

            /// Reads the table of tag `tag` (a known tag; the tag key already removed).
            pub(crate) fn parse(tag: &str, table: toml::Table, at: $crate::tables::At<'_>) -> Result<Self, $crate::ScenarioError> {
                match tag {
                    $($tag => $crate::tables::de::<$ty>(table, at).map($name::$variant),)*
                    other => Err(at.err("", format!("unknown table tag \"{other}\""))),
                }
            }

            /// The tag of this table.
            pub fn name(&self) -> &'static str {
                match self {
                    $($name::$variant(_) => $tag,)*
                }
            }
        }
    };
}
pub(crate) use tagged_tables;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_names_the_closest_or_the_short_list_or_the_count() {
        let known = [
            "link_rate",
            "link_delay",
            "buffer",
            "queue",
            "ecn_threshold",
            "nic_buffer",
            "hosts",
            "senders",
            "receivers",
        ];
        assert_eq!(unknown_key("link_rat", &known), "unknown key `link_rat` (did you mean `link_rate`?)");
        assert_eq!(unknown_key("bufer", &known), "unknown key `bufer` (did you mean `buffer`?)");
        assert_eq!(unknown_key("threshold", &known), "unknown key `threshold` (did you mean `ecn_threshold`?)");
        assert_eq!(
            unknown_key("colour", &known),
            "unknown key `colour` (not one of this table's keys, which docs/scenarios.md lists)"
        );
        assert_eq!(
            unknown_key("x", &["a_long_key", "b_key"]),
            "unknown key `x`, expected one of `a_long_key`, `b_key`"
        );
        assert_eq!(unknown_key("x", &[]), "unknown key `x` (this table takes no keys)");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn serde_s_unknown_field_message_becomes_the_same_message() {
        let m =
            "unknown field `queue_intervl`, expected one of `cwnd_interval`, `cwnd_flows`, `queue_interval`, `queues`";
        assert_eq!(clean_serde_message(m), "unknown key `queue_intervl` (did you mean `queue_interval`?)");
        assert_eq!(
            clean_serde_message("unknown field `zzzzz`, expected `queue`"),
            "unknown key `zzzzz`, expected one of `queue`"
        );
    }
}
