//! JSON read strictly: an object that gives a member twice is an error, at
//! any depth. `serde_json` keeps the last of the two, so
//! `{"command": "echo safe", "command": "rm -rf x"}` would run what a proxy
//! in front of wield, keeping the first, never saw.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

/// A JSON value in which no object gives a member twice.
pub struct Strict(pub Value);

/// A JSON object in which no object gives a member twice.
pub struct StrictObject(pub Map<String, Value>);

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        ObjectVisitor.visit_map(map).map(Value::Object)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match out.entry(key) {
                Entry::Occupied(taken) => {
                    return Err(de::Error::custom(format_args!(
                        "member `{}` given twice in one object",
                        taken.key()
                    )));
                }
                Entry::Vacant(free) => {
                    let Strict(value) = map.next_value()?;
                    free.insert(value);
                }
            }
        }
        Ok(out)
    }
}

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(Strict)
    }
}

impl<'de> Deserialize<'de> for StrictObject {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ObjectVisitor).map(StrictObject)
    }
}

/// Why `line` (JSON) is not strict: the member given twice; `None` when
/// every object gives each member once (or the line is not JSON at all).
pub fn duplicate_member(line: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Strict>(line) {
        Err(e) if e.is_data() => Some(e.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_given_twice_at_any_depth_is_found() {
        for line in [
            r#"{"a":1,"a":2}"#,
            r#"{"params":{"arguments":{"command":"echo safe","command":"rm -rf x"}}}"#,
            r#"{"x":[{"k":{"deep":1,"deep":1}}]}"#,
        ] {
            let why = duplicate_member(line.as_bytes()).unwrap();
            assert!(why.contains("given twice"), "{why}");
        }
        assert!(duplicate_member(br#"{"a":{"b":1},"b":{"a":1},"c":[{"a":1},{"a":2}],"d":null}"#).is_none());
        // Not JSON: for the parser to say.
        assert!(duplicate_member(b"{").is_none());
    }

    #[test]
    fn values_read_as_serde_json_reads_them() {
        let line = r#"{"s":"a\u00e9\"","n":-3,"u":18446744073709551615,"f":0.7,"b":true,"z":null,"l":[1,[2]],"o":{}}"#;
        let Strict(strict) = serde_json::from_str(line).unwrap();
        assert_eq!(strict, serde_json::from_str::<Value>(line).unwrap());
        let StrictObject(o) = serde_json::from_str(r#"{"k":1}"#).unwrap();
        assert_eq!(o["k"], 1);
        assert!(serde_json::from_str::<StrictObject>("[1]").is_err());
    }
}
