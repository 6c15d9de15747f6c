//! Dates without a date type: a `LocalDate` is the ISO text `"2026-01-15"`, an `Instant`
//! (and a `java.util.Date`) the UTC text `"2026-01-15T10:00:00Z"`, and a `Duration` a
//! number of milliseconds. Every result therefore prints, compares and serialises
//! plainly, and `(str d)` gives what Java's `toString` gives. Calendar arithmetic is the
//! proleptic Gregorian calendar (days-from-civil). There is no clock here: the current
//! time of `System/currentTimeMillis` and `(java.util.Date.)` comes from the host
//! ([`crate::Host::clock_millis`]), and without one those calls are refused.

use super::{expected, java_int};
use crate::builtins::context::BuiltinContext;
use crate::error::{ErrorKind, EvalResult, err, type_err};
use crate::value::Value;

const DAY_MS: i64 = 86_400_000;
/// Dates stay within years -999 999..=999 999 (Java allows ±999 999 999).
const MAX_DAYS: i64 = 365_000_000;

/// The host's clock, or the error that explains there is none.
fn now_ms(cx: &BuiltinContext, fname: &str) -> EvalResult<i64> {
    match cx.clock_millis() {
        Some(ms) => Ok(ms),
        None => err(
            ErrorKind::UnsupportedMethod,
            format!(
                "{fname}: programs have no clock here (runs are deterministic); take the current time from the context or a tool"
            ),
        ),
    }
}
/// `System/currentTimeMillis`.
pub(super) fn now_millis(cx: &mut BuiltinContext, _: &mut [Value]) -> EvalResult {
    Ok(Value::Int(now_ms(cx, "System/currentTimeMillis")?))
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
fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}
fn date_text(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    if (0..=9999).contains(&y) { format!("{y:04}-{m:02}-{d:02}") } else { format!("{y:+05}-{m:02}-{d:02}") }
}
fn instant_text(ms: i64) -> String {
    let days = ms.div_euclid(DAY_MS);
    let rem = ms.rem_euclid(DAY_MS);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    let date = date_text(days);
    if milli == 0 {
        format!("{date}T{h:02}:{mi:02}:{s:02}Z")
    } else {
        format!("{date}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    }
}
/// Digits only, exactly `len` of them when `len` is given.
fn num(s: &str, len: Option<usize>) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || len.is_some_and(|l| s.len() != l) {
        return None;
    }
    s.parse().ok()
}
/// Days since the epoch of `YYYY-MM-DD`; `strict` requires Java's two-digit month and day
/// and a four-digit year.
fn parse_day(s: &str, strict: bool) -> Option<i64> {
    let mut parts = s.splitn(3, '-');
    let (y, m, d) = if strict {
        (num(parts.next()?, Some(4))?, num(parts.next()?, Some(2))?, num(parts.next()?, Some(2))?)
    } else {
        (num(parts.next()?, None)?, num(parts.next()?, None)?, num(parts.next()?, None)?)
    };
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}
/// Epoch milliseconds of ISO-8601 text. Strict (Java's `Instant.parse`): a date, `T`,
/// hh:mm:ss with an optional fraction, then `Z` or an offset. Lenient: also a bare date
/// (midnight UTC), a space for the `T`, no seconds and no offset (UTC).
fn parse_ms(s: &str, strict: bool) -> Option<i64> {
    let s = if strict { s } else { s.trim() };
    let split = if strict { s.split_once('T') } else { s.split_once(['T', ' ']) };
    let Some((date, time)) = split else {
        return if strict { None } else { parse_day(s, false).map(|d| d * DAY_MS) };
    };
    let day = parse_day(date, strict)?;
    let (clock, offset_ms) = if let Some(c) = time.strip_suffix('Z').or_else(|| time.strip_suffix('z')) {
        (c, 0)
    } else if let Some(i) = time.rfind(['+', '-']).filter(|i| *i >= 5) {
        let (c, off) = time.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let off = off.get(1..)?;
        let mut fields = off.split(':');
        let oh = num(fields.next()?, Some(2))?;
        let om = fields.next().map_or(Some(0), |m| num(m, Some(2)))?;
        let os = fields.next().map_or(Some(0), |s| num(s, Some(2)))?;
        if oh > 18 || om > 59 || os > 59 {
            return None;
        }
        (c, sign * (oh * 3_600_000 + om * 60_000 + os * 1000))
    } else if strict {
        return None;
    } else {
        (time, 0)
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut it = hms.split(':');
    let h = num(it.next()?, Some(2))?;
    let mi = num(it.next()?, Some(2))?;
    let sec = match it.next() {
        Some(x) => num(x, Some(2))?,
        None if strict => return None,
        None => 0,
    };
    if it.next().is_some() || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    if clock.contains('.') && (frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let milli =
        frac.bytes().take(3).chain(std::iter::repeat(b'0')).take(3).fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
    Some(day * DAY_MS + h * 3_600_000 + mi * 60_000 + sec * 1000 + milli - offset_ms)
}
fn text_arg<'a>(fname: &str, v: &'a Value) -> EvalResult<&'a str> {
    match v {
        Value::Str(s) => Ok(s),
        other => expected(fname, "a date or instant (an ISO-8601 string such as \"2026-01-15\")", other),
    }
}
fn bad_date<T>(fname: &str, s: &str, want: &str) -> EvalResult<T> {
    err(
        ErrorKind::RuntimeError,
        format!("{fname}: cannot parse {:?} (DateTimeParseException); write {want}", crate::printer::clip(s, 60)),
    )
}
const DATE_FORM: &str = "a date as \"YYYY-MM-DD\"";
const INSTANT_FORM: &str = "an instant as \"YYYY-MM-DDThh:mm:ssZ\" (or with an offset such as +01:00)";

pub(super) fn parse_local_date(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = text_arg("LocalDate/parse", &a[0])?;
    parse_day(s, true).map_or_else(|| bad_date("LocalDate/parse", s, DATE_FORM), |d| Ok(Value::str(date_text(d))))
}
pub(super) fn parse_instant(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = text_arg("Instant/parse", &a[0])?;
    parse_ms(s, true).map_or_else(|| bad_date("Instant/parse", s, INSTANT_FORM), |ms| Ok(Value::str(instant_text(ms))))
}
pub(super) fn parse_any(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = text_arg("parse", &a[0])?;
    if !s.contains(['T', ' ']) {
        return parse_day(s, false).map_or_else(|| bad_date("parse", s, DATE_FORM), |d| Ok(Value::str(date_text(d))));
    }
    parse_ms(s, false).map_or_else(|| bad_date("parse", s, INSTANT_FORM), |ms| Ok(Value::str(instant_text(ms))))
}
fn int_of(fname: &str, v: &Value) -> EvalResult<i64> {
    java_int(fname, v)
}
fn checked_day(fname: &str, days: Option<i64>) -> EvalResult {
    match days.filter(|d| d.unsigned_abs() <= MAX_DAYS.unsigned_abs()) {
        Some(d) => Ok(Value::str(date_text(d))),
        None => err(ErrorKind::ArithmeticError, format!("{fname}: the date is out of the supported range")),
    }
}
fn checked_instant(fname: &str, ms: Option<i64>) -> EvalResult {
    match ms.filter(|ms| (ms / DAY_MS).unsigned_abs() <= MAX_DAYS.unsigned_abs()) {
        Some(ms) => Ok(Value::str(instant_text(ms))),
        None => err(ErrorKind::ArithmeticError, format!("{fname}: the instant is out of the supported range")),
    }
}
pub(super) fn local_date_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (y, m, d) = (int_of("LocalDate/of", &a[0])?, int_of("LocalDate/of", &a[1])?, int_of("LocalDate/of", &a[2])?);
    if y.unsigned_abs() > 999_999 || !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return err(
            ErrorKind::RuntimeError,
            format!("LocalDate/of: {y}-{m}-{d} is not a valid date (DateTimeException)"),
        );
    }
    Ok(Value::str(date_text(days_from_civil(y, m, d))))
}
pub(super) fn local_date_of_epoch_day(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    checked_day("LocalDate/ofEpochDay", Some(int_of("LocalDate/ofEpochDay", &a[0])?))
}
pub(super) fn instant_of_epoch_milli(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    checked_instant("Instant/ofEpochMilli", Some(int_of("Instant/ofEpochMilli", &a[0])?))
}
pub(super) fn instant_of_epoch_second(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    checked_instant("Instant/ofEpochSecond", int_of("Instant/ofEpochSecond", &a[0])?.checked_mul(1000))
}
pub(super) fn new_date(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match a.first() {
        None => checked_instant("java.util.Date.", Some(now_ms(cx, "(java.util.Date.)")?)),
        Some(Value::Int(ms)) => checked_instant("java.util.Date.", Some(*ms)),
        Some(Value::Str(s)) => parse_ms(s, false)
            .map_or_else(|| bad_date("java.util.Date.", s, INSTANT_FORM), |ms| Ok(Value::str(instant_text(ms)))),
        Some(other) => expected("java.util.Date.", "nothing, epoch milliseconds, or an ISO-8601 string", other),
    }
}
/// Epoch milliseconds of an instant (or of a date, at midnight UTC).
fn ms_of(fname: &str, v: &Value) -> EvalResult<i64> {
    let s = text_arg(fname, v)?;
    parse_ms(s, false).map_or_else(|| bad_date(fname, s, INSTANT_FORM), Ok)
}
pub(super) fn get_time(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ms_of(".getTime", &a[0])?))
}
pub(super) fn get_epoch_second(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ms_of(".getEpochSecond", &a[0])?.div_euclid(1000)))
}
pub(super) fn to_instant(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(instant_text(ms_of(".toInstant", &a[0])?)))
}
fn shift_ms(fname: &str, a: &[Value], unit: i64) -> EvalResult {
    let ms = ms_of(fname, &a[0])?;
    let by = int_of(fname, &a[1])?.checked_mul(unit);
    checked_instant(fname, by.and_then(|by| ms.checked_add(by)))
}
pub(super) fn plus_seconds(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    shift_ms(".plusSeconds", a, 1000)
}
pub(super) fn minus_seconds(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    shift_ms(".minusSeconds", a, -1000)
}
pub(super) fn plus_millis(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    shift_ms(".plusMillis", a, 1)
}
pub(super) fn minus_millis(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    shift_ms(".minusMillis", a, -1)
}
/// Epoch day of a date argument.
fn day_of(fname: &str, v: &Value) -> EvalResult<i64> {
    let s = text_arg(fname, v)?;
    match parse_day(s, false) {
        Some(d) => Ok(d),
        None if s.contains('T') => type_err(format!(
            "{fname}: {s:?} is an instant, not a date; LocalDate methods take \"YYYY-MM-DD\" (use (subs s 0 10) for the date part)"
        )),
        None => bad_date(fname, s, DATE_FORM),
    }
}
pub(super) fn to_epoch_day(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(day_of(".toEpochDay", &a[0])?))
}
fn add_days(fname: &str, a: &[Value], unit: i64) -> EvalResult {
    let d = day_of(fname, &a[0])?;
    let by = int_of(fname, &a[1])?.checked_mul(unit);
    checked_day(fname, by.and_then(|by| d.checked_add(by)))
}
pub(super) fn plus_days(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_days(".plusDays", a, 1)
}
pub(super) fn minus_days(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_days(".minusDays", a, -1)
}
pub(super) fn plus_weeks(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_days(".plusWeeks", a, 7)
}
pub(super) fn minus_weeks(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_days(".minusWeeks", a, -7)
}
/// Java's plusMonths: month arithmetic, then the day cut to the new month's length.
fn add_months(fname: &str, a: &[Value], unit: i64) -> EvalResult {
    let (y, m, d) = civil_from_days(day_of(fname, &a[0])?);
    let Some(months) = int_of(fname, &a[1])?.checked_mul(unit).filter(|n| n.unsigned_abs() <= 12 * 1_000_000) else {
        return err(ErrorKind::ArithmeticError, format!("{fname}: the date is out of the supported range"));
    };
    let total = y * 12 + (m - 1) + months;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    checked_day(fname, Some(days_from_civil(ny, nm, d.min(days_in_month(ny, nm)))))
}
pub(super) fn plus_months(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_months(".plusMonths", a, 1)
}
pub(super) fn minus_months(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_months(".minusMonths", a, -1)
}
pub(super) fn plus_years(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_months(".plusYears", a, 12)
}
pub(super) fn minus_years(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    add_months(".minusYears", a, -12)
}
fn ymd(fname: &str, v: &Value) -> EvalResult<(i64, i64, i64)> {
    Ok(civil_from_days(day_of(fname, v)?))
}
pub(super) fn get_year(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ymd(".getYear", &a[0])?.0))
}
pub(super) fn get_month_value(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ymd(".getMonthValue", &a[0])?.1))
}
const MONTHS: [&str; 12] = [
    "JANUARY",
    "FEBRUARY",
    "MARCH",
    "APRIL",
    "MAY",
    "JUNE",
    "JULY",
    "AUGUST",
    "SEPTEMBER",
    "OCTOBER",
    "NOVEMBER",
    "DECEMBER",
];
pub(super) fn get_month(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let m = ymd(".getMonth", &a[0])?.1;
    Ok(MONTHS.get((m - 1) as usize).map_or(Value::Nil, |n| Value::str(*n)))
}
pub(super) fn get_day_of_month(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(ymd(".getDayOfMonth", &a[0])?.2))
}
pub(super) fn get_day_of_year(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let d = day_of(".getDayOfYear", &a[0])?;
    let (y, _, _) = civil_from_days(d);
    Ok(Value::Int(d - days_from_civil(y, 1, 1) + 1))
}
const WEEKDAYS: [&str; 7] = ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"];
pub(super) fn get_day_of_week(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    // 1970-01-01 was a Thursday (index 3)
    let d = day_of(".getDayOfWeek", &a[0])?;
    Ok(WEEKDAYS.get((d + 3).rem_euclid(7) as usize).map_or(Value::Nil, |n| Value::str(*n)))
}
pub(super) fn length_of_month(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (y, m, _) = ymd(".lengthOfMonth", &a[0])?;
    Ok(Value::Int(days_in_month(y, m)))
}
pub(super) fn length_of_year(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(if is_leap(ymd(".lengthOfYear", &a[0])?.0) { 366 } else { 365 }))
}
pub(super) fn is_leap_year(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(is_leap(ymd(".isLeapYear", &a[0])?.0)))
}
/// Two dates or two instants, as comparable milliseconds.
fn same_kind(fname: &str, a: &[Value]) -> EvalResult<(i64, i64)> {
    let (x, y) = (text_arg(fname, &a[0])?, text_arg(fname, &a[1])?);
    if x.contains('T') != y.contains('T') {
        return type_err(format!(
            "{fname}: cannot compare a LocalDate with an instant — use the same types (a date is \"YYYY-MM-DD\", an instant has a time)"
        ));
    }
    Ok((ms_of(fname, &a[0])?, ms_of(fname, &a[1])?))
}
pub(super) fn is_before(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = same_kind(".isBefore", a)?;
    Ok(Value::Bool(x < y))
}
pub(super) fn is_after(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = same_kind(".isAfter", a)?;
    Ok(Value::Bool(x > y))
}
pub(super) fn is_equal(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = same_kind(".isEqual", a)?;
    Ok(Value::Bool(x == y))
}
pub(super) fn duration_between(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (x, y) = (ms_of("Duration/between", &a[0])?, ms_of("Duration/between", &a[1])?);
    Ok(Value::Int(y - x))
}
fn duration_of(fname: &str, v: &Value, unit: i64) -> EvalResult {
    match int_of(fname, v)?.checked_mul(unit) {
        Some(ms) => Ok(Value::Int(ms)),
        None => err(ErrorKind::ArithmeticError, format!("{fname}: the duration does not fit in 64-bit milliseconds")),
    }
}
pub(super) fn duration_of_millis(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    duration_of("Duration/ofMillis", &a[0], 1)
}
pub(super) fn duration_of_seconds(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    duration_of("Duration/ofSeconds", &a[0], 1000)
}
pub(super) fn duration_of_minutes(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    duration_of("Duration/ofMinutes", &a[0], 60_000)
}
pub(super) fn duration_of_hours(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    duration_of("Duration/ofHours", &a[0], 3_600_000)
}
pub(super) fn duration_of_days(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    duration_of("Duration/ofDays", &a[0], DAY_MS)
}
fn millis(fname: &str, v: &Value) -> EvalResult<i64> {
    match v {
        Value::Int(ms) => Ok(*ms),
        other => expected(fname, "a duration (milliseconds, e.g. from Duration/between)", other),
    }
}
pub(super) fn to_millis(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(millis(".toMillis", &a[0])?))
}
/// Java keeps whole seconds rounded down plus a positive nano part; the larger units
/// divide those seconds toward zero.
fn seconds(fname: &str, v: &Value) -> EvalResult<i64> {
    Ok(millis(fname, v)?.div_euclid(1000))
}
pub(super) fn to_seconds(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(seconds(".toSeconds", &a[0])?))
}
pub(super) fn to_minutes(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(seconds(".toMinutes", &a[0])? / 60))
}
pub(super) fn to_hours(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(seconds(".toHours", &a[0])? / 3600))
}
pub(super) fn to_days(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(seconds(".toDays", &a[0])? / 86_400))
}
pub(super) fn is_negative(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(millis(".isNegative", &a[0])? < 0))
}
pub(super) fn is_zero(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(millis(".isZero", &a[0])? == 0))
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
        assert_eq!(parse_day("2024-02-29", true), Some(19_782));
        assert_eq!(parse_day("2023-02-29", true), None);
        assert_eq!(parse_day("2026-1-5", true), None);
        assert_eq!(parse_day("2026-1-5", false), Some(days_from_civil(2026, 1, 5)));
    }

    #[test]
    fn instants() {
        let iso = |s, strict| parse_ms(s, strict).map(instant_text);
        assert_eq!(iso("2026-01-15T10:00:00+01:00", true), Some("2026-01-15T09:00:00Z".into()));
        assert_eq!(iso("2026-01-15T10:00:00.5Z", true), Some("2026-01-15T10:00:00.500Z".into()));
        assert_eq!(iso("2026-01-15T10:00Z", true), None);
        assert_eq!(iso("2026-01-15T10:00:00", true), None);
        assert_eq!(iso("2026-01-15T10:00", false), Some("2026-01-15T10:00:00Z".into()));
        assert_eq!(iso("2026-01-15", false), Some("2026-01-15T00:00:00Z".into()));
        assert_eq!(instant_text(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(date_text(days_from_civil(-1, 1, 1)), "-0001-01-01");
    }
}
