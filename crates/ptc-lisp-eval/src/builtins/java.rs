//! The Java interop subset: the registry table, `java.lang.String` methods (`.indexOf`...)
//! here, the number, `Boolean`, `Character` and `String` classes in [`classes`], and
//! `System/currentTimeMillis` and dates in [`time`].
//!
//! Java-named calls keep Java semantics where PTC-Lisp can represent them: string methods
//! index by UTF-16 code units like Java (`(.length "😀")` is 2, while `count` is 1),
//! out-of-range indexes and unparsable numbers raise, and numeric index arguments are
//! truncated toward zero as Clojure's interop does. Characters are one-character strings,
//! so they are accepted wherever Java takes a `char` or a `String` (DIV-40/41).

mod classes;
pub(super) mod math;
mod time;

use crate::builtins::context::BuiltinContext;
use crate::builtins::{Arity, Builtin, Category, Library, Table, expected, int_arg, str_arg};
use crate::error::{ErrorKind, EvalResult, err, type_err};
use crate::limits::cost;
use crate::regex_value::RegexValue;
use crate::value::Value;

use Arity::*;
use Category::Interop;

/// The builtins of this file, and the library their bare names belong to.
pub(crate) static TABLE: Table = Table {
    library: Library::Core,
    builtins: &[
    Builtin::new(".indexOf", Range(2, 3), Interop, index_of)
        .doc("Java String.indexOf (UTF-16 index, or -1 when absent), from an optional start; also a character code, or an item of a vector.")
        .ex(&[("(.indexOf \"hello\" \"l\")", "2"), ("(.indexOf \"hello\" \"z\")", "-1"), ("(.indexOf \"hello\" \"l\" 3)", "3")]),
    Builtin::new(".lastIndexOf", Range(2, 3), Interop, last_index_of)
        .doc("Java String.lastIndexOf: index of the last occurrence starting at or before an optional index, or -1.")
        .ex(&[("(.lastIndexOf \"hello\" \"l\")", "3"), ("(.lastIndexOf \"ababa\" \"ba\" 2)", "1")]),
    Builtin::new(".toLowerCase", Exact(1), Interop, to_lower)
        .doc("Lower-cased string.")
        .ex(&[("(.toLowerCase \"AbC\")", "\"abc\"")]),
    Builtin::new(".toUpperCase", Exact(1), Interop, to_upper)
        .doc("Upper-cased string.")
        .ex(&[("(.toUpperCase \"abc\")", "\"ABC\"")]),
    Builtin::new(".startsWith", Range(2, 3), Interop, starts_with)
        .doc("True when the string starts with the prefix (at an optional offset).")
        .ex(&[("(.startsWith \"hello\" \"he\")", "true"), ("(.startsWith \"hello\" \"ll\" 2)", "true")]),
    Builtin::new(".endsWith", Exact(2), Interop, ends_with)
        .doc("True when the string ends with the suffix.")
        .ex(&[("(.endsWith \"hello\" \"lo\")", "true")]),
    Builtin::new(".contains", Exact(2), Interop, contains)
        .doc("True when the string contains the substring (or a vector/set contains the item).")
        .ex(&[("(.contains \"hello\" \"ell\")", "true")]),
    Builtin::new(".length", Exact(1), Interop, length)
        .doc("Length in UTF-16 code units, as Java counts (count gives characters).")
        .ex(&[("(.length \"hello\")", "5")]),
    Builtin::new(".trim", Exact(1), Interop, trim)
        .doc("Java String.trim: without leading/trailing spaces and control characters (str/trim also strips Unicode spaces).")
        .ex(&[("(.trim \" a \")", "\"a\"")]),
    Builtin::new(".strip", Exact(1), Interop, strip)
        .doc("Without leading and trailing whitespace (Unicode-aware).")
        .ex(&[("(.strip \"\\t a \")", "\"a\"")]),
    Builtin::new(".stripLeading", Exact(1), Interop, strip_leading)
        .doc("Without leading whitespace.")
        .ex(&[("(.stripLeading \"  a \")", "\"a \"")]),
    Builtin::new(".stripTrailing", Exact(1), Interop, strip_trailing)
        .doc("Without trailing whitespace.")
        .ex(&[("(.stripTrailing \" a  \")", "\" a\"")]),
    Builtin::new(".isEmpty", Exact(1), Interop, is_empty)
        .doc("True for the empty string (or an empty collection).")
        .ex(&[("(.isEmpty \"\")", "true")]),
    Builtin::new(".isBlank", Exact(1), Interop, is_blank)
        .doc("True for a string of whitespace only.")
        .ex(&[("(.isBlank \" \\t\")", "true")]),
    Builtin::new(".substring", Range(2, 3), Interop, substring)
        .doc("UTF-16 code units [start, end); out of range is an error, as in Java (subs gives \"\" instead).")
        .ex(&[("(.substring \"hello\" 1 3)", "\"el\""), ("(.substring \"hello\" 2)", "\"llo\"")]),
    Builtin::new(".charAt", Exact(2), Interop, char_at)
        .doc("The character at a UTF-16 index, as a 1-character string; out of range is an error.")
        .ex(&[("(.charAt \"abc\" 1)", "\"b\"")]),
    Builtin::new(".replace", Exact(3), Interop, replace_literal)
        .doc("Every occurrence of a substring (or character) replaced, literally.")
        .ex(&[("(.replace \"a.b.c\" \".\" \"-\")", "\"a-b-c\"")]),
    Builtin::new(".replaceAll", Exact(3), Interop, replace_all)
        .doc("Every match of a regex given as a string replaced; $1 refers to groups.")
        .ex(&[("(.replaceAll \"a1b22\" \"\\\\d+\" \"#\")", "\"a#b#\"")]),
    Builtin::new(".replaceFirst", Exact(3), Interop, replace_first)
        .doc("The first match of a regex given as a string replaced.")
        .ex(&[("(.replaceFirst \"a1b22\" \"\\\\d+\" \"#\")", "\"a#b22\"")]),
    Builtin::new(".matches", Exact(2), Interop, matches)
        .doc("True when a regex (given as a string) matches the whole string.")
        .ex(&[("(.matches \"abc\" \"a.c\")", "true")]),
    Builtin::new(".split", Range(2, 3), Interop, split)
        .doc("Java String.split on a regex given as a string, as a vector (trailing empty strings dropped; optional limit).")
        .ex(&[("(.split \"a,b,,c,,\" \",\")", "[\"a\" \"b\" \"\" \"c\"]")]),
    Builtin::new(".equals", Exact(2), Interop, equals)
        .doc("Java equals: same type and value ((.equals 1 1.0) is false, unlike =).")
        .ex(&[("(.equals \"a\" \"a\")", "true")]),
    Builtin::new(".equalsIgnoreCase", Exact(2), Interop, equals_ignore_case)
        .doc("True when two strings are equal ignoring case.")
        .ex(&[("(.equalsIgnoreCase \"ABC\" \"abc\")", "true")]),
    Builtin::new(".compareTo", Exact(2), Interop, compare_to)
        .doc("Java compareTo: for strings the difference of the first differing UTF-16 units (or of the lengths).")
        .ex(&[("(.compareTo \"a\" \"c\")", "-2")]),
    Builtin::new(".concat", Exact(2), Interop, concat)
        .doc("The two strings joined.")
        .ex(&[("(.concat \"a\" \"b\")", "\"ab\"")]),
    Builtin::new(".repeat", Exact(2), Interop, repeat)
        .doc("The string repeated n times.")
        .ex(&[("(.repeat \"ab\" 3)", "\"ababab\"")]),
    Builtin::new(".toString", Exact(1), Interop, to_string)
        .doc("The value as a string (like str; nil is an error, as in Java).")
        .ex(&[("(.toString 42)", "\"42\"")]),
    Builtin::new("Integer/parseInt", Range(1, 2), Interop, classes::parse_int)
        .alias(&["Integer/valueOf"])
        .doc("A 32-bit integer from a string (optional radix 2-36); an unparsable string is an error, as in Java (parse-long gives nil).")
        .ex(&[("(Integer/parseInt \"42\")", "42"), ("(Integer/parseInt \"ff\" 16)", "255")]),
    Builtin::new("Long/parseLong", Range(1, 2), Interop, classes::parse_long)
        .alias(&["Long/valueOf"])
        .doc("A 64-bit integer from a string (optional radix 2-36); an unparsable string is an error, as in Java.")
        .ex(&[("(Long/parseLong \"-7\")", "-7")]),
    Builtin::new("Double/parseDouble", Exact(1), Interop, classes::parse_double)
        .alias(&["Float/parseFloat", "Double/valueOf", "Float/valueOf"])
        .doc("A float from Java number text (surrounding spaces, d/f suffixes, NaN, Infinity, hex); otherwise an error (parse-double gives nil).")
        .ex(&[("(Double/parseDouble \"1.5\")", "1.5"), ("(Double/parseDouble \" 2e3 \")", "2000.0")]),
    Builtin::new("Boolean/parseBoolean", Exact(1), Interop, classes::parse_boolean)
        .alias(&["Boolean/valueOf"])
        .doc("true for \"true\" in any case; false for nil and other strings.")
        .ex(&[("(Boolean/parseBoolean \"TRUE\")", "true")]),
    Builtin::new("Double/isNaN", Exact(1), Interop, classes::double_is_nan)
        .doc("True for ##NaN.")
        .ex(&[("(Double/isNaN ##NaN)", "true")]),
    Builtin::new("Double/isInfinite", Exact(1), Interop, classes::double_is_infinite)
        .doc("True for ##Inf and ##-Inf.")
        .ex(&[("(Double/isInfinite ##-Inf)", "true")]),
    Builtin::new("Double/isFinite", Exact(1), Interop, classes::double_is_finite)
        .doc("True for numbers that are neither NaN nor infinite.")
        .ex(&[("(Double/isFinite 1.5)", "true")]),
    Builtin::new("Integer/toString", Range(1, 2), Interop, classes::int_to_string)
        .alias(&["Long/toString"])
        .doc("An integer as text, in an optional radix (2-36).")
        .ex(&[("(Integer/toString 255 16)", "\"ff\"")]),
    Builtin::new("Integer/toHexString", Exact(1), Interop, classes::int_to_hex)
        .doc("Hex digits of a 32-bit integer (two's complement for negatives).")
        .ex(&[("(Integer/toHexString 255)", "\"ff\""), ("(Integer/toHexString -1)", "\"ffffffff\"")]),
    Builtin::new("Integer/toBinaryString", Exact(1), Interop, classes::int_to_binary)
        .doc("Binary digits of a 32-bit integer.")
        .ex(&[("(Integer/toBinaryString 5)", "\"101\"")]),
    Builtin::new("Integer/toOctalString", Exact(1), Interop, classes::int_to_octal)
        .doc("Octal digits of a 32-bit integer.")
        .ex(&[("(Integer/toOctalString 8)", "\"10\"")]),
    Builtin::new("Long/toHexString", Exact(1), Interop, classes::long_to_hex)
        .doc("Hex digits of a 64-bit integer.")
        .ex(&[("(Long/toHexString -1)", "\"ffffffffffffffff\"")]),
    Builtin::new("Long/toBinaryString", Exact(1), Interop, classes::long_to_binary)
        .doc("Binary digits of a 64-bit integer.")
        .ex(&[("(Long/toBinaryString 6)", "\"110\"")]),
    Builtin::new("String/valueOf", Exact(1), Interop, classes::string_value_of)
        .doc("The value as a string (like str).")
        .ex(&[("(String/valueOf 5)", "\"5\"")]),
    Builtin::new("String/join", Exact(2), Interop, classes::string_join)
        .doc("Strings joined with a separator.")
        .ex(&[("(String/join \",\" [\"a\" \"b\"])", "\"a,b\"")]),
    Builtin::new("Character/isDigit", Exact(1), Interop, classes::char_is_digit)
        .doc("True for a digit character.")
        .ex(&[("(Character/isDigit \\5)", "true")]),
    Builtin::new("Character/isLetter", Exact(1), Interop, classes::char_is_letter)
        .doc("True for a letter.")
        .ex(&[("(Character/isLetter \\a)", "true")]),
    Builtin::new("Character/isLetterOrDigit", Exact(1), Interop, classes::char_is_letter_or_digit)
        .doc("True for a letter or digit.")
        .ex(&[("(Character/isLetterOrDigit \\_)", "false")]),
    Builtin::new("Character/isUpperCase", Exact(1), Interop, classes::char_is_upper)
        .doc("True for an upper-case letter.")
        .ex(&[("(Character/isUpperCase \\A)", "true")]),
    Builtin::new("Character/isLowerCase", Exact(1), Interop, classes::char_is_lower)
        .doc("True for a lower-case letter.")
        .ex(&[("(Character/isLowerCase \\A)", "false")]),
    Builtin::new("Character/isWhitespace", Exact(1), Interop, classes::char_is_whitespace)
        .doc("True for Java whitespace (not the no-break spaces).")
        .ex(&[("(Character/isWhitespace \\space)", "true")]),
    Builtin::new("Character/toUpperCase", Exact(1), Interop, classes::char_to_upper)
        .doc("The character upper-cased (a 1-character string).")
        .ex(&[("(Character/toUpperCase \\a)", "\"A\"")]),
    Builtin::new("Character/toLowerCase", Exact(1), Interop, classes::char_to_lower)
        .doc("The character lower-cased.")
        .ex(&[("(Character/toLowerCase \\A)", "\"a\"")]),
    Builtin::new("System/currentTimeMillis", Exact(0), Interop, time::now_millis)
        .doc("Milliseconds since 1970-01-01 UTC, read from the host's clock; a host without one (ptc eval, ptc mcp, the agent loop) refuses it: take the time from the context or a tool.")
        .ex(&[("(System/currentTimeMillis)", "!unsupported_method: System/currentTimeMillis: programs have no clock here (runs are deterministic); take the current time from the context or a tool")]),
    // dates and durations (implemented in time.rs)

    Builtin::new("LocalDate/parse", Exact(1), Interop, time::parse_local_date)
        .doc("A date from \"YYYY-MM-DD\" (validated; anything else is an error, as in Java). Dates are ISO strings.")
        .ex(&[("(LocalDate/parse \"2026-01-15\")", "\"2026-01-15\"")]),
    Builtin::new("parse", Exact(1), Interop, time::parse_any)
        .ext()
        .doc("A date (\"YYYY-MM-DD\") or an instant (text with a time; no offset means UTC), normalised.")
        .ex(&[("(parse \"2026-01-15T10:00:00+01:00\")", "\"2026-01-15T09:00:00Z\"")]),
    Builtin::new("LocalDate/of", Exact(3), Interop, time::local_date_of)
        .doc("The date of a year, month (1-12) and day.")
        .ex(&[("(LocalDate/of 2026 2 28)", "\"2026-02-28\"")]),
    Builtin::new("LocalDate/ofEpochDay", Exact(1), Interop, time::local_date_of_epoch_day)
        .doc("The date n days after 1970-01-01.")
        .ex(&[("(LocalDate/ofEpochDay 1)", "\"1970-01-02\"")]),
    Builtin::new("Instant/parse", Exact(1), Interop, time::parse_instant)
        .doc("An instant from ISO-8601 text with seconds and Z or an offset, as a UTC string.")
        .ex(&[("(Instant/parse \"2026-01-15T10:00:00+01:00\")", "\"2026-01-15T09:00:00Z\"")]),
    Builtin::new("Instant/ofEpochMilli", Exact(1), Interop, time::instant_of_epoch_milli)
        .doc("The instant n milliseconds after 1970-01-01T00:00:00Z.")
        .ex(&[("(Instant/ofEpochMilli 1500)", "\"1970-01-01T00:00:01.500Z\"")]),
    Builtin::new("Instant/ofEpochSecond", Exact(1), Interop, time::instant_of_epoch_second)
        .doc("The instant n seconds after 1970-01-01T00:00:00Z.")
        .ex(&[("(Instant/ofEpochSecond 86400)", "\"1970-01-02T00:00:00Z\"")]),
    Builtin::new("java.util.Date.", Range(0, 1), Interop, time::new_date)
        .doc("An instant: epoch milliseconds (as Java), ISO-8601 text (a PTC extension), or now from the host's clock (refused without one).")
        .ex(&[("(java.util.Date. 0)", "\"1970-01-01T00:00:00Z\""), ("(java.util.Date. 1500)", "\"1970-01-01T00:00:01.500Z\"")]),
    Builtin::new(".getTime", Exact(1), Interop, time::get_time)
        .alias(&[".toEpochMilli"])
        .doc("Epoch milliseconds of an instant.")
        .ex(&[("(.getTime (Instant/parse \"1970-01-01T00:00:01Z\"))", "1000")]),
    Builtin::new(".getEpochSecond", Exact(1), Interop, time::get_epoch_second)
        .doc("Whole epoch seconds of an instant (rounded down).")
        .ex(&[("(.getEpochSecond (Instant/parse \"1970-01-02T00:00:00Z\"))", "86400")]),
    Builtin::new(".toInstant", Exact(1), Interop, time::to_instant)
        .doc("The instant of a java.util.Date (the same text).")
        .ex(&[("(.toInstant (java.util.Date. 0))", "\"1970-01-01T00:00:00Z\"")]),
    Builtin::new(".plusSeconds", Exact(2), Interop, time::plus_seconds)
        .doc("The instant n seconds later.")
        .ex(&[("(.plusSeconds (Instant/parse \"2026-01-01T00:00:00Z\") 90)", "\"2026-01-01T00:01:30Z\"")]),
    Builtin::new(".minusSeconds", Exact(2), Interop, time::minus_seconds)
        .doc("The instant n seconds earlier.")
        .ex(&[("(.minusSeconds (Instant/parse \"2026-01-01T00:00:00Z\") 1)", "\"2025-12-31T23:59:59Z\"")]),
    Builtin::new(".plusMillis", Exact(2), Interop, time::plus_millis)
        .doc("The instant n milliseconds later.")
        .ex(&[("(.plusMillis (Instant/parse \"2026-01-01T00:00:00Z\") 1500)", "\"2026-01-01T00:00:01.500Z\"")]),
    Builtin::new(".minusMillis", Exact(2), Interop, time::minus_millis)
        .doc("The instant n milliseconds earlier.")
        .ex(&[("(.minusMillis (Instant/parse \"2026-01-01T00:00:00Z\") 1)", "\"2025-12-31T23:59:59.999Z\"")]),
    Builtin::new(".toEpochDay", Exact(1), Interop, time::to_epoch_day)
        .doc("Days since 1970-01-01 of a date.")
        .ex(&[("(.toEpochDay (LocalDate/parse \"1970-01-11\"))", "10")]),
    Builtin::new(".plusDays", Exact(2), Interop, time::plus_days)
        .doc("The date n days later.")
        .ex(&[("(.plusDays (LocalDate/parse \"2026-02-27\") 2)", "\"2026-03-01\"")]),
    Builtin::new(".minusDays", Exact(2), Interop, time::minus_days)
        .doc("The date n days earlier.")
        .ex(&[("(.minusDays (LocalDate/parse \"2026-03-01\") 1)", "\"2026-02-28\"")]),
    Builtin::new(".plusWeeks", Exact(2), Interop, time::plus_weeks)
        .doc("The date n weeks later.")
        .ex(&[("(.plusWeeks (LocalDate/parse \"2026-01-01\") 2)", "\"2026-01-15\"")]),
    Builtin::new(".minusWeeks", Exact(2), Interop, time::minus_weeks)
        .doc("The date n weeks earlier.")
        .ex(&[("(.minusWeeks (LocalDate/parse \"2026-01-15\") 2)", "\"2026-01-01\"")]),
    Builtin::new(".plusMonths", Exact(2), Interop, time::plus_months)
        .doc("The date n months later; the day is cut to the month's length.")
        .ex(&[("(.plusMonths (LocalDate/parse \"2026-01-31\") 1)", "\"2026-02-28\"")]),
    Builtin::new(".minusMonths", Exact(2), Interop, time::minus_months)
        .doc("The date n months earlier; the day is cut to the month's length.")
        .ex(&[("(.minusMonths (LocalDate/parse \"2026-03-31\") 1)", "\"2026-02-28\"")]),
    Builtin::new(".plusYears", Exact(2), Interop, time::plus_years)
        .doc("The date n years later (29 February becomes 28 February in common years).")
        .ex(&[("(.plusYears (LocalDate/parse \"2024-02-29\") 1)", "\"2025-02-28\"")]),
    Builtin::new(".minusYears", Exact(2), Interop, time::minus_years)
        .doc("The date n years earlier.")
        .ex(&[("(.minusYears (LocalDate/parse \"2026-06-01\") 10)", "\"2016-06-01\"")]),
    Builtin::new(".getYear", Exact(1), Interop, time::get_year)
        .doc("The year of a date.")
        .ex(&[("(.getYear (LocalDate/parse \"2026-03-15\"))", "2026")]),
    Builtin::new(".getMonthValue", Exact(1), Interop, time::get_month_value)
        .doc("The month of a date, 1-12.")
        .ex(&[("(.getMonthValue (LocalDate/parse \"2026-03-15\"))", "3")]),
    Builtin::new(".getMonth", Exact(1), Interop, time::get_month)
        .doc("The month name of a date, as Java's Month prints (\"MARCH\").")
        .ex(&[("(.getMonth (LocalDate/parse \"2026-03-15\"))", "\"MARCH\"")]),
    Builtin::new(".getDayOfMonth", Exact(1), Interop, time::get_day_of_month)
        .doc("The day of the month, 1-31.")
        .ex(&[("(.getDayOfMonth (LocalDate/parse \"2026-03-15\"))", "15")]),
    Builtin::new(".getDayOfYear", Exact(1), Interop, time::get_day_of_year)
        .doc("The day of the year, 1-366.")
        .ex(&[("(.getDayOfYear (LocalDate/parse \"2026-03-15\"))", "74")]),
    Builtin::new(".getDayOfWeek", Exact(1), Interop, time::get_day_of_week)
        .doc("The weekday name, as Java's DayOfWeek prints (\"MONDAY\").")
        .ex(&[("(.getDayOfWeek (LocalDate/parse \"2026-03-16\"))", "\"MONDAY\"")]),
    Builtin::new(".lengthOfMonth", Exact(1), Interop, time::length_of_month)
        .doc("Days in the date's month.")
        .ex(&[("(.lengthOfMonth (LocalDate/parse \"2024-02-10\"))", "29")]),
    Builtin::new(".lengthOfYear", Exact(1), Interop, time::length_of_year)
        .doc("Days in the date's year.")
        .ex(&[("(.lengthOfYear (LocalDate/parse \"2024-02-10\"))", "366")]),
    Builtin::new(".isLeapYear", Exact(1), Interop, time::is_leap_year)
        .doc("True when the date's year is a leap year.")
        .ex(&[("(.isLeapYear (LocalDate/parse \"2100-01-01\"))", "false")]),
    Builtin::new(".isBefore", Exact(2), Interop, time::is_before)
        .doc("True when the first date (or instant) is earlier.")
        .ex(&[("(.isBefore (LocalDate/parse \"2026-01-01\") (LocalDate/parse \"2026-02-01\"))", "true")]),
    Builtin::new(".isAfter", Exact(2), Interop, time::is_after)
        .doc("True when the first date (or instant) is later.")
        .ex(&[("(.isAfter (LocalDate/parse \"2026-01-01\") (LocalDate/parse \"2026-02-01\"))", "false")]),
    Builtin::new(".isEqual", Exact(2), Interop, time::is_equal)
        .doc("True when two dates (or instants) are the same moment.")
        .ex(&[("(.isEqual (LocalDate/parse \"2026-01-01\") (LocalDate/of 2026 1 1))", "true")]),
    Builtin::new("Duration/between", Exact(2), Interop, time::duration_between)
        .doc("Milliseconds from the first instant (or date) to the second.")
        .ex(&[(
            "(Duration/between (Instant/parse \"2026-01-01T00:00:00Z\") (Instant/parse \"2026-01-02T00:00:00Z\"))",
            "86400000",
        )]),
    Builtin::new("Duration/ofMillis", Exact(1), Interop, time::duration_of_millis)
        .doc("A duration of n milliseconds (durations are milliseconds).")
        .ex(&[("(Duration/ofMillis 42)", "42")]),
    Builtin::new("Duration/ofSeconds", Exact(1), Interop, time::duration_of_seconds)
        .doc("A duration of n seconds, in milliseconds.")
        .ex(&[("(Duration/ofSeconds 5)", "5000")]),
    Builtin::new("Duration/ofMinutes", Exact(1), Interop, time::duration_of_minutes)
        .doc("A duration of n minutes, in milliseconds.")
        .ex(&[("(Duration/ofMinutes 2)", "120000")]),
    Builtin::new("Duration/ofHours", Exact(1), Interop, time::duration_of_hours)
        .doc("A duration of n hours, in milliseconds.")
        .ex(&[("(Duration/ofHours 1)", "3600000")]),
    Builtin::new("Duration/ofDays", Exact(1), Interop, time::duration_of_days)
        .doc("A duration of n days, in milliseconds.")
        .ex(&[("(Duration/ofDays 1)", "86400000")]),
    Builtin::new(".toMillis", Exact(1), Interop, time::to_millis)
        .doc("A duration in milliseconds.")
        .ex(&[("(.toMillis 1500)", "1500")]),
    Builtin::new(".toSeconds", Exact(1), Interop, time::to_seconds)
        .alias(&[".getSeconds"])
        .doc("A duration in whole seconds (rounded down, as Java).")
        .ex(&[("(.toSeconds 1500)", "1")]),
    Builtin::new(".toMinutes", Exact(1), Interop, time::to_minutes)
        .doc("A duration in whole minutes (toward zero).")
        .ex(&[("(.toMinutes 150000)", "2")]),
    Builtin::new(".toHours", Exact(1), Interop, time::to_hours)
        .doc("A duration in whole hours (toward zero).")
        .ex(&[("(.toHours 7200000)", "2")]),
    Builtin::new(".toDays", Exact(1), Interop, time::to_days)
        .doc("A duration in whole days (toward zero).")
        .ex(&[("(.toDays 172800000)", "2")]),
    Builtin::new(".isNegative", Exact(1), Interop, time::is_negative)
        .doc("True for a negative duration.")
        .ex(&[("(.isNegative (Duration/ofMillis -1))", "true")]),
    Builtin::new(".isZero", Exact(1), Interop, time::is_zero)
        .doc("True for a zero duration.")
        .ex(&[("(.isZero (Duration/ofMillis 0))", "true")]),
    Builtin::new("Character/digit", Exact(2), Interop, char_digit)
        .doc("The value of a digit character in a radix, or -1.")
        .ex(&[("(Character/digit \\7 10)", "7"), ("(Character/digit \\f 16)", "15")]),
    Builtin::new("Character/getNumericValue", Exact(1), Interop, char_numeric_value)
        .doc("The value of a digit or letter (a..z are 10..35), or -1.")
        .ex(&[("(Character/getNumericValue \\8)", "8")]),
    ],
};

