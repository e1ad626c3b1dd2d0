//! JSON values in and out of Lua: `null` becomes `nil` going in; tables
//! come out as objects or arrays (a table whose keys are 1..n is an array).

use mlua::serde::de::Options as DeserializeOptions;
use mlua::serde::ser::Options as SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Value};

/// `value` as a Lua value (`null` is `nil`; arrays keep their order).
pub(crate) fn to_lua(lua: &Lua, value: &serde_json::Value) -> mlua::Result<Value> {
    lua.to_value_with(
        value,
        SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false),
    )
}

/// A Lua value as JSON; functions and other values JSON has no form for
/// are an error.
pub(crate) fn to_json(lua: &Lua, value: Value) -> mlua::Result<serde_json::Value> {
    lua.from_value_with(
        value,
        DeserializeOptions::new().deny_recursive_tables(true).sort_keys(true),
    )
}

/// A Lua value as TOML (for `[tools.NAME]` copies): only what JSON can say.
pub(crate) fn toml_to_lua(lua: &Lua, table: &toml::Table) -> mlua::Result<Value> {
    let json = serde_json::to_value(table).map_err(mlua::Error::external)?;
    to_lua(lua, &json)
}
