//! Parsing `(name :type, ...) -> output` and output-only signatures.

use crate::types::{Field, Signature, Type};

/// Why a signature did not parse; `column` is 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid signature at column {column}: {message}")]
#[non_exhaustive]
pub struct SignatureError {
    /// What is wrong and what to write instead.
    pub message: String,
    /// 1-based character column.
    pub column: usize,
}

/// Parses a signature.
///
/// ```
/// let sig = ptc_signature::parse("(query :string, limit :int?) -> [{id :int}]").unwrap();
/// assert_eq!(sig.inputs.len(), 2);
/// assert!(ptc_signature::parse("[]").is_err());
/// ```
pub fn parse(text: &str) -> Result<Signature, SignatureError> {
    let mut p = Parser { chars: text.chars().collect(), pos: 0, depth: 0 };
    p.ws();
    if p.at_end() {
        return Err(p.error(
            "the signature is empty; write an output type such as {count :int} or (query :string) -> [:string]",
        ));
    }
    let sig = if p.peek() == Some('(') {
        let inputs = p.params()?;
        p.ws();
        if !p.eat_str("->") {
            return Err(p.error("expected -> after the parameter list, e.g. (query :string) -> {count :int}"));
        }
        p.ws();
        let output = p.ty()?;
        Signature { inputs, output }
    } else {
        Signature { inputs: Vec::new(), output: p.ty()? }
    };
    p.ws();
    if !p.at_end() {
        return Err(p.error(format!("unexpected text {:?} after the signature", p.rest())));
    }
    Ok(sig)
}

/// Parses a single type (`{id :int}`, `[:string]`, `:any`).
pub fn parse_type(text: &str) -> Result<Type, SignatureError> {
    let mut p = Parser { chars: text.chars().collect(), pos: 0, depth: 0 };
    p.ws();
    let t = p.ty()?;
    p.ws();
    if !p.at_end() {
        return Err(p.error(format!("unexpected text {:?} after the type", p.rest())));
    }
    Ok(t)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

/// Deepest type nesting a signature may have (real signatures use three or four levels).
pub(crate) const MAX_TYPE_DEPTH: usize = 64;

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }
    fn rest(&self) -> String {
        self.chars[self.pos.min(self.chars.len())..].iter().take(20).collect()
    }
    fn error(&self, message: impl Into<String>) -> SignatureError {
        SignatureError { message: message.into(), column: self.pos + 1 }
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_str(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        if self.chars.get(self.pos..self.pos + n).is_some_and(|w| w.iter().copied().eq(s.chars())) {
            self.pos += n;
            true
        } else {
            false
        }
    }
    fn name(&mut self) -> Result<String, SignatureError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        match name.chars().next() {
            Some(c) if c.is_alphabetic() || c == '_' => Ok(name),
            Some(_) => Err(SignatureError {
                message: format!("name {name:?} must start with a letter or underscore"),
                column: start + 1,
            }),
            None => Err(self.error("expected a field or parameter name, e.g. id :int")),
        }
    }
    fn params(&mut self) -> Result<Vec<Field>, SignatureError> {
        self.eat('(');
        let mut out: Vec<Field> = Vec::new();
        loop {
            self.ws();
            if self.eat(')') {
                return Ok(out);
            }
            if self.at_end() {
                return Err(self.error("unclosed parameter list: add ')'"));
            }
            let col = self.pos + 1;
            let name = self.name()?;
            self.ws();
            let ty = self.ty()?;
            if out.iter().any(|f| f.name == name) {
                return Err(SignatureError { message: format!("parameter {name} is declared twice"), column: col });
            }
            out.push(Field::new(name, ty));
            self.ws();
            self.eat(',');
        }
    }
    fn ty(&mut self) -> Result<Type, SignatureError> {
        if self.depth >= MAX_TYPE_DEPTH {
            return Err(self.error(format!("types nest more than {MAX_TYPE_DEPTH} levels deep; flatten the signature")));
        }
        self.depth += 1;
        let t = self.ty_inner();
        self.depth -= 1;
        t
    }
    fn ty_inner(&mut self) -> Result<Type, SignatureError> {
        self.ws();
        let base = match self.peek() {
            Some(':') => self.primitive()?,
            Some('[') => {
                let open = self.pos;
                self.pos += 1;
                self.ws();
                if self.peek() == Some(']') {
                    return Err(SignatureError {
                        message: "[] is a list of nothing; write the element type, e.g. [:any] or [:int]".into(),
                        column: open + 1,
                    });
                }
                let inner = self.ty()?;
                self.ws();
                if !self.eat(']') {
                    return Err(
                        self.error("expected ] to close the list type; a list has one element type, e.g. [:int]")
                    );
                }
                Type::List(Box::new(inner))
            }
            Some('{') => {
                self.pos += 1;
                let mut fields: Vec<Field> = Vec::new();
                loop {
                    self.ws();
                    if self.eat('}') {
                        break;
                    }
                    if self.at_end() {
                        return Err(self.error("unclosed map type: add '}'"));
                    }
                    let col = self.pos + 1;
                    let name = self.name()?;
                    self.ws();
                    let ty = self.ty()?;
                    if fields.iter().any(|f| f.name == name) {
                        return Err(SignatureError { message: format!("field {name} is declared twice"), column: col });
                    }
                    fields.push(Field::new(name, ty));
                    self.ws();
                    self.eat(',');
                }
                Type::Object { fields, closed: false }
            }
            Some(c) => {
                return Err(self.error(format!(
                    "expected a type (:string :int :float :bool :keyword :any :map :datetime, [:t] or {{field :t}}), found {c:?}"
                )));
            }
            None => return Err(self.error("expected a type, but the signature ended")),
        };
        Ok(if self.eat('?') { Type::Optional(Box::new(base)) } else { base })
    }
    fn primitive(&mut self) -> Result<Type, SignatureError> {
        let start = self.pos;
        self.pos += 1;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            self.pos += 1;
        }
        let word: String = self.chars[start + 1..self.pos].iter().collect();
        let err = |message: String| SignatureError { message, column: start + 1 };
        Ok(match word.as_str() {
            "string" => Type::String,
            "int" | "integer" => Type::Int,
            "float" | "number" => Type::Float,
            "bool" | "boolean" => Type::Bool,
            "keyword" => Type::Keyword,
            "any" => Type::Any,
            "map" => Type::Map,
            "datetime" => Type::Datetime,
            "list" | "array" | "vector" | "seq" => {
                return Err(err(format!(":{word} is not a type — use [:type], e.g. [:int], [:string] or [:any]")));
            }
            "object" => return Err(err(":object is not a type — use {field :type} or :map".into())),
            "tuple" => {
                return Err(err(":tuple is not a type — there are no tuples; use a map with named fields, e.g. {lat :float, lon :float}".into()));
            }
            "" => return Err(err("a type name must follow ':', e.g. :int".into())),
            other => {
                return Err(err(format!(
                    ":{other} is not a type; the types are :string :int :float :bool :keyword :any :map :datetime, [:t] for lists and {{field :t}} for maps"
                )));
            }
        })
    }
}