/// A Java `int` argument: integers, or finite floats truncated toward zero (Clojure's
/// interop coercion); ##NaN is 0.
fn java_int(fname: &str, v: &Value) -> EvalResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(f) if f.is_nan() => Ok(0),
        Value::Float(f) if f.is_finite() => Ok(f.trunc() as i64),
        other => expected(fname, "an integer index", other),
    }
}
fn recv<'a>(fname: &str, a: &'a [Value]) -> EvalResult<&'a str> {
    str_arg(fname, &a[0])
}

/// Length in UTF-16 code units.
fn utf16_len(s: &str) -> i64 {
    s.chars().map(|c| c.len_utf16() as i64).sum()
}
/// The UTF-16 index of a byte offset.
fn utf16_at(s: &str, byte: usize) -> i64 {
    s.get(..byte).map_or(0, utf16_len)
}
/// The byte offset of a UTF-16 index: `Ok(byte)` on a character boundary, `Err(byte)` of
/// the character whose surrogate pair the index splits; `None` past the end.
fn byte_at(s: &str, unit: i64) -> Option<Result<usize, usize>> {
    let mut u = 0i64;
    for (b, c) in s.char_indices() {
        if u == unit {
            return Some(Ok(b));
        }
        u += c.len_utf16() as i64;
        if u > unit {
            return Some(Err(b));
        }
    }
    (u == unit).then_some(Ok(s.len()))
}

