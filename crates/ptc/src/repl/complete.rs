//! Tab completion: the names a program can write at the cursor — special forms, builtins
//! of every namespace (`str/`, `set/`, `walk/`, `json/`, `Math/`...), the namespace
//! prefixes themselves, the user's definitions, `data/` keys and `tool/` names.
//!
//! The builtin names come from the registry views `(dir ...)` and `(all-ns)` read, so the
//! completer offers what discovery lists, plus the qualified aliases of core functions
//! (`Math/pow`, `Float/parseFloat`).

use std::collections::BTreeSet;

use ptc_lisp_eval::registry::{self, Library};

/// Every name completion can offer, except the user's definitions, which change as the
/// session goes.
#[derive(Debug, Clone, Default)]
pub struct Completions {
    /// Bare names, namespace prefixes (`str/`) and qualified names (`str/join`, `Math/pow`).
    fixed: BTreeSet<String>,
    /// The user's definitions.
    user: BTreeSet<String>,
}

impl Completions {
    /// The builtins, plus `data/<key>` for each context key and `tool/<name>` for each tool.
    pub fn new<K: AsRef<str>, T: AsRef<str>>(data_keys: &[K], tools: &[T]) -> Self {
        let mut fixed: BTreeSet<String> = registry::special_forms().map(str::to_string).collect();
        fixed.extend(["*1", "*2", "*3", "*e"].map(str::to_string));
        for ns in registry::namespaces() {
            let names = registry::names_in_namespace(ns);
            match Library::of_alias(ns) {
                Some(lib) => {
                    for prefix in lib_prefixes(lib, ns) {
                        fixed.insert(format!("{prefix}/"));
                        fixed.extend(names.iter().map(|n| format!("{prefix}/{n}")));
                    }
                    // core's names, and the library names that also resolve bare (`join`)
                    fixed.extend(names.iter().filter(|n| registry::lookup(n).is_some()).cloned());
                }
                None => {
                    for name in names {
                        if let Some((prefix, _)) = name.split_once('/').filter(|(p, _)| !p.is_empty()) {
                            fixed.insert(format!("{prefix}/"));
                        }
                        fixed.insert(name);
                    }
                }
            }
        }
        // qualified aliases of core functions (`Math/pow`, `json/read-str`), which
        // `(dir Math)` does not list
        for b in registry::all() {
            for alias in
                b.aliases.iter().filter(|a| a.split_once('/').is_some_and(|(p, n)| !p.is_empty() && !n.is_empty()))
            {
                if let Some((prefix, _)) = alias.split_once('/') {
                    fixed.insert(format!("{prefix}/"));
                }
                fixed.insert(alias.to_string());
            }
        }
        if !data_keys.is_empty() {
            fixed.insert("data/".into());
            fixed.extend(data_keys.iter().map(|k| format!("data/{}", k.as_ref())));
        }
        if !tools.is_empty() {
            fixed.insert("tool/".into());
            fixed.extend(tools.iter().map(|t| format!("tool/{}", t.as_ref())));
        }
        Completions { fixed, user: BTreeSet::new() }
    }

    /// Replaces the user's definitions (after each input).
    pub fn set_user_names(&mut self, names: impl IntoIterator<Item = String>) {
        self.user = names.into_iter().collect();
    }

    /// The names that start with `prefix`, sorted. Qualified names are offered once the
    /// prefix has a `/` (`str/` lists the string functions); before that, the namespaces
    /// are offered as prefixes (`str/`), so `s` does not list every `str/...` name. An
    /// empty prefix, a keyword or a number offers nothing.
    pub fn candidates(&self, prefix: &str) -> Vec<String> {
        if prefix.is_empty() || prefix.starts_with(':') || prefix.starts_with(|c: char| c.is_ascii_digit()) {
            return Vec::new();
        }
        let qualified = prefix.contains('/');
        let wanted =
            |name: &&String| name.starts_with(prefix) && (qualified || !name.trim_end_matches('/').contains('/'));
        let mut out: Vec<String> = self.fixed.iter().filter(wanted).cloned().collect();
        out.extend(self.user.iter().filter(wanted).filter(|n| !self.fixed.contains(*n)).cloned());
        out.sort();
        out
    }
}

/// The prefixes a library's names are written with: its short alias and its full name
/// (`str/` and `clojure.string/`); core's names are written bare or with `clojure.core/`.
fn lib_prefixes(lib: Library, ns: &'static str) -> Vec<&'static str> {
    match lib {
        Library::Core => vec![ns],
        _ => vec![lib.alias(), ns],
    }
}

/// Characters that end a symbol: whitespace, brackets, strings, quoting and reader macros.
fn ends_symbol(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\'' | '`' | ',' | ';' | '@' | '^' | '~' | '#')
}

/// Where the word under the cursor starts (a byte offset into `line`), or `None` when the
/// cursor is inside a string or a comment, where nothing is completed.
pub fn word_start(line: &str, pos: usize) -> Option<usize> {
    let before = line.get(..pos)?;
    if in_string_or_comment(before) {
        return None;
    }
    Some(before.char_indices().rev().find(|(_, c)| ends_symbol(*c)).map_or(0, |(i, c)| i + c.len_utf8()))
}

