//! The Java interop subset: string methods (`.indexOf`...), number parsing classes,
//! `System/currentTimeMillis`, and dates. Dates are ISO-8601 strings (`"2026-01-15"` for a
//! LocalDate, `"2026-01-15T10:00:00Z"` for an instant, always UTC) and durations are
//! milliseconds, so every result prints and serialises plainly.

use super::{Arity, Builtin, Category, expected, int_arg, str_arg};
use crate::error::{ErrorKind, EvalResult, err};
use crate::interp::Interp;
use crate::value::Value;

use Arity::*;
use Category::Interop;

/// Interop builtins.
pub static BUILTINS: &[Builtin] = &[
    Builtin::new(".indexOf", Range(2, 3), Interop, index_of)
        .doc("Java String.indexOf: character index, or -1 when absent.")
        .ex(&[("(.indexOf \"hello\" \"l\")", "2"), ("(.indexOf \"hello\" \"z\")", "-1")]),
    Builtin::new(".lastIndexOf", Exact(2), Interop, last_index_of)
        .doc("Java String.lastIndexOf: character index, or -1.")
        .ex(&[("(.lastIndexOf \"hello\" \"l\")", "3")]),
    Builtin::new(".toLowerCase", Exact(1), Interop, to_lower)
        .doc("Lower-cased string.")
        .ex(&[("(.toLowerCase \"AbC\")", "\"abc\"")]),
    Builtin::new(".toUpperCase", Exact(1), Interop, to_upper)
        .doc("Upper-cased string.")
        .ex(&[("(.toUpperCase \"abc\")", "\"ABC\"")]),
    Builtin::new(".startsWith", Exact(2), Interop, starts_with)
        .doc("True when the string starts with the prefix.")
        .ex(&[("(.startsWith \"hello\" \"he\")", "true")]),
    Builtin::new(".endsWith", Exact(2), Interop, ends_with)
        .doc("True when the string ends with the suffix.")
        .ex(&[("(.endsWith \"hello\" \"lo\")", "true")]),
    Builtin::new(".contains", Exact(2), Interop, contains)
        .doc("True when the string contains the substring.")
        .ex(&[("(.contains \"hello\" \"ell\")", "true")]),
    Builtin::new(".length", Exact(1), Interop, length).doc("Number of characters.").ex(&[("(.length \"hello\")", "5")]),
    Builtin::new(".trim", Exact(1), Interop, trim)
        .doc("String without surrounding whitespace.")
        .ex(&[("(.trim \" a \")", "\"a\"")]),
    Builtin::new(".isEmpty", Exact(1), Interop, is_empty)
        .doc("True for the empty string.")
        .ex(&[("(.isEmpty \"\")", "true")]),
    Builtin::new(".substring", Range(2, 3), Interop, substring)
        .doc("Characters [start, end); out of range is an error, as in Java.")
        .ex(&[("(.substring \"hello\" 1 3)", "\"el\"")]),
    Builtin::new("Integer/parseInt", Exact(1), Interop, parse_long)
        .alias(&["Long/parseLong"])
        .doc("Integer from a string, or nil when it is not one (like parse-long).")
        .ex(&[("(Integer/parseInt \"42\")", "42")]),
    Builtin::new("Double/parseDouble", Exact(1), Interop, parse_double)
        .alias(&["Float/parseFloat"])
        .doc("Float from a string, or nil (like parse-double).")
        .ex(&[("(Double/parseDouble \"1.5\")", "1.5")]),
    Builtin::new("Boolean/parseBoolean", Exact(1), Interop, parse_boolean)
        .doc("true for \"true\" in any case; false for nil and other strings.")
        .ex(&[("(Boolean/parseBoolean \"TRUE\")", "true")]),
    Builtin::new("System/currentTimeMillis", Exact(0), Interop, now_millis)
        .doc("Milliseconds since 1970-01-01 UTC.")
        .ex(&[("(pos? (System/currentTimeMillis))", "true")]),
    Builtin::new("LocalDate/parse", Exact(1), Interop, parse_date)
        .alias(&["parse"])
        .doc("A date \"YYYY-MM-DD\" (or an instant when the text has a time), validated and normalised.")
        .ex(&[("(LocalDate/parse \"2026-01-15\")", "\"2026-01-15\"")]),
    Builtin::new("Instant/parse", Exact(1), Interop, parse_instant)
        .doc("An instant as an ISO-8601 UTC string.")
        .ex(&[("(Instant/parse \"2026-01-15T10:00:00+01:00\")", "\"2026-01-15T09:00:00Z\"")]),
    Builtin::new("java.util.Date.", Range(0, 1), Interop, new_date)
        .doc("An instant: now, from epoch seconds (< 1e12) or milliseconds, or from an ISO string.")
        .ex(&[("(java.util.Date. 0)", "\"1970-01-01T00:00:00Z\"")]),
    Builtin::new(".getTime", Exact(1), Interop, get_time)
        .doc("Epoch milliseconds of an instant.")
        .ex(&[("(.getTime (Instant/parse \"1970-01-01T00:00:01Z\"))", "1000")]),
    Builtin::new(".toEpochDay", Exact(1), Interop, to_epoch_day)
        .doc("Days since 1970-01-01 of a date.")
        .ex(&[("(.toEpochDay (LocalDate/parse \"1970-01-11\"))", "10")]),
    Builtin::new(".plusDays", Exact(2), Interop, plus_days)
        .doc("The date n days later.")
        .ex(&[("(.plusDays (LocalDate/parse \"2026-02-27\") 2)", "\"2026-03-01\"")]),
    Builtin::new(".minusDays", Exact(2), Interop, minus_days)
        .doc("The date n days earlier.")
        .ex(&[("(.minusDays (LocalDate/parse \"2026-03-01\") 1)", "\"2026-02-28\"")]),
    Builtin::new(".isBefore", Exact(2), Interop, is_before)
        .doc("True when the first date (or instant) is earlier.")
        .ex(&[("(.isBefore (LocalDate/parse \"2026-01-01\") (LocalDate/parse \"2026-02-01\"))", "true")]),
    Builtin::new(".isAfter", Exact(2), Interop, is_after)
        .doc("True when the first date (or instant) is later.")
        .ex(&[("(.isAfter (LocalDate/parse \"2026-01-01\") (LocalDate/parse \"2026-02-01\"))", "false")]),
    Builtin::new("Duration/between", Exact(2), Interop, duration_between)
        .doc("Milliseconds from the first instant (or date) to the second.")
        .ex(&[(
            "(Duration/between (Instant/parse \"2026-01-01T00:00:00Z\") (Instant/parse \"2026-01-02T00:00:00Z\"))",
            "86400000",
        )]),
    Builtin::new(".toMillis", Exact(1), Interop, to_millis)
        .doc("A duration in milliseconds.")
        .ex(&[("(.toMillis 1500)", "1500")]),
    Builtin::new(".toDays", Exact(1), Interop, to_days)
        .doc("A duration in whole days (toward zero).")
        .ex(&[("(.toDays 172800000)", "2")]),
];

