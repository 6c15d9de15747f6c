//! The JSON Schema bridge: signature types to schemas (native tool definitions, MCP
//! `outputSchema`) and schemas back to types (MCP `output_schema` arguments).

use serde_json::{Map, Value as Json, json};

use crate::types::{Field, Signature, Type};

/// Schema of a type. Objects list their required fields and are closed
/// (`additionalProperties: false`); `:any` is `{}`.
pub fn type_to_schema(t: &Type) -> Json {
    match t {
        Type::String | Type::Keyword | Type::Datetime => json!({"type": "string"}),
        Type::Int => json!({"type": "integer"}),
        Type::Float => json!({"type": "number"}),
        Type::Bool => json!({"type": "boolean"}),
        Type::Any => json!({}),
        Type::Map => json!({"type": "object"}),
        Type::List(inner) => json!({"type": "array", "items": type_to_schema(inner)}),
        Type::Object { fields, .. } => object_schema(fields),
        Type::Optional(inner) => type_to_schema(inner),
    }
}

fn object_schema(fields: &[Field]) -> Json {
    let mut props = Map::new();
    let mut required = Vec::new();
    for f in fields {
        props.insert(f.name.clone(), type_to_schema(&f.ty));
        if !f.ty.is_optional() {
            required.push(Json::String(f.name.clone()));
        }
    }
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// Schema of a result: objects as they are; anything else wrapped as `{"items": ...}` for
/// lists and `{"value": ...}` otherwise, because MCP `outputSchema` must be an object.
pub fn output_schema(t: &Type) -> Json {
    match t.required() {
        Type::Object { .. } | Type::Map => type_to_schema(t),
        Type::List(_) => object_schema(&[Field::new("items", t.clone())]),
        other => object_schema(&[Field::new("value", other.clone())]),
    }
}

/// Schema of a signature's inputs (for native tool definitions).
pub fn input_schema(sig: &Signature) -> Json {
    object_schema(&sig.inputs)
}

/// Why a JSON Schema could not become a type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported JSON Schema at {path}: {message}")]
#[non_exhaustive]
pub struct SchemaError {
    /// JSON pointer-ish path (`/properties/items`).
    pub path: String,
    /// What is not supported and what to use instead.
    pub message: String,
}

const IGNORED: &[&str] = &["description", "title", "default", "examples", "$schema", "$id", "format", "$comment"];

/// A type from a JSON Schema: `type` string/integer/number/boolean/array(items)/
/// object(properties, required, additionalProperties: bool). Anything else (`$ref`,
/// `enum`, `oneOf`...) is an error naming the keyword.
pub fn schema_to_type(schema: &Json) -> Result<Type, SchemaError> {
    convert(schema, "")
}

fn convert(s: &Json, path: &str) -> Result<Type, SchemaError> {
    let err =
        |message: String| SchemaError { path: if path.is_empty() { "/".into() } else { path.to_string() }, message };
    let obj = match s {
        Json::Object(o) => o,
        Json::Bool(true) => return Ok(Type::Any),
        other => return Err(err(format!("expected a schema object, got {other}"))),
    };
    for k in obj.keys() {
        let known = matches!(k.as_str(), "type" | "properties" | "required" | "items" | "additionalProperties");
        if !known && !IGNORED.contains(&k.as_str()) {
            return Err(err(format!(
                "keyword {k:?} is not supported; use type, properties, required, items and additionalProperties"
            )));
        }
    }
    let ty = match obj.get("type") {
        Some(Json::String(t)) => t.as_str(),
        Some(Json::Array(ts)) => {
            // ["string", "null"] means an optional string
            let non_null: Vec<&str> = ts.iter().filter_map(|t| t.as_str()).filter(|t| *t != "null").collect();
            match non_null.as_slice() {
                [one] => {
                    let mut inner = obj.clone();
                    inner.insert("type".into(), Json::String(one.to_string()));
                    return Ok(Type::Optional(Box::new(convert(&Json::Object(inner), path)?)));
                }
                _ => return Err(err("union types are not supported; use one type (optionally with \"null\")".into())),
            }
        }
        None if obj.contains_key("properties") => "object",
        None => return Ok(Type::Any),
        Some(other) => return Err(err(format!("\"type\" must be a string, got {other}"))),
    };
    Ok(match ty {
        "string" => Type::String,
        "integer" => Type::Int,
        "number" => Type::Float,
        "boolean" => Type::Bool,
        "null" => Type::Optional(Box::new(Type::Any)),
        "array" => match obj.get("items") {
            Some(items) => Type::List(Box::new(convert(items, &format!("{path}/items"))?)),
            None => Type::List(Box::new(Type::Any)),
        },
        "object" => {
            let Some(props) = obj.get("properties").and_then(|p| p.as_object()) else {
                return Ok(Type::Map);
            };
            let required: Vec<&str> = obj
                .get("required")
                .and_then(|r| r.as_array())
                .map(|r| r.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            let mut fields = Vec::new();
            for (name, sub) in props {
                let t = convert(sub, &format!("{path}/properties/{name}"))?;
                let t =
                    if required.contains(&name.as_str()) || t.is_optional() { t } else { Type::Optional(Box::new(t)) };
                fields.push(Field::new(name.clone(), t));
            }
            let closed = matches!(obj.get("additionalProperties"), Some(Json::Bool(false)));
            Type::Object { fields, closed }
        }
        other => {
            return Err(err(format!(
                "type {other:?} is not supported; use string, integer, number, boolean, array or object"
            )));
        }
    })
}
