//! Regex values: linear-time `regex` crate, Java-style patterns translated.

use std::fmt;
use std::sync::OnceLock;

/// A compiled regular expression that remembers its source text.
pub struct RegexValue {
    source: String,
    regex: regex::Regex,
    /// The whole-input form (`\A(?:...)\z`) for `re-matches`, compiled on first use.
    anchored: OnceLock<Option<regex::Regex>>,
}

/// Longest pattern a program may compile (parsing a pattern costs memory before the
/// compiled-size limits can apply).
pub(crate) const MAX_PATTERN_BYTES: usize = 16 * 1024;

impl RegexValue {
    /// Compiles a pattern written in Java/Clojure style.
    ///
    /// Java's ASCII-only `\d \w \s \b` are translated, `\Q...\E` becomes an escaped
    /// literal; lookaround and backreferences are rejected with a message naming the
    /// construct (the `regex` crate guarantees linear time, which a sandbox needs).
    pub fn compile(source: &str) -> Result<RegexValue, String> {
        if source.len() > MAX_PATTERN_BYTES {
            return Err(format!(
                "regex pattern is {} bytes, more than the {MAX_PATTERN_BYTES}-byte limit; match with a shorter pattern or split the work",
                source.len()
            ));
        }
        let translated = translate(source)?;
        let regex =
            regex::RegexBuilder::new(&translated).size_limit(1 << 20).dfa_size_limit(1 << 21).build().map_err(|e| {
                format!("invalid regex #\"{}\": {}", crate::printer::clip(source, 80), first_line(&e.to_string()))
            })?;
        Ok(RegexValue { source: source.to_string(), regex, anchored: OnceLock::new() })
    }

    /// The pattern anchored at both ends of the input, for whole-string matching (Java's
    /// `Matcher.matches`); `None` only if the anchored form exceeds the size limits.
    pub(crate) fn anchored(&self) -> Option<&regex::Regex> {
        self.anchored
            .get_or_init(|| {
                let translated = translate(&self.source).ok()?;
                regex::RegexBuilder::new(&format!("\\A(?:{translated})\\z"))
                    .size_limit(1 << 20)
                    .dfa_size_limit(1 << 21)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The compiled regex.
    pub(crate) fn regex(&self) -> &regex::Regex {
        &self.regex
    }
}

impl fmt::Debug for RegexValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#\"{}\"", self.source)
    }
}

fn first_line(s: &str) -> String {
    s.lines().rev().find(|l| l.starts_with("error:")).unwrap_or(s).trim().to_string()
}

/// The members of Java's `\\h` (horizontal whitespace).
const HORIZONTAL: &str = " \\t\\x{A0}\\x{1680}\\x{180e}\\x{2000}-\\x{200a}\\x{202f}\\x{205f}\\x{3000}";
/// The members of Java's `\\v` (vertical whitespace).
const VERTICAL: &str = "\\n\\x0B\\f\\r\\x{85}\\x{2028}\\x{2029}";

fn translate(src: &str) -> Result<String, String> {
    let mut out = String::with_capacity(src.len() + 8);
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            match n {
                'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
                'D' => out.push_str(if in_class { "\\D" } else { "[^0-9]" }),
                'w' => out.push_str(if in_class { "A-Za-z0-9_" } else { "[A-Za-z0-9_]" }),
                'W' => out.push_str(if in_class { "\\W" } else { "[^A-Za-z0-9_]" }),
                's' => out.push_str(if in_class { " \\t\\n\\x0B\\f\\r" } else { "[ \\t\\n\\x0B\\f\\r]" }),
                'S' => out.push_str(if in_class { "\\S" } else { "[^ \\t\\n\\x0B\\f\\r]" }),
                'b' if !in_class => out.push_str("(?-u:\\b)"),
                'B' if !in_class => out.push_str("(?-u:\\B)"),
                'Z' => out.push_str("\\z"),
                // Java's horizontal/vertical whitespace classes, linebreak and escape
                'h' if !in_class => out.push_str(&format!("[{HORIZONTAL}]")),
                'H' if !in_class => out.push_str(&format!("[^{HORIZONTAL}]")),
                'v' if !in_class => out.push_str(&format!("[{VERTICAL}]")),
                'V' if !in_class => out.push_str(&format!("[^{VERTICAL}]")),
                'h' => out.push_str(HORIZONTAL),
                'v' => out.push_str(VERTICAL),
                'R' if !in_class => out.push_str("(?:\\r\\n|[\\n\\x0B\\f\\r\\x{85}\\x{2028}\\x{2029}])"),
                'e' => out.push_str("\\x1B"),
                'Q' => {
                    let mut j = i + 2;
                    let mut lit = String::new();
                    while j < chars.len() && !(chars[j] == '\\' && j + 1 < chars.len() && chars[j + 1] == 'E') {
                        lit.push(chars[j]);
                        j += 1;
                    }
                    out.push_str(&regex::escape(&lit));
                    i = if j < chars.len() { j + 2 } else { j };
                    continue;
                }
                '1'..='9' if !in_class => {
                    return Err(format!(
                        "regex #\"{src}\" uses a backreference (\\{n}), which is not supported (patterns run in linear time); match the groups separately and compare them in code"
                    ));
                }
                _ => {
                    out.push(c);
                    out.push(n);
                }
            }
            i += 2;
            continue;
        }
        if c == '[' && !in_class {
            in_class = true;
        } else if c == ']' && in_class {
            in_class = false;
        } else if c == '(' && !in_class && i + 2 < chars.len() && chars[i + 1] == '?' {
            let n = chars[i + 2];
            let construct = match n {
                '=' => Some("lookahead (?=...)"),
                '!' => Some("negative lookahead (?!...)"),
                '>' => Some("atomic group (?>...)"),
                '<' if i + 3 < chars.len() && chars[i + 3] == '=' => Some("lookbehind (?<=...)"),
                '<' if i + 3 < chars.len() && chars[i + 3] == '!' => Some("negative lookbehind (?<!...)"),
                _ => None,
            };
            if let Some(name) = construct {
                return Err(format!(
                    "regex #\"{src}\" uses {name}, which is not supported (patterns run in linear time); capture a group instead, e.g. (re-find #\"foo(bar)\" s)"
                ));
            }
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_classes_are_ascii() {
        let r = RegexValue::compile("^\\d+$").unwrap();
        assert!(r.regex().is_match("123"));
        assert!(!r.regex().is_match("\u{663}"));
    }

    #[test]
    fn lookaround_is_rejected_with_name() {
        let e = RegexValue::compile("foo(?=bar)").err().unwrap();
        assert!(e.contains("lookahead"), "{e}");
        let e = RegexValue::compile("(a)\\1").err().unwrap();
        assert!(e.contains("backreference"), "{e}");
    }

    #[test]
    fn java_whitespace_classes_and_anchoring() {
        let r = RegexValue::compile("a\\h+b\\Rc").unwrap();
        assert!(r.regex().is_match("a \t\u{a0}b\r\nc"));
        assert!(!r.regex().is_match("a\nb\nc"));
        let alt = RegexValue::compile("a|ab").unwrap();
        assert_eq!(alt.anchored().and_then(|a| a.find("ab")).map(|m| m.as_str()), Some("ab"));
        assert!(RegexValue::compile("[\\h]").unwrap().regex().is_match("\u{3000}"));
    }

    #[test]
    fn quoted_literal() {
        let r = RegexValue::compile("\\Q1+1\\E").unwrap();
        assert!(r.regex().is_match("1+1"));
        assert!(!r.regex().is_match("11"));
    }
}