fn s1<'a>(fname: &str, a: &'a [Value]) -> EvalResult<&'a str> {
    str_arg(fname, &a[0])
}
fn char_idx(s: &str, byte: usize) -> i64 {
    s[..byte].chars().count() as i64
}
fn index_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s1(".indexOf", a)?;
    let sub = str_arg(".indexOf", &a[1])?;
    let from = match a.get(2) {
        Some(v) => s.char_indices().nth(int_arg(".indexOf", v)?.max(0) as usize).map(|(b, _)| b).unwrap_or(s.len()),
        None => 0,
    };
    Ok(Value::Int(s[from..].find(sub).map(|b| char_idx(s, from + b)).unwrap_or(-1)))
}
fn last_index_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s1(".lastIndexOf", a)?;
    Ok(Value::Int(s.rfind(str_arg(".lastIndexOf", &a[1])?).map(|b| char_idx(s, b)).unwrap_or(-1)))
}
fn to_lower(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(s1(".toLowerCase", a)?.to_lowercase()))
}
fn to_upper(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(s1(".toUpperCase", a)?.to_uppercase()))
}
fn starts_with(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(s1(".startsWith", a)?.starts_with(str_arg(".startsWith", &a[1])?)))
}
fn ends_with(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(s1(".endsWith", a)?.ends_with(str_arg(".endsWith", &a[1])?)))
}
fn contains(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(s1(".contains", a)?.contains(str_arg(".contains", &a[1])?)))
}
fn length(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(s1(".length", a)?.chars().count() as i64))
}
fn trim(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(s1(".trim", a)?.trim()))
}
fn is_empty(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(s1(".isEmpty", a)?.is_empty()))
}
fn substring(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s1(".substring", a)?;
    let n = s.chars().count() as i64;
    let start = int_arg(".substring", &a[1])?;
    let end = match a.get(2) {
        Some(e) => int_arg(".substring", e)?,
        None => n,
    };
    if start < 0 || end > n || start > end {
        return err(
            ErrorKind::RuntimeError,
            format!(".substring: range [{start}, {end}) is outside the string of length {n}; use subs, which clamps"),
        );
    }
    Ok(Value::str(s.chars().skip(start as usize).take((end - start) as usize).collect::<String>()))
}
fn parse_long(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    super::lookup("parse-long").map_or(Ok(Value::Nil), |b| b.call(interp, a))
}
fn parse_double(interp: &mut Interp, a: &mut [Value]) -> EvalResult {
    super::lookup("parse-double").map_or(Ok(Value::Nil), |b| b.call(interp, a))
}
fn parse_boolean(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Str(s) => Ok(Value::Bool(s.eq_ignore_ascii_case("true"))),
        Value::Nil => Ok(Value::Bool(false)),
        other => expected("Boolean/parseBoolean", "a string", other),
    }
}
fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
fn now_millis(_: &mut Interp, _: &mut [Value]) -> EvalResult {
    Ok(Value::Int(now_ms()))
}

