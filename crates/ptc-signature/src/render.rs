//! Rendering signatures for prompts: `search(query :string, limit :int) -> [{id :int}]`.

use crate::types::{Field, Signature, Type};

/// How field names are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyStyle {
    /// As declared (`order_count`).
    #[default]
    AsWritten,
    /// Lisp style for PTC-Lisp prompts (`order-count`).
    Lisp,
}

/// Renders a type: `{id :int, tags [:string], email :string?}`.
pub fn render_type(t: &Type, style: KeyStyle) -> String {
    match t {
        Type::String => ":string".into(),
        Type::Int => ":int".into(),
        Type::Float => ":float".into(),
        Type::Bool => ":bool".into(),
        Type::Keyword => ":keyword".into(),
        Type::Any => ":any".into(),
        Type::Map => ":map".into(),
        Type::Datetime => ":datetime".into(),
        Type::List(inner) => format!("[{}]", render_type(inner, style)),
        Type::Object { fields, .. } => format!("{{{}}}", render_fields(fields, style)),
        Type::Optional(inner) => format!("{}?", render_type(inner, style)),
    }
}

fn field_name(name: &str, style: KeyStyle) -> String {
    match style {
        KeyStyle::AsWritten => name.to_string(),
        KeyStyle::Lisp => name.replace('_', "-"),
    }
}

fn render_fields(fields: &[Field], style: KeyStyle) -> String {
    fields
        .iter()
        .map(|f| format!("{} {}", field_name(&f.name, style), render_type(&f.ty, style)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Renders a whole signature: `(query :string) -> {count :int}`; `() -> t` for no inputs.
pub fn render(sig: &Signature, style: KeyStyle) -> String {
    format!("({}) -> {}", render_fields(&sig.inputs, style), render_type(&sig.output, style))
}

/// The prompt line of a tool: `search(query :string, limit :int) -> [{id :int, title :string}]`.
pub fn render_tool(name: &str, sig: &Signature) -> String {
    format!("{name}{}", render(sig, KeyStyle::AsWritten))
}

/// The output part of a signature text, rendered canonically (`{count :int}` from
/// `(q :string) -> {count :int}`); `None` when the text is not a signature.
pub fn extract_return_spec(text: &str) -> Option<String> {
    crate::parse(text).ok().map(|s| render_type(&s.output, KeyStyle::AsWritten))
}
