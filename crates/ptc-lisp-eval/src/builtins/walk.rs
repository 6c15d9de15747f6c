//! Builtin family: walk (being filled in).
//!
//! IMPORTANT FOR WHOEVER FILLS THIS FILE: first read /tmp/family_common.md — the registry
//! API, the helpers available, and the rules for working alongside other engineers in
//! this repository (touch only your own files, rustfmt only your files, no commits,
//! conformance case format). Remove this paragraph when you write the file.

use super::Builtin;

/// Builtins of this family.
pub static BUILTINS: &[Builtin] = &[];
