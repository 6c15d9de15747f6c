//! Prompt templates: `{{name}}`, `{{user.name}}`, `{{ name }}`, sections
//! `{{#items}}...{{/items}}`; placeholder validation against signature inputs; rendering.

use ptc_lisp_eval::Value;

use crate::types::{Signature, Type};

/// A template problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
#[non_exhaustive]
pub struct TemplateError(pub String);

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Var(Vec<String>),
    Section(Vec<String>, Vec<Part>),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

fn parse_path(raw: &str) -> Result<Vec<String>, TemplateError> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(TemplateError("empty placeholder {{}}: write a name such as {{topic}}".into()));
    }
    if name == "." {
        return Ok(vec![".".into()]);
    }
    let segs: Vec<String> = name.split('.').map(str::to_string).collect();
    for s in &segs {
        let ok = s.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
        if !ok {
            return Err(TemplateError(format!(
                "invalid placeholder {{{{{name}}}}}: names start with a letter and use letters, digits, - and _"
            )));
        }
    }
    Ok(segs)
}

impl Template {
    /// Parses a template text.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut stack: Vec<(Vec<String>, Vec<Part>)> = vec![(Vec::new(), Vec::new())];
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start + 2..].find("}}") else {
                return Err(TemplateError(format!(
                    "unclosed placeholder starting at {:?}; add }}}}",
                    &rest[start..rest.len().min(start + 20)]
                )));
            };
            if start > 0
                && let Some((_, parts)) = stack.last_mut()
            {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let inner = &rest[start + 2..start + 2 + len];
            let t = inner.trim();
            if let Some(name) = t.strip_prefix('#') {
                stack.push((parse_path(name)?, Vec::new()));
            } else if let Some(name) = t.strip_prefix('/') {
                let path = parse_path(name)?;
                let Some((open, body)) = stack.pop().filter(|_| !stack.is_empty()) else {
                    return Err(TemplateError(format!(
                        "{{{{/{}}}}} closes a section that was never opened",
                        name.trim()
                    )));
                };
                if open != path {
                    return Err(TemplateError(format!(
                        "section {{{{#{}}}}} is closed by {{{{/{}}}}}",
                        open.join("."),
                        path.join(".")
                    )));
                }
                if let Some((_, parts)) = stack.last_mut() {
                    parts.push(Part::Section(open, body));
                }
            } else if let Some((_, parts)) = stack.last_mut() {
                parts.push(Part::Var(parse_path(inner)?));
            }
            rest = &rest[start + 2 + len + 2..];
        }
        if !rest.is_empty()
            && let Some((_, parts)) = stack.last_mut()
        {
            parts.push(Part::Text(rest.to_string()));
        }
        if stack.len() != 1 {
            let open = stack.last().map(|(p, _)| p.join(".")).unwrap_or_default();
            return Err(TemplateError(format!("section {{{{#{open}}}}} is never closed; add {{{{/{open}}}}}")));
        }
        Ok(Template { parts: stack.pop().map(|(_, p)| p).unwrap_or_default() })
    }

    /// Root placeholder paths (outside sections, plus section names).
    pub fn placeholders(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.parts {
            match p {
                Part::Var(path) | Part::Section(path, _) => out.push(path.join(".")),
                Part::Text(_) => {}
            }
        }
        out
    }

    /// Checks every top-level placeholder against the signature's inputs (nested paths
    /// must name fields of object-typed inputs).
    pub fn validate_against(&self, sig: &Signature) -> Result<(), TemplateError> {
        let mut problems = Vec::new();
        for p in &self.parts {
            if let Part::Var(path) | Part::Section(path, _) = p
                && let Err(e) = resolve_type(sig, path)
            {
                problems.push(e);
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(TemplateError(problems.join("; "))) }
    }

    /// Renders with a context map.
    pub fn render(&self, ctx: &Value) -> String {
        let mut out = String::new();
        render_parts(&self.parts, std::slice::from_ref(ctx), &mut out);
        out
    }
}

fn resolve_type(sig: &Signature, path: &[String]) -> Result<(), String> {
    let norm = |s: &str| s.replace('-', "_");
    let Some(first) = path.first() else { return Ok(()) };
    let Some(param) = sig.inputs.iter().find(|f| norm(&f.name) == norm(first)) else {
        let names: Vec<&str> = sig.inputs.iter().map(|f| f.name.as_str()).collect();
        return Err(format!(
            "placeholder {{{{{}}}}} is not a signature input (inputs: {})",
            path.join("."),
            if names.is_empty() { "none".into() } else { names.join(", ") }
        ));
    };
    let mut ty = param.ty.required();
    for seg in &path[1..] {
        match ty {
            Type::Object { fields, .. } => match fields.iter().find(|f| norm(&f.name) == norm(seg)) {
                Some(f) => ty = f.ty.required(),
                None => return Err(format!("placeholder {{{{{}}}}}: {} has no field {seg}", path.join("."), first)),
            },
            Type::Map | Type::Any => return Ok(()),
            _ => return Err(format!("placeholder {{{{{}}}}}: {} is not a map", path.join("."), first)),
        }
    }
    Ok(())
}

fn lookup(scopes: &[Value], path: &[String]) -> Value {
    if path.len() == 1 && path[0] == "." {
        return scopes.last().cloned().unwrap_or(Value::Nil);
    }
    for scope in scopes.iter().rev() {
        let mut cur = scope.clone();
        let mut found = true;
        for seg in path {
            match &cur {
                Value::Map(m) => match crate::validate::field_value(m, seg) {
                    Some((_, v)) => cur = v.clone(),
                    None => {
                        found = false;
                        break;
                    }
                },
                _ => {
                    found = false;
                    break;
                }
            }
        }
        if found {
            return cur;
        }
    }
    Value::Nil
}

fn render_parts(parts: &[Part], scopes: &[Value], out: &mut String) {
    for p in parts {
        match p {
            Part::Text(t) => out.push_str(t),
            Part::Var(path) => match lookup(scopes, path) {
                Value::Nil => {}
                Value::Str(s) => out.push_str(&s),
                other => out.push_str(&ptc_lisp_eval::to_clojure(&other)),
            },
            Part::Section(path, body) => match lookup(scopes, path) {
                Value::Vector(items) | Value::List(items) => {
                    for item in items.iter() {
                        let mut inner = scopes.to_vec();
                        inner.push(item.clone());
                        render_parts(body, &inner, out);
                    }
                }
                v if v.truthy() => {
                    let mut inner = scopes.to_vec();
                    inner.push(v);
                    render_parts(body, &inner, out);
                }
                _ => {}
            },
        }
    }
}
