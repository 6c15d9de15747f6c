//! Validation of values against types (with paths, all errors at once) and lenient
//! coercion of inputs.

use std::fmt;
use std::sync::Arc;

use ptc_lisp_eval::Value;
use ptc_lisp_eval::value::PMap;

use crate::types::Type;

/// How strictly to validate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Fail on errors; extra fields are allowed (default).
    #[default]
    Enabled,
    /// Report errors as warnings and continue.
    WarnOnly,
    /// Fail on errors; extra fields are errors too.
    Strict,
    /// Skip validation.
    Disabled,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "enabled" => Mode::Enabled,
            "warn_only" | "warn-only" => Mode::WarnOnly,
            "strict" => Mode::Strict,
            "disabled" => Mode::Disabled,
            other => {
                return Err(format!("unknown validation mode {other:?}; use enabled, warn_only, strict or disabled"));
            }
        })
    }
}

/// One problem at a path such as `results[0].customer.id`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Issue {
    /// Where (empty for the root).
    pub path: String,
    /// What.
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() { write!(f, "{}", self.message) } else { write!(f, "{}: {}", self.path, self.message) }
    }
}

/// The result of validating or coercing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Problems that make the value invalid.
    pub errors: Vec<Issue>,
    /// Things that were accepted with a note (coercions, warn-only errors).
    pub warnings: Vec<Issue>,
}

impl Report {
    /// True when there are no errors.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// The errors as the bullet list fed back to an LLM.
    pub fn render_errors(&self) -> String {
        self.errors.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n")
    }
}

fn brief(v: &Value) -> String {
    let opts = ptc_lisp_eval::printer::PrintOptions { limit: Some(3), printable_limit: Some(30), max_bytes: 60 };
    let shown = ptc_lisp_eval::printer::to_clojure_with(v, &opts).0;
    match v {
        Value::Nil => "nil".into(),
        Value::Int(_) => format!("int {shown}"),
        Value::Float(_) => format!("float {shown}"),
        Value::Bool(_) => format!("bool {shown}"),
        Value::Vector(_) | Value::List(_) => format!("list {shown}"),
        other => format!("{} {shown}", other.type_name()),
    }
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() { field.to_string() } else { format!("{path}.{field}") }
}

/// Finds a field's value in a map whose keys may be keywords or strings, with `-` or `_`.
pub fn field_value<'a>(m: &'a PMap, name: &str) -> Option<(&'a Value, &'a Value)> {
    let dashed = name.replace('_', "-");
    let underscored = name.replace('-', "_");
    m.iter().find(|(k, _)| match k {
        Value::Keyword(s) | Value::Str(s) => **s == *name || **s == *dashed || **s == *underscored,
        _ => false,
    })
}

fn key_name(k: &Value) -> String {
    match k {
        Value::Keyword(s) | Value::Str(s) => s.replace('-', "_"),
        other => ptc_lisp_eval::to_clojure(other),
    }
}

/// Is `s` an ISO-8601 date-time with an offset (`2026-01-15T10:00:00Z`, `...+02:00`)?
fn is_datetime_with_offset(s: &str) -> bool {
    let Some((date, time)) = s.split_once('T') else { return false };
    let date_ok = date.len() == 10 && date.as_bytes().get(4) == Some(&b'-') && date.as_bytes().get(7) == Some(&b'-');
    let has_offset = time.ends_with('Z')
        || time
            .rfind(['+', '-'])
            .is_some_and(|i| i >= 5 && time[i + 1..].chars().filter(|c| c.is_ascii_digit()).count() >= 2);
    date_ok && has_offset && time.len() >= 6
}

/// Validates `value` against `ty` in `mode`. Output validation: no coercion.
pub fn validate(value: &Value, ty: &Type, mode: Mode) -> Report {
    let mut report = Report::default();
    if mode == Mode::Disabled {
        return report;
    }
    check(value, ty, "", mode == Mode::Strict, &mut report.errors);
    if mode == Mode::WarnOnly {
        report.warnings = std::mem::take(&mut report.errors);
    }
    report
}

fn check(v: &Value, ty: &Type, path: &str, strict: bool, errors: &mut Vec<Issue>) {
    let mismatch = |errors: &mut Vec<Issue>| {
        errors.push(Issue { path: path.to_string(), message: format!("expected {}, got {}", ty.describe(), brief(v)) })
    };
    match (ty, v) {
        (Type::Optional(_), Value::Nil) => {}
        (Type::Optional(t), _) => check(v, t, path, strict, errors),
        (Type::Any, _) => {}
        (Type::String, Value::Str(_)) | (Type::Int, Value::Int(_)) | (Type::Bool, Value::Bool(_)) => {}
        (Type::Float, Value::Float(_) | Value::Int(_)) => {}
        (Type::Keyword, Value::Keyword(_) | Value::Str(_)) => {}
        (Type::Map, Value::Map(_)) => {}
        (Type::Datetime, Value::Str(s)) if is_datetime_with_offset(s) => {}
        (Type::Datetime, Value::Str(_)) => errors.push(Issue {
            path: path.to_string(),
            message: format!(
                "expected datetime (ISO-8601 with an offset, e.g. \"2026-01-15T10:00:00Z\"), got {}",
                brief(v)
            ),
        }),
        (Type::List(t), Value::Vector(items) | Value::List(items)) => {
            for (i, item) in items.iter().enumerate() {
                check(item, t, &format!("{path}[{i}]"), strict, errors);
            }
        }
        (Type::Object { fields, closed }, Value::Map(m)) => {
            for f in fields {
                let p = join(path, &f.name);
                match field_value(m, &f.name) {
                    Some((_, fv)) => check(fv, &f.ty, &p, strict, errors),
                    None if f.ty.is_optional() => {}
                    None => errors.push(Issue {
                        path: p,
                        message: format!("expected {}, got nil (required field missing)", f.ty.describe()),
                    }),
                }
            }
            if strict || *closed {
                for (k, _) in m.iter() {
                    let name = key_name(k);
                    if !fields.iter().any(|f| f.name.replace('-', "_") == name) {
                        errors.push(Issue {
                            path: join(path, &name),
                            message: "unexpected field (not in the signature)".into(),
                        });
                    }
                }
            }
        }
        _ => mismatch(errors),
    }
}