fn index_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if let Value::Vector(items) | Value::List(items) = &a[0] {
        let pos = items.iter().position(|x| x.equiv(&a[1]));
        return Ok(Value::Int(pos.map_or(-1, |p| p as i64)));
    }
    let s = recv(".indexOf", a)?;
    let sub = needle(".indexOf", &a[1])?;
    let from = match a.get(2) {
        Some(v) => java_int(".indexOf", v)?.clamp(0, utf16_len(s)),
        None => 0,
    };
    // a start inside a surrogate pair can only match from the next character on
    let start = match byte_at(s, from) {
        Some(Ok(b)) => b,
        Some(Err(b)) => b + s.get(b..).and_then(|r| r.chars().next()).map_or(0, char::len_utf8),
        None => s.len(),
    };
    let found = s.get(start..).and_then(|rest| rest.find(sub.as_str()));
    Ok(Value::Int(found.map_or(-1, |b| utf16_at(s, start + b))))
}
/// A string to search for: a string, or a character code (Java's `indexOf(int ch)`).
fn needle(fname: &str, v: &Value) -> EvalResult<String> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        Value::Int(i) => match u32::try_from(*i).ok().and_then(char::from_u32) {
            Some(c) => Ok(c.to_string()),
            None => Ok(String::from('\u{FFFF}')),
        },
        other => expected(fname, "a string or character", other),
    }
}
fn last_index_of(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".lastIndexOf", a)?;
    let sub = needle(".lastIndexOf", &a[1])?;
    let hay = match a.get(2) {
        Some(v) => {
            let from = java_int(".lastIndexOf", v)?;
            if from < 0 {
                return Ok(Value::Int(-1));
            }
            let start = match byte_at(s, from.min(utf16_len(s))) {
                Some(Ok(b) | Err(b)) => b,
                None => s.len(),
            };
            s.get(..(start + sub.len()).min(s.len())).unwrap_or(s)
        }
        None => s,
    };
    Ok(Value::Int(hay.rfind(sub.as_str()).map_or(-1, |b| utf16_at(s, b))))
}
fn to_lower(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    super::core::strings::case_mapped(cx, recv(".toLowerCase", a)?, str::to_lowercase)
}
fn to_upper(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    super::core::strings::case_mapped(cx, recv(".toUpperCase", a)?, str::to_uppercase)
}
fn starts_with(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".startsWith", a)?;
    let prefix = str_arg(".startsWith", &a[1])?;
    let Some(offset) = a.get(2) else { return Ok(Value::Bool(s.starts_with(prefix))) };
    let offset = java_int(".startsWith", offset)?;
    Ok(Value::Bool(match (offset >= 0).then(|| byte_at(s, offset)).flatten() {
        Some(Ok(b)) => s.get(b..).is_some_and(|rest| rest.starts_with(prefix)),
        Some(Err(_)) => prefix.is_empty(),
        None => false,
    }))
}
fn ends_with(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(recv(".endsWith", a)?.ends_with(str_arg(".endsWith", &a[1])?)))
}
fn contains(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(items) | Value::List(items) => Ok(Value::Bool(items.iter().any(|x| x.equiv(&a[1])))),
        Value::Set(items) => Ok(Value::Bool(items.contains(&a[1]))),
        _ => Ok(Value::Bool(recv(".contains", a)?.contains(str_arg(".contains", &a[1])?))),
    }
}
fn length(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Int(utf16_len(recv(".length", a)?)))
}
fn trim(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = recv(".trim", a)?.trim_matches(|c: char| c <= ' ');
    super::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn strip(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = recv(".strip", a)?.trim_matches(super::java_whitespace);
    super::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn strip_leading(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = recv(".stripLeading", a)?.trim_start_matches(super::java_whitespace);
    super::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn strip_trailing(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let out = recv(".stripTrailing", a)?.trim_end_matches(super::java_whitespace);
    super::core::strings::charge_text(cx, out.len())?;
    Ok(Value::str(out))
}
fn is_empty(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Vector(v) | Value::List(v) => Ok(Value::Bool(v.is_empty())),
        Value::Map(m) => Ok(Value::Bool(m.len() == 0)),
        Value::Set(s) => Ok(Value::Bool(s.is_empty())),
        _ => Ok(Value::Bool(recv(".isEmpty", a)?.is_empty())),
    }
}
fn is_blank(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(recv(".isBlank", a)?.chars().all(super::java_whitespace)))
}
fn out_of_range<T>(fname: &str, what: String, len: i64, instead: &str) -> EvalResult<T> {
    err(ErrorKind::RuntimeError, format!("{fname}: {what} is out of range for a string of length {len}{instead}"))
}
fn substring(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".substring", a)?;
    let n = utf16_len(s);
    let start = java_int(".substring", &a[1])?;
    let end = match a.get(2) {
        Some(e) => java_int(".substring", e)?,
        None => n,
    };
    if start < 0 || end > n || start > end {
        return out_of_range(
            ".substring",
            format!("range [{start}, {end})"),
            n,
            " (Java counts UTF-16 units); use subs, which gives \"\" instead",
        );
    }
    match (byte_at(s, start), byte_at(s, end)) {
        (Some(Ok(b)), Some(Ok(e))) => {
            cx.charge((e - b) as u64 + cost::HEADER)?;
            Ok(Value::str(s.get(b..e).unwrap_or("")))
        }
        _ => err(
            ErrorKind::RuntimeError,
            format!(
                ".substring: [{start}, {end}) splits a character outside the Basic Multilingual Plane (an emoji takes 2 UTF-16 units); use subs, which counts characters"
            ),
        ),
    }
}
fn char_at(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".charAt", a)?;
    let i = java_int(".charAt", &a[1])?;
    let n = utf16_len(s);
    match (i >= 0 && i < n).then(|| byte_at(s, i)).flatten() {
        Some(Ok(b)) => Ok(s.get(b..).and_then(|r| r.chars().next()).map_or(Value::Nil, |c| Value::str(c.to_string()))),
        Some(Err(_)) => err(
            ErrorKind::RuntimeError,
            format!(
                ".charAt: index {i} is half of a character outside the Basic Multilingual Plane; use (nth s i), which counts characters"
            ),
        ),
        None => out_of_range(".charAt", format!("index {i}"), n, "; use (get s i), which gives nil"),
    }
}
fn replace_literal(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    recv(".replace", a)?;
    str_arg(".replace", &a[1])?;
    str_arg(".replace", &a[2])?;
    // the same as replace with two strings (which charges the result before building it)
    super::lookup("replace").map_or(Ok(Value::Nil), |b| cx.call(b, a))
}
/// The regex of a Java method that takes its pattern as a string.
fn string_regex(fname: &str, v: &Value) -> EvalResult<Value> {
    match v {
        Value::Regex(_) => Ok(v.clone()),
        Value::Str(p) => RegexValue::compile(p)
            .map(|r| Value::Regex(std::sync::Arc::new(r)))
            .or_else(|m| err(ErrorKind::RuntimeError, format!("{fname}: {m}"))),
        other => expected(fname, "a regex pattern string", other),
    }
}
fn replace_regex(cx: &mut BuiltinContext, a: &mut [Value], fname: &str, target: &str) -> EvalResult {
    recv(fname, a)?;
    str_arg(fname, &a[2])?;
    let re = string_regex(fname, &a[1])?;
    let mut args = [a[0].clone(), re, a[2].clone()];
    super::lookup(target).map_or(Ok(Value::Nil), |b| cx.call(b, &mut args))
}
fn replace_all(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    replace_regex(cx, a, ".replaceAll", "replace")
}
fn replace_first(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    replace_regex(cx, a, ".replaceFirst", "replace-first")
}
fn matches(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".matches", a)?;
    let Value::Regex(re) = string_regex(".matches", &a[1])? else { return Ok(Value::Bool(false)) };
    Ok(Value::Bool(re.anchored().is_some_and(|r| r.is_match(s))))
}
fn split(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    recv(".split", a)?;
    let re = string_regex(".split", &a[1])?;
    let mut args = vec![a[0].clone(), re];
    if let Some(l) = a.get(2) {
        args.push(l.clone());
    }
    super::lookup("split").map_or(Ok(Value::Nil), |b| cx.call(b, &mut args))
}
fn equals(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(a[0] == a[1]))
}
fn equals_ignore_case(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".equalsIgnoreCase", a)?;
    Ok(Value::Bool(match &a[1] {
        Value::Str(t) => s.chars().count() == t.chars().count() && s.to_lowercase() == t.to_lowercase(),
        _ => false,
    }))
}
fn compare_to(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    match (&a[0], &a[1]) {
        (Value::Str(x), Value::Str(y)) => {
            let (mut p, mut q) = (x.encode_utf16(), y.encode_utf16());
            loop {
                match (p.next(), q.next()) {
                    (Some(c), Some(d)) if c != d => return Ok(Value::Int(i64::from(c) - i64::from(d))),
                    (Some(_), Some(_)) => {}
                    _ => return Ok(Value::Int(utf16_len(x) - utf16_len(y))),
                }
            }
        }
        (Value::Int(x), Value::Int(y)) => Ok(Value::Int(x.cmp(y) as i64)),
        (Value::Float(x), Value::Float(y)) => Ok(Value::Int(x.total_cmp(y) as i64)),
        (x, y) => type_err(format!(
            ".compareTo: expected two strings or two numbers of the same kind, got {} and {}; use compare",
            x.type_name(),
            y.type_name()
        )),
    }
}
fn concat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let (s, t) = (recv(".concat", a)?, str_arg(".concat", &a[1])?);
    super::core::strings::charge_text(cx, s.len().saturating_add(t.len()))?;
    let mut out = String::with_capacity(s.len() + t.len());
    out.push_str(s);
    out.push_str(t);
    Ok(Value::str(out))
}
fn repeat(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let s = recv(".repeat", a)?;
    let n = java_int(".repeat", &a[1])?;
    if n < 0 {
        return err(ErrorKind::RuntimeError, format!(".repeat: count is negative: {n}"));
    }
    let bytes = (s.len() as u64).saturating_mul(n as u64);
    cx.charge(bytes.saturating_add(cost::HEADER))?;
    cx.tick(n as u64)?;
    Ok(Value::str(s.repeat(n as usize)))
}
fn to_string(cx: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    if matches!(a[0], Value::Nil) {
        return type_err(".toString: called on nil; use (str x), which gives \"\" for nil");
    }
    Ok(Value::str(super::core::strings::str_form(cx, &a[0])?))
}