/// True when the text ends inside a string literal or a `;` comment.
fn in_string_or_comment(text: &str) -> bool {
    let (mut in_string, mut in_comment) = (false, false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if in_comment {
            in_comment = c != '\n';
            continue;
        }
        match c {
            // an escape inside a string, a character literal (\" or \;) outside
            '\\' => {
                chars.next();
            }
            '"' => in_string = !in_string,
            ';' if !in_string => in_comment = true,
            _ => {}
        }
    }
    in_string || in_comment
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completions() -> Completions {
        let mut c = Completions::new(&["orders", "order_count"], &["search"]);
        c.set_user_names(["my-total".to_string(), "my-orders".to_string()]);
        c
    }

    #[test]
    fn a_builtin_prefix_completes_in_core_and_in_each_library() {
        let c = completions();
        assert_eq!(c.candidates("str/upper-"), ["str/upper-case"]);
        assert_eq!(c.candidates("clojure.string/upper-"), ["clojure.string/upper-case"]);
        assert!(c.candidates("set/un").contains(&"set/union".to_string()));
        assert_eq!(c.candidates("walk/postw"), ["walk/postwalk", "walk/postwalk-replace"]);
        assert!(c.candidates("Math/po").contains(&"Math/pow".to_string()));
        assert!(c.candidates("json/pa").contains(&"json/parse-string".to_string()));
        assert!(c.candidates("Float/").contains(&"Float/parseFloat".to_string()));
        assert!(c.candidates("Fl").contains(&"Float/".to_string()));
        assert!(c.candidates("group-").contains(&"group-by".to_string()));
        assert!(c.candidates(".toUpper").contains(&".toUpperCase".to_string()));
    }

    #[test]
    fn special_forms_complete_and_rejected_forms_do_not() {
        let c = completions();
        assert!(c.candidates("def").contains(&"defn".to_string()));
        assert!(c.candidates("->").contains(&"->>".to_string()));
        assert!(c.candidates("defm").is_empty(), "{:?}", c.candidates("defm"));
    }

    #[test]
    fn namespaces_are_offered_as_prefixes_without_their_names() {
        let c = completions();
        let s = c.candidates("st");
        assert!(s.contains(&"str/".to_string()) && s.contains(&"str".to_string()), "{s:?}");
        assert!(s.iter().all(|n| !n.starts_with("str/") || n == "str/"), "{s:?}");
        assert!(c.candidates("wa").contains(&"walk/".to_string()));
        assert!(c.candidates("Ma").contains(&"Math/".to_string()));
        assert!(c.candidates("clojure.s").contains(&"clojure.string/".to_string()));
        // the library names a program may also write bare
        assert!(c.candidates("upper-").contains(&"upper-case".to_string()));
    }

    #[test]
    fn user_definitions_data_keys_and_tools_complete() {
        let c = completions();
        assert_eq!(c.candidates("my-"), ["my-orders", "my-total"]);
        assert_eq!(c.candidates("data/ord"), ["data/order_count", "data/orders"]);
        assert!(c.candidates("da").contains(&"data/".to_string()));
        assert_eq!(c.candidates("tool/s"), ["tool/search"]);
        assert_eq!(c.candidates("*"), ["*", "*1", "*2", "*3", "*e"]);
    }

    #[test]
    fn without_context_or_tools_there_is_no_data_or_tool_prefix() {
        let c = Completions::new::<&str, &str>(&[], &[]);
        assert!(c.candidates("dat").is_empty());
        assert!(c.candidates("too").is_empty());
    }

    #[test]
    fn nothing_for_empty_words_keywords_and_numbers() {
        let c = completions();
        assert!(c.candidates("").is_empty());
        assert!(c.candidates(":ke").is_empty());
        assert!(c.candidates("1").is_empty());
    }

    #[test]
    fn the_word_starts_after_the_last_delimiter() {
        assert_eq!(word_start("(str/upper-c", 12), Some(1));
        assert_eq!(word_start("(map inc [data/ord", 18), Some(10));
        assert_eq!(word_start("#(my-", 5), Some(2));
        assert_eq!(word_start("(f x) (g", 8), Some(7));
        assert_eq!(word_start("abc", 3), Some(0));
        assert_eq!(word_start("(a\n  bc", 7), Some(5));
        assert_eq!(word_start("(λx ab", 7), Some(5));
    }

    #[test]
    fn nothing_is_completed_inside_strings_or_comments() {
        assert_eq!(word_start("(println \"str/up", 16), None);
        assert_eq!(word_start("(println \"a\\\" str/up", 20), None);
        assert_eq!(word_start("(f) ; str/up", 12), None);
        assert_eq!(word_start("(f \"a\" str/up", 13), Some(7));
        assert_eq!(word_start("(f \\\" str/up", 12), Some(6));
        assert_eq!(word_start("; note\n(str/up", 14), Some(8));
        // the cursor off a character boundary is not a word
        assert_eq!(word_start("λ", 1), None);
    }
}