/// Coerces inputs leniently (`"42"` to 42 with a warning), then validates. Returns the
/// coerced value and a report; on errors the value is the partially coerced input.
pub fn coerce(value: &Value, ty: &Type) -> (Value, Report) {
    let mut report = Report::default();
    let v = coerce_at(value, ty, "", &mut report);
    (v, report)
}

fn warn(report: &mut Report, path: &str, msg: String) {
    report.warnings.push(Issue { path: path.to_string(), message: msg });
}

fn coerce_at(v: &Value, ty: &Type, path: &str, report: &mut Report) -> Value {
    match (ty, v) {
        (Type::Optional(_), Value::Nil) => Value::Nil,
        (Type::Optional(t), _) => coerce_at(v, t, path, report),
        (Type::Int, Value::Str(s)) => match s.trim().parse::<i64>() {
            Ok(i) => {
                warn(report, path, format!("coerced string {:?} to int", &**s));
                Value::Int(i)
            }
            Err(_) => fail(v, ty, path, report),
        },
        (Type::Float, Value::Str(s)) => match s.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => {
                warn(report, path, format!("coerced string {:?} to float", &**s));
                Value::Float(x)
            }
            _ => fail(v, ty, path, report),
        },
        (Type::Float, Value::Int(i)) => Value::Float(*i as f64),
        (Type::Bool, Value::Str(s)) if &**s == "true" || &**s == "false" => {
            warn(report, path, format!("coerced string {:?} to bool", &**s));
            Value::Bool(&**s == "true")
        }
        (Type::String, Value::Keyword(k)) => {
            warn(report, path, format!("coerced keyword :{k} to string"));
            Value::Str(k.clone())
        }
        (Type::Keyword, Value::Str(s)) if !s.is_empty() => Value::Keyword(s.clone()),
        (Type::Datetime, Value::Str(s)) => match ptc_datetime_utc(s) {
            Some((utc, shifted)) => {
                if shifted {
                    warn(report, path, format!("shifted datetime {:?} to UTC {utc:?}", &**s));
                }
                Value::str(utc)
            }
            None => fail(v, ty, path, report),
        },
        (Type::List(t), Value::Vector(items) | Value::List(items)) => {
            Value::vector(items.iter().enumerate().map(|(i, x)| coerce_at(x, t, &format!("{path}[{i}]"), report)))
        }
        (Type::Object { fields, .. }, Value::Map(m)) => {
            let mut out: PMap = (**m).clone();
            for f in fields {
                let p = join(path, &f.name);
                match field_value(m, &f.name) {
                    Some((k, fv)) => {
                        let c = coerce_at(fv, &f.ty, &p, report);
                        out.insert(k.clone(), c);
                    }
                    None if f.ty.is_optional() => {}
                    None => report.errors.push(Issue {
                        path: p,
                        message: format!("expected {}, got nil (required field missing)", f.ty.describe()),
                    }),
                }
            }
            Value::Map(Arc::new(out))
        }
        _ => {
            let mut errors = Vec::new();
            check(v, ty, path, false, &mut errors);
            report.errors.extend(errors);
            v.clone()
        }
    }
}

fn fail(v: &Value, ty: &Type, path: &str, report: &mut Report) -> Value {
    report
        .errors
        .push(Issue { path: path.to_string(), message: format!("expected {}, got {}", ty.describe(), brief(v)) });
    v.clone()
}

/// Normalises an ISO-8601 date-time with offset to UTC (`...Z`). `None` for naive or
/// malformed text; the flag says whether the offset was not already UTC.
fn ptc_datetime_utc(s: &str) -> Option<(String, bool)> {
    if !is_datetime_with_offset(s) {
        return None;
    }
    if s.ends_with('Z') {
        return Some((s.to_string(), false));
    }
    let i = s.rfind(['+', '-'])?;
    let (local, off) = s.split_at(i);
    let sign: i64 = if off.starts_with('-') { -1 } else { 1 };
    let (oh, om) = off[1..].split_once(':').unwrap_or((&off[1..3.min(off.len())], "0"));
    let offset_min = sign * (oh.parse::<i64>().ok()? * 60 + om.parse::<i64>().ok()?);
    let (date, time) = local.split_once('T')?;
    let mut dparts = date.split('-').map(|p| p.parse::<i64>());
    let (y, mo, d) = (dparts.next()?.ok()?, dparts.next()?.ok()?, dparts.next()?.ok()?);
    let (hms, frac) = time.split_once('.').map(|(a, b)| (a, format!(".{b}"))).unwrap_or((time, String::new()));
    let mut t = hms.split(':').map(|p| p.parse::<i64>());
    let (h, mi, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next().unwrap_or(Ok(0)).ok()?);
    let total = (days_from_civil(y, mo, d) * 1440 + h * 60 + mi) - offset_min;
    let (days, minutes) = (total.div_euclid(1440), total.rem_euclid(1440));
    let (y, mo, d) = civil_from_days(days);
    Some((format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{sec:02}{frac}Z", minutes / 60, minutes % 60), offset_min != 0))
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