fn char_arg(fname: &str, v: &Value) -> EvalResult<char> {
    match v {
        Value::Str(s) if s.chars().count() == 1 => {
            s.chars().next().map_or_else(|| expected(fname, "a character", v), Ok)
        }
        Value::Int(i) => {
            u32::try_from(*i).ok().and_then(char::from_u32).map_or_else(|| expected(fname, "a character", v), Ok)
        }
        other => expected(fname, "a character like \\7", other),
    }
}

fn char_digit(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let c = char_arg("Character/digit", &a[0])?;
    let radix = int_arg("Character/digit", &a[1])?;
    if !(2..=36).contains(&radix) {
        return Ok(Value::Int(-1));
    }
    Ok(Value::Int(c.to_digit(radix as u32).map_or(-1, i64::from)))
}

fn char_numeric_value(_: &mut BuiltinContext, a: &mut [Value]) -> EvalResult {
    let c = char_arg("Character/getNumericValue", &a[0])?;
    Ok(Value::Int(c.to_digit(36).map_or(-1, i64::from)))
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_positions() {
        assert_eq!(utf16_len("😀a"), 3);
        assert_eq!(byte_at("😀a", 2), Some(Ok(4)));
        assert_eq!(byte_at("😀a", 1), Some(Err(0)));
        assert_eq!(byte_at("😀a", 3), Some(Ok(5)));
        assert_eq!(byte_at("😀a", 4), None);
        assert_eq!(utf16_at("😀a", 4), 2);
    }

    fn eval(src: &str) -> String {
        let out = crate::run(src, crate::RunOptions::default());
        match out.result {
            crate::RunResult::Error(e) => format!("!{}", e.kind.as_str()),
            _ => out.printed,
        }
    }

    fn check(cases: &[(&str, &str)]) {
        for (src, want) in cases {
            assert_eq!(eval(src), *want, "{src}");
        }
    }

    #[test]
    fn string_methods_use_java_indexes() {
        check(&[
            (r#"(.indexOf "hello" "l" 3)"#, "3"),
            (r#"(.indexOf "hello" "z")"#, "-1"),
            (r#"(.indexOf "😀a" "a")"#, "2"),
            (r#"(.indexOf "abc" 98)"#, "1"),
            (r#"(.indexOf [1 2 3] 3)"#, "2"),
            (r#"(.lastIndexOf "ababa" "ba" 2)"#, "1"),
            (r#"(.lastIndexOf "abc" "b" -1)"#, "-1"),
            (r#"(.length "😀a")"#, "3"),
            (r#"(count "😀a")"#, "2"),
            (r#"(.substring "😀a" 2)"#, r#""a""#),
            (r#"(.substring "😀a" 1)"#, "!runtime_error"),
            (r#"(.substring "hello" 6)"#, "!runtime_error"),
            (r#"(.substring "hello" 1.9 3)"#, r#""el""#),
            (r#"(.charAt "abc" 1)"#, r#""b""#),
            (r#"(.charAt "abc" 3)"#, "!runtime_error"),
            (r#"(.startsWith "abc" "b" 1)"#, "true"),
            (r#"(.startsWith "abc" "a" -1)"#, "false"),
            (r#"(.trim "\u2003a ")"#, "\"\u{2003}a\""),
            (r#"(.strip "\u2003a ")"#, r#""a""#),
            (r#"(.startsWith \a "a")"#, "true"),
        ]);
    }

    #[test]
    fn more_string_methods() {
        check(&[
            (r#"(.replace "a.b" "." "-")"#, r#""a-b""#),
            (r#"(.replaceAll "a1b22" "\\d+" "<$0>")"#, r#""a<1>b<22>""#),
            (r##"(.replaceFirst "a1b22" "\\d" "#")"##, r##""a#b22""##),
            (r#"(.matches "abc" "a.")"#, "false"),
            (r#"(.split "a,b,,c,," ",")"#, r#"["a" "b" "" "c"]"#),
            (r#"(.equals 1 1.0)"#, "false"),
            (r#"(= 1 1.0)"#, "true"),
            (r#"(.equalsIgnoreCase "ABC" "abc")"#, "true"),
            (r#"(.compareTo "apple" "banana")"#, "-1"),
            (r#"(.compareTo "ab" "abcd")"#, "-2"),
            (r#"(.repeat "ab" 2)"#, r#""abab""#),
            (r#"(.repeat "ab" -1)"#, "!runtime_error"),
            (r#"(.toString nil)"#, "!type_error"),
            (r#"(.isEmpty [])"#, "true"),
            (r#"(.contains #{1 2} 2)"#, "true"),
        ]);
    }

    #[test]
    fn number_classes_raise_like_java() {
        check(&[
            (r#"(Integer/parseInt "-42")"#, "-42"),
            (r#"(Integer/parseInt "2147483648")"#, "!runtime_error"),
            (r#"(Integer/parseInt "x")"#, "!runtime_error"),
            (r#"(Integer/parseInt nil)"#, "!runtime_error"),
            (r#"(Integer/parseInt "ff" 16)"#, "255"),
            (r#"(Long/parseLong "z" 36)"#, "35"),
            (r#"(Long/parseLong "9223372036854775807")"#, "9223372036854775807"),
            (r#"(Double/parseDouble " 1.5d ")"#, "1.5"),
            (r#"(Double/parseDouble "1,5")"#, "!runtime_error"),
            (r#"(Float/parseFloat "0.1")"#, "0.1"),
            (r#"(Boolean/parseBoolean nil)"#, "false"),
            (r#"(Boolean/parseBoolean 1)"#, "!type_error"),
            (r#"(Integer/toHexString -1)"#, r#""ffffffff""#),
            (r#"(Integer/toString -255 16)"#, r#""-ff""#),
            (r#"(Character/isDigit \7)"#, "true"),
            (r#"(Character/toUpperCase \ß)"#, r#""ß""#),
            (r#"(Double/isNaN (/ 0.0 0.0))"#, "true"),
        ]);
    }

    #[test]
    fn dates_are_iso_strings() {
        check(&[
            (r#"(LocalDate/parse "2024-02-29")"#, r#""2024-02-29""#),
            (r#"(LocalDate/parse "2023-02-29")"#, "!runtime_error"),
            (r#"(LocalDate/parse "2026-01-15T10:00:00Z")"#, "!runtime_error"),
            (r#"(parse "2026-01-15T10:00:00+01:00")"#, r#""2026-01-15T09:00:00Z""#),
            (r#"(parse "2026-01-15")"#, r#""2026-01-15""#),
            (r#"(Instant/parse "2026-01-15T10:00:00")"#, "!runtime_error"),
            (r#"(java.time.Instant/parse "2026-01-15T10:00:00.25Z")"#, r#""2026-01-15T10:00:00.250Z""#),
            (r#"(java.util.Date. 1500)"#, r#""1970-01-01T00:00:01.500Z""#),
            (r#"(.getTime (java.util.Date. 1500))"#, "1500"),
            (r#"(.plusMonths (LocalDate/parse "2024-01-31") 1)"#, r#""2024-02-29""#),
            (r#"(.minusYears (LocalDate/parse "2024-02-29") 1)"#, r#""2023-02-28""#),
            (r#"(.plusDays (LocalDate/parse "2026-12-31") 1)"#, r#""2027-01-01""#),
            (r#"(.getDayOfWeek (LocalDate/parse "2026-01-15"))"#, r#""THURSDAY""#),
            (r#"(.getDayOfYear (LocalDate/parse "2024-12-31"))"#, "366"),
            (r#"(.isBefore (LocalDate/parse "2026-01-01") (Instant/parse "2026-01-02T00:00:00Z"))"#, "!type_error"),
            (r#"(.toDays (Duration/between (parse "2026-01-03T00:00:00Z") (parse "2026-01-01T12:00:00Z")))"#, "-1"),
            (r#"(.toSeconds -1)"#, "-1"),
            (r#"(.plusDays (LocalDate/parse "2026-01-01") 9223372036854775807)"#, "!arithmetic_error"),
            (r#"(LocalDate/of 2026 2 29)"#, "!runtime_error"),
            (r#"(Instant/ofEpochMilli -1)"#, r#""1969-12-31T23:59:59.999Z""#),
        ]);
    }
}
