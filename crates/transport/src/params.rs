//! Protocol parameters given per flow or in `[transport]`, read by each congestion control.
//!
//! A [`Params`] records which keys were read, so that a key no protocol used is reported as an
//! error (a typo) instead of being ignored.

use std::cell::Cell;

#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl ParamValue {
    pub fn describe(&self) -> String {
        match self {
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Float(f) => f.to_string(),
            ParamValue::Bool(b) => b.to_string(),
            ParamValue::Str(s) => format!("\"{s}\""),
        }
    }
}

/// Key/value parameters with use tracking.
#[derive(Debug, Default)]
pub struct Params {
    entries: Vec<(String, ParamValue, Cell<bool>)>,
}

impl Params {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds or replaces a key (later layers override earlier ones).
    pub fn set(&mut self, key: &str, v: ParamValue) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == key) {
            e.1 = v;
        } else {
            self.entries.push((key.to_string(), v, Cell::new(false)));
        }
    }
    pub fn get(&self, key: &str) -> Option<&ParamValue> {
        self.entries.iter().find(|e| e.0 == key).map(|e| {
            e.2.set(true);
            &e.1
        })
    }
    /// A number (integer or float).
    pub fn f64(&self, key: &str) -> Result<Option<f64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(ParamValue::Int(i)) => Ok(Some(*i as f64)),
            Some(ParamValue::Float(f)) => Ok(Some(*f)),
            Some(v) => Err(format!("`{key}` must be a number, got {}", v.describe())),
        }
    }
    /// A size: a string with a unit ("10MB") or an integer number of bytes.
    pub fn bytes(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(ParamValue::Int(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(ParamValue::Str(s)) => fctlab_engine::parse::parse_size(s).map(Some).map_err(|m| format!("`{key}`: {m}")),
            Some(v) => Err(format!("`{key}` must be a size such as \"10MB\", got {}", v.describe())),
        }
    }
    /// A time: a string with a unit ("30ms").
    pub fn duration(&self, key: &str) -> Result<Option<fctlab_engine::Nanos>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(ParamValue::Str(s)) => fctlab_engine::parse::parse_duration(s).map(Some).map_err(|m| format!("`{key}`: {m}")),
            Some(v) => Err(format!("`{key}` must be a time such as \"30ms\", got {}", v.describe())),
        }
    }
    pub fn str(&self, key: &str) -> Result<Option<&str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(ParamValue::Str(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(format!("`{key}` must be a string, got {}", v.describe())),
        }
    }
    /// Keys that nothing has read.
    pub fn unused(&self) -> Vec<&str> {
        self.entries.iter().filter(|e| !e.2.get()).map(|e| e.0.as_str()).collect()
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.0.as_str())
    }
}