/// Days since 1970-01-01 for a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}
fn date_text(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}
fn instant_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    if milli == 0 {
        format!("{}T{h:02}:{mi:02}:{s:02}Z", date_text(days))
    } else {
        format!("{}T{h:02}:{mi:02}:{s:02}.{milli:03}Z", date_text(days))
    }
}
fn num(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) { None } else { s.parse().ok() }
}
/// Days since the epoch of a "YYYY-MM-DD" text.
fn parse_day(s: &str) -> Option<i64> {
    let mut parts = s.splitn(3, '-');
    let (y, m, d) = (num(parts.next()?)?, num(parts.next()?)?, num(parts.next()?)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}
/// Epoch milliseconds of an ISO-8601 text: a date, or a date-time with optional fraction
/// and offset (no offset means UTC).
fn parse_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let Some((date, time)) = s.split_once(['T', ' ']) else {
        return parse_day(s).map(|d| d * 86_400_000);
    };
    let day = parse_day(date)?;
    let (clock, offset_ms) = if let Some(c) = time.strip_suffix('Z') {
        (c, 0)
    } else if let Some(i) = time.rfind(['+', '-']).filter(|i| *i >= 5) {
        let (c, off) = time.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':').unwrap_or((&off[1..], "0"));
        (c, sign * (num(oh)? * 3_600_000 + num(om)? * 60_000))
    } else {
        (time, 0)
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut it = hms.split(':');
    let h = num(it.next()?)?;
    let mi = num(it.next()?)?;
    let sec = it.next().map(num).unwrap_or(Some(0))?;
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let milli = if frac.is_empty() { 0 } else { num(&format!("{frac:0<3}")[..3])? };
    Some(day * 86_400_000 + h * 3_600_000 + mi * 60_000 + sec * 1000 + milli - offset_ms)
}
fn text_arg<'a>(fname: &str, v: &'a Value) -> EvalResult<&'a str> {
    match v {
        Value::Str(s) => Ok(s),
        other => expected(fname, "a date or instant (an ISO-8601 string such as \"2026-01-15\")", other),
    }
}
fn bad_date<T>(fname: &str, s: &str) -> EvalResult<T> {
    err(
        ErrorKind::RuntimeError,
        format!("{fname}: cannot parse {s:?} as a date; write \"YYYY-MM-DD\" or \"YYYY-MM-DDThh:mm:ssZ\""),
    )
}
fn parse_date(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = text_arg("LocalDate/parse", &a[0])?;
    if s.contains('T') {
        return parse_ms(s).map(|ms| Value::str(instant_text(ms))).map_or_else(|| bad_date("parse", s), Ok);
    }
    parse_day(s).map(|d| Value::str(date_text(d))).map_or_else(|| bad_date("LocalDate/parse", s), Ok)
}
fn parse_instant(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = text_arg("Instant/parse", &a[0])?;
    parse_ms(s).map(|ms| Value::str(instant_text(ms))).map_or_else(|| bad_date("Instant/parse", s), Ok)
}
fn new_date(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let ms = match a.first() {
        None => now_ms(),
        Some(Value::Int(ts)) if ts.abs() < 1_000_000_000_000 => ts.saturating_mul(1000),
        Some(Value::Int(ts)) => *ts,
        Some(Value::Str(s)) => match parse_ms(s) {
            Some(ms) => ms,
            None => return bad_date("java.util.Date.", s),
        },
        Some(other) => {
            return expected("java.util.Date.", "nothing, epoch seconds/milliseconds, or an ISO string", other);
        }
    };
    Ok(Value::str(instant_text(ms)))
}
fn ms_of(fname: &str, v: &Value) -> EvalResult<i64> {
    let s = text_arg(fname, v)?;
    parse_ms(s).map_or_else(|| bad_date(fname, s), Ok)
}
fn get_time(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ms_of(".getTime", &a[0])?))
}
fn day_of(fname: &str, v: &Value) -> EvalResult<i64> {
    let s = text_arg(fname, v)?;
    parse_day(s).map_or_else(|| bad_date(fname, s), Ok)
}
fn to_epoch_day(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(day_of(".toEpochDay", &a[0])?))
}
fn plus_days(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let d = day_of(".plusDays", &a[0])?;
    Ok(Value::str(date_text(d + int_arg(".plusDays", &a[1])?.clamp(-3_000_000, 3_000_000))))
}
fn minus_days(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let d = day_of(".minusDays", &a[0])?;
    Ok(Value::str(date_text(d - int_arg(".minusDays", &a[1])?.clamp(-3_000_000, 3_000_000))))
}
fn same_kind(fname: &str, a: &[Value]) -> EvalResult<(i64, i64)> {
    let (x, y) = (text_arg(fname, &a[0])?, text_arg(fname, &a[1])?);
    if x.contains('T') != y.contains('T') {
        return err(
            ErrorKind::TypeError,
            format!("{fname}: cannot compare a LocalDate with an instant — use the same types"),
        );
    }
    Ok((ms_of(fname, &a[0])?, ms_of(fname, &a[1])?))
}
fn is_before(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = same_kind(".isBefore", a)?;
    Ok(Value::Bool(x < y))
}
fn is_after(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = same_kind(".isAfter", a)?;
    Ok(Value::Bool(x > y))
}
fn duration_between(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ms_of("Duration/between", &a[1])? - ms_of("Duration/between", &a[0])?))
}
fn to_millis(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(int_arg(".toMillis", &a[0])?))
}
fn to_days(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(int_arg(".toDays", &a[0])? / 86_400_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for z in [-800_000, -1, 0, 1, 59, 10_000, 20_000, 2_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(parse_day("2024-02-29"), Some(19_782));
        assert_eq!(parse_day("2023-02-29"), None);
        assert_eq!(parse_ms("2026-01-15T10:00:00+01:00").map(instant_text), Some("2026-01-15T09:00:00Z".into()));
        assert_eq!(parse_ms("2026-01-15T10:00:00.5Z").map(instant_text), Some("2026-01-15T10:00:00.500Z".into()));
    }
}
