//! The signature model.

/// A type in a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Type {
    /// `:string`
    String,
    /// `:int`
    Int,
    /// `:float` (integers are accepted)
    Float,
    /// `:bool`
    Bool,
    /// `:keyword` (keywords, or strings at a JSON boundary)
    Keyword,
    /// `:any`
    Any,
    /// `:map` — any map
    Map,
    /// `:datetime` — an ISO-8601 string with an offset
    Datetime,
    /// `[:t]`
    List(Box<Type>),
    /// `{field :t, ...}`; `closed` rejects extra fields (from JSON Schema
    /// `additionalProperties: false`).
    Object {
        /// Declared fields, in order.
        fields: Vec<Field>,
        /// Extra fields are errors.
        closed: bool,
    },
    /// `:t?` — nil or missing is fine.
    Optional(Box<Type>),
}

/// A named field or parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Name as written (signatures use underscores).
    pub name: String,
    /// Its type.
    pub ty: Type,
}

impl Field {
    /// A field.
    pub fn new(name: impl Into<String>, ty: Type) -> Self {
        Field { name: name.into(), ty }
    }
}

/// `(inputs) -> output`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Named parameters.
    pub inputs: Vec<Field>,
    /// Result type.
    pub output: Type,
}

impl Type {
    /// True for `:t?`.
    pub fn is_optional(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// The type without its `?`.
    pub fn required(&self) -> &Type {
        match self {
            Type::Optional(t) => t.required(),
            other => other,
        }
    }

    /// The name used in error messages (`int`, `list`, `map`...).
    pub fn describe(&self) -> &'static str {
        match self {
            Type::String => "string",
            Type::Int => "int",
            Type::Float => "float",
            Type::Bool => "bool",
            Type::Keyword => "keyword",
            Type::Any => "any",
            Type::Map | Type::Object { .. } => "map",
            Type::Datetime => "datetime",
            Type::List(_) => "list",
            Type::Optional(t) => t.describe(),
        }
    }
}
