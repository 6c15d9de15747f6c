//! `cargo xtask api`: the public surface of every library crate as a reviewed text file.
//!
//! Each library crate of the workspace (a member with a `lib` target that is published)
//! gets `api/<crate>.txt`: one line per public item with its signature (modules, types,
//! fields, variants, functions and methods, traits and their items, constants, trait
//! implementations and auto traits), grouped by the item they belong to and sorted, so the
//! same code always gives the same file. `cargo xtask api` rebuilds the surfaces and fails
//! with a diff when one changed; `--bless` writes them. `cargo xtask ci` runs the check, so
//! a change to what embedders see is a diff in review, like a snapshot.
//!
//! The surfaces come from rustdoc's JSON output, which stable rustdoc writes when
//! `RUSTC_BOOTSTRAP=1` is set. It is set for rustdoc alone: this binary is cargo's
//! `RUSTDOC` for that build (see [`rustdoc_wrapper`]), because cargo hashes
//! `RUSTC_BOOTSTRAP` into every unit and would otherwise type-check every dependency again
//! next to the copies `cargo clippy` already made. The JSON is walked here with
//! `serde_json`; a shape this walker does not know renders as `?` instead of failing, and
//! the format version is written at the top of each file so a toolchain update that
//! changes the rendering shows as one reviewed diff.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value as Json;

use crate::{root, target_dir};

/// Environment variable naming the real rustdoc when this binary runs as cargo's `RUSTDOC`.
pub const WRAPPER_ENV: &str = "PTC_XTASK_REAL_RUSTDOC";

/// The folder of the snapshots, relative to the workspace root.
const API_DIR: &str = "api";

/// The auto traits shown: the stable ones. (Unstable ones such as `Freeze` come and go
/// with the toolchain and are nothing a caller can name.)
const AUTO_TRAITS: &[&str] = &["RefUnwindSafe", "Send", "Sync", "Unpin", "UnwindSafe"];

/// Unstable marker traits that `derive` implements behind the scenes: not part of any
/// surface a caller can use, and they change with the toolchain.
const HIDDEN_TRAITS: &[&str] = &["StructuralPartialEq", "TrivialClone"];

/// `cargo xtask api [--bless]`.
pub fn run(args: &[String]) -> Result<()> {
    let bless = match args.first().map(String::as_str) {
        None => false,
        Some("--bless") => true,
        Some(other) => bail!("unknown argument {other}: `cargo xtask api` checks, `cargo xtask api --bless` writes"),
    };
    let root = root();
    let crates = library_crates(&root)?;
    let surfaces = build_surfaces(&root, &crates)?;
    if bless { bless_all(&root, &surfaces) } else { check_all(&root, &surfaces) }
}

/// Runs as rustdoc for cargo when [`WRAPPER_ENV`] is set: the real rustdoc with
/// `RUSTC_BOOTSTRAP=1`, so `-Z unstable-options --output-format json` is accepted.
/// Returns `None` when this process is not the wrapper.
pub fn rustdoc_wrapper() -> Option<std::process::ExitCode> {
    let real = std::env::var_os(WRAPPER_ENV)?;
    let status = Command::new(&real).args(std::env::args_os().skip(1)).env("RUSTC_BOOTSTRAP", "1").status();
    Some(match status {
        Ok(s) => std::process::ExitCode::from(s.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("xtask: cannot start rustdoc {}: {e}", PathBuf::from(real).display());
            std::process::ExitCode::FAILURE
        }
    })
}

/// A library crate: its package name and the name of its lib target (`ptc_lisp_eval`).
struct Library {
    package: String,
    target: String,
}

/// The workspace's library crates: members with a `lib` target whose `publish` is not
/// `false` (the Python extension and `xtask` are not libraries anyone depends on).
fn library_crates(root: &Path) -> Result<Vec<Library>> {
    let out = Command::new(crate::cargo())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root)
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let meta: Json = serde_json::from_slice(&out.stdout).context("cargo metadata printed invalid JSON")?;
    let mut libs = Vec::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        let lib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|k| k == "lib" || k == "rlib")));
        if let (Some(lib), Some(name)) = (lib, package["name"].as_str()) {
            let target = lib["name"].as_str().unwrap_or(name).replace('-', "_");
            libs.push(Library { package: name.to_string(), target });
        }
    }
    libs.sort_by(|a, b| a.package.cmp(&b.package));
    if libs.is_empty() {
        bail!("cargo metadata lists no library crate in the workspace");
    }
    Ok(libs)
}

/// Builds rustdoc JSON for every library in one cargo run and renders each surface.
fn build_surfaces(root: &Path, crates: &[Library]) -> Result<Vec<(String, String)>> {
    let cargo = crate::cargo();
    let exe = std::env::current_exe().context("cannot find the xtask binary to act as rustdoc")?;
    let real_rustdoc = std::env::var("RUSTDOC").unwrap_or_else(|_| "rustdoc".into());
    let mut flags = std::env::var("RUSTDOCFLAGS").unwrap_or_default();
    // The surface is the point here, not the docs' lints (`cargo doc` reports those).
    flags.push_str(" -Z unstable-options --output-format json --document-hidden-items --cap-lints allow");
    // The same package selection and features as `cargo clippy --workspace`, so the
    // dependencies' type-checked copies are shared with it.
    let mut args = vec!["doc", "--workspace", "--lib", "--no-deps", "--quiet"];
    if std::env::var_os("CARGO_TERM_COLOR").is_none() {
        args.extend(["--color", "never"]);
    }
    eprintln!("==> rustdoc JSON of {} library crates", crates.len());
    let status = Command::new(&cargo)
        .args(&args)
        .env("RUSTDOC", &exe)
        .env(WRAPPER_ENV, &real_rustdoc)
        .env("RUSTDOCFLAGS", flags.trim())
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot start {cargo}"))?;
    if !status.success() {
        bail!("cargo doc (rustdoc JSON) failed ({status})");
    }
    let doc = target_dir().join("doc");
    let mut surfaces = Vec::new();
    for lib in crates {
        let path = doc.join(format!("{}.json", lib.target));
        let text = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let json: Json =
            serde_json::from_slice(&text).with_context(|| format!("{} is not valid JSON", path.display()))?;
        surfaces.push((lib.package.clone(), render(&json)?));
    }
    Ok(surfaces)
}

fn snapshot_path(root: &Path, package: &str) -> PathBuf {
    root.join(API_DIR).join(format!("{package}.txt"))
}

fn bless_all(root: &Path, surfaces: &[(String, String)]) -> Result<()> {
    let dir = root.join(API_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let wanted: HashSet<PathBuf> = surfaces.iter().map(|(p, _)| snapshot_path(root, p)).collect();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "txt") && !wanted.contains(&path) {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            eprintln!("removed {} (no such library crate any more)", path.display());
        }
    }
    for (package, text) in surfaces {
        let path = snapshot_path(root, package);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

fn check_all(root: &Path, surfaces: &[(String, String)]) -> Result<()> {
    let mut changed = Vec::new();
    for (package, text) in surfaces {
        let path = snapshot_path(root, package);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != *text {
            eprintln!("--- {} (committed)\n+++ {package} (this tree)", path.display());
            eprint!("{}", diff(&old, text));
            changed.push(package.as_str());
        }
    }
    if !changed.is_empty() {
        bail!(
            "the public API of {} changed: review the diff above, then run `cargo xtask api --bless` \
             and commit api/",
            changed.join(", ")
        );
    }
    eprintln!("==> public APIs match api/*.txt");
    Ok(())
}

/// The lines only in `old` (`-`) and only in `new` (`+`), in file order. Lines of a
/// surface are unique, so this is the whole difference.
fn diff(old: &str, new: &str) -> String {
    let old_lines: HashSet<&str> = old.lines().collect();
    let new_lines: HashSet<&str> = new.lines().collect();
    let mut out = String::new();
    for line in old.lines().filter(|l| !new_lines.contains(l)) {
        out.push_str(&format!("-{line}\n"));
    }
    for line in new.lines().filter(|l| !old_lines.contains(l)) {
        out.push_str(&format!("+{line}\n"));
    }
    out
}

/// Renders one crate's rustdoc JSON as its surface file.
pub fn render(json: &Json) -> Result<String> {
    let krate = Krate::new(json)?;
    let lines = krate.lines();
    let mut out = format!(
        "# Public API of {} (rustdoc format {}): `cargo xtask api --bless` rewrites this file.\n",
        krate.name,
        json["format_version"].as_u64().unwrap_or(0)
    );
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// An item's id in rustdoc JSON (a number in recent formats, a string in older ones).
fn id_of(v: &Json) -> Option<String> {
    match v {
        Json::Number(n) => Some(n.to_string()),
        Json::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The one-key object rustdoc uses for enums (`{"struct": {...}}`): its key and value.
fn tagged(v: &Json) -> (&str, &Json) {
    match v {
        Json::Object(map) if map.len() == 1 => map.iter().next().map(|(k, v)| (k.as_str(), v)).unwrap_or(("?", v)),
        Json::String(s) => (s.as_str(), &Json::Null),
        _ => ("?", v),
    }
}

/// Ordering of a line inside its owner's group.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Item,
    Member,
    Method,
    TraitImpl,
    AutoTraits,
}

struct Krate<'a> {
    name: String,
    index: &'a serde_json::Map<String, Json>,
    paths: &'a serde_json::Map<String, Json>,
    external: &'a serde_json::Map<String, Json>,
    root: String,
    /// The shortest public path of each reachable local item.
    public: HashMap<String, String>,
    /// Every public path of each reachable item, in walk order.
    reachable: Vec<(String, String)>,
    /// `pub use` of items this crate does not define: (path, target).
    external_uses: Vec<(String, String)>,
}

impl<'a> Krate<'a> {
    fn new(json: &'a Json) -> Result<Self> {
        let empty = &EMPTY;
        let index = json["index"].as_object().context("rustdoc JSON has no index")?;
        let root = id_of(&json["root"]).context("rustdoc JSON has no root")?;
        let name = index.get(&root).and_then(|r| r["name"].as_str()).context("rustdoc JSON root has no name")?;
        let mut krate = Krate {
            name: name.to_string(),
            index,
            paths: json["paths"].as_object().unwrap_or(empty),
            external: json["external_crates"].as_object().unwrap_or(empty),
            root: root.clone(),
            public: HashMap::new(),
            reachable: Vec::new(),
            external_uses: Vec::new(),
        };
        let mut walked = HashSet::new();
        krate.walk(&root, name.to_string(), &mut walked);
        let mut best: HashMap<String, String> = HashMap::new();
        for (path, id) in &krate.reachable {
            let better = best.get(id).is_none_or(|old| {
                (path.matches("::").count(), path.as_str()) < (old.matches("::").count(), old.as_str())
            });
            if better {
                best.insert(id.clone(), path.clone());
            }
        }
        krate.public = best;
        Ok(krate)
    }

    fn item(&self, id: &str) -> Option<&'a Json> {
        self.index.get(id)
    }

    /// Collects every public path reachable from a module.
    fn walk(&mut self, id: &str, path: String, walked: &mut HashSet<String>) {
        let Some(item) = self.item(id) else { return };
        let (kind, inner) = tagged(&item["inner"]);
        self.reachable.push((path.clone(), id.to_string()));
        if kind != "module" || !walked.insert(id.to_string()) {
            return;
        }
        for child in inner["items"].as_array().into_iter().flatten() {
            let Some(child_id) = id_of(child) else { continue };
            let Some(child_item) = self.item(&child_id) else { continue };
            if child_item["visibility"] != "public" {
                continue;
            }
            let (child_kind, child_inner) = tagged(&child_item["inner"]);
            match child_kind {
                "use" => {
                    let name = child_inner["name"].as_str().unwrap_or("?");
                    let target = id_of(&child_inner["id"]);
                    let glob = child_inner["is_glob"].as_bool().unwrap_or(false);
                    match target.filter(|t| self.index.contains_key(t)) {
                        Some(t) if glob => {
                            let items: Vec<String> = self
                                .item(&t)
                                .map(|m| tagged(&m["inner"]).1["items"].clone())
                                .and_then(|v| v.as_array().cloned())
                                .into_iter()
                                .flatten()
                                .filter_map(|v| id_of(&v))
                                .collect();
                            for grandchild in items {
                                let public = self.item(&grandchild).is_some_and(|g| g["visibility"] == "public");
                                let gname = self.item(&grandchild).and_then(|g| g["name"].as_str());
                                if let (true, Some(gname)) = (public, gname) {
                                    self.walk(&grandchild, format!("{path}::{gname}"), walked);
                                }
                            }
                        }
                        Some(t) => self.walk(&t, format!("{path}::{name}"), walked),
                        None => {
                            let source = child_inner["source"].as_str().unwrap_or("?").to_string();
                            let shown = if glob { format!("{path}::*") } else { format!("{path}::{name}") };
                            self.external_uses.push((shown, source));
                        }
                    }
                }
                "impl" => {}
                _ => {
                    if let Some(name) = child_item["name"].as_str() {
                        self.walk(&child_id, format!("{path}::{name}"), walked);
                    }
                }
            }
        }
    }

    /// Every line of the surface, grouped by owner and sorted.
    fn lines(&self) -> Vec<String> {
        let mut keyed: BTreeSet<(String, Rank, String)> = BTreeSet::new();
        for (path, source) in &self.external_uses {
            keyed.insert((path.clone(), Rank::Item, format!("pub use {path} = {source}")));
        }
        for (path, id) in &self.reachable {
            if id == &self.root {
                keyed.insert((path.clone(), Rank::Item, format!("pub mod {path}")));
                continue;
            }
            let canonical = self.public.get(id).cloned().unwrap_or_else(|| path.clone());
            if &canonical != path {
                keyed.insert((path.clone(), Rank::Item, format!("pub use {path} = {canonical}")));
                continue;
            }
            if let Some(item) = self.item(id) {
                self.item_lines(path, item, &mut keyed);
            }
        }
        keyed.into_iter().map(|(_, _, line)| line).collect()
    }

    fn attrs(&self, item: &Json) -> String {
        let mut out = String::new();
        for attr in item["attrs"].as_array().into_iter().flatten() {
            let text = match attr {
                Json::String(s) => s.clone(),
                other => {
                    let (k, v) = tagged(other);
                    match k {
                        "non_exhaustive" => "#[non_exhaustive]".into(),
                        "other" => v.as_str().unwrap_or("").to_string(),
                        _ => String::new(),
                    }
                }
            };
            let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            if compact.contains("non_exhaustive") {
                out.push_str("#[non_exhaustive] ");
            } else if compact.contains("doc(hidden)") {
                out.push_str("#[doc(hidden)] ");
            }
        }
        if !item["deprecation"].is_null() {
            out.push_str("#[deprecated] ");
        }
        out
    }

    fn item_lines(&self, path: &str, item: &Json, out: &mut BTreeSet<(String, Rank, String)>) {
        let attrs = self.attrs(item);
        let (kind, inner) = tagged(&item["inner"]);
        let mut push = |rank: Rank, line: String| out.insert((path.to_string(), rank, line));
        match kind {
            "module" => {
                push(Rank::Item, format!("{attrs}pub mod {path}"));
            }
            "struct" => {
                let generics = self.generics(&inner["generics"]);
                let wh = self.where_clause(&inner["generics"]);
                let (shape, fields) = tagged(&inner["kind"]);
                let body = match shape {
                    "unit" => ";".to_string(),
                    "tuple" => format!("({})", self.tuple_fields(fields)),
                    _ => {
                        if fields["has_stripped_fields"].as_bool().unwrap_or(false) {
                            " { .. }".into()
                        } else {
                            String::new()
                        }
                    }
                };
                push(Rank::Item, format!("{attrs}pub struct {path}{generics}{body}{wh}"));
                if shape == "plain" {
                    for field in fields["fields"].as_array().into_iter().flatten() {
                        if let Some(line) = self.field_line(path, field) {
                            push(Rank::Member, line);
                        }
                    }
                }
                self.impl_lines(path, &inner["impls"], out);
            }
            "union" => {
                let generics = self.generics(&inner["generics"]);
                push(Rank::Item, format!("{attrs}pub union {path}{generics}"));
                for field in inner["fields"].as_array().into_iter().flatten() {
                    if let Some(line) = self.field_line(path, field) {
                        push(Rank::Member, line);
                    }
                }
                self.impl_lines(path, &inner["impls"], out);
            }
            "enum" => {
                let generics = self.generics(&inner["generics"]);
                let wh = self.where_clause(&inner["generics"]);
                push(Rank::Item, format!("{attrs}pub enum {path}{generics}{wh}"));
                for variant in inner["variants"].as_array().into_iter().flatten() {
                    let Some(v) = id_of(variant).and_then(|id| self.item(&id)) else { continue };
                    let vname = v["name"].as_str().unwrap_or("?");
                    let vattrs = self.attrs(v);
                    let (vkind, vinner) = tagged(&tagged(&v["inner"]).1["kind"]);
                    let body = match vkind {
                        "tuple" => format!("({})", self.tuple_fields(vinner)),
                        "struct" => {
                            let mut parts: Vec<String> = vinner["fields"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|f| id_of(f).and_then(|id| self.item(&id)))
                                .map(|f| {
                                    format!("{}: {}", f["name"].as_str().unwrap_or("?"), self.ty(tagged(&f["inner"]).1))
                                })
                                .collect();
                            if vinner["has_stripped_fields"].as_bool().unwrap_or(false) {
                                parts.push("..".into());
                            }
                            format!(" {{ {} }}", parts.join(", "))
                        }
                        _ => String::new(),
                    };
                    push(Rank::Member, format!("{vattrs}pub variant {path}::{vname}{body}"));
                }
                self.impl_lines(path, &inner["impls"], out);
            }
            "function" => {
                push(Rank::Item, format!("{attrs}{}", self.function(path, inner)));
            }
            "trait" => {
                let generics = self.generics(&inner["generics"]);
                let bounds = self.bounds(&inner["bounds"]);
                let bounds = if bounds.is_empty() { String::new() } else { format!(": {bounds}") };
                let unsafety = if inner["is_unsafe"].as_bool().unwrap_or(false) { "unsafe " } else { "" };
                let wh = self.where_clause(&inner["generics"]);
                push(Rank::Item, format!("{attrs}pub {unsafety}trait {path}{generics}{bounds}{wh}"));
                for member in inner["items"].as_array().into_iter().flatten() {
                    let Some(m) = id_of(member).and_then(|id| self.item(&id)) else { continue };
                    let mpath = format!("{path}::{}", m["name"].as_str().unwrap_or("?"));
                    if let Some(line) = self.assoc_line(&mpath, m, true) {
                        push(Rank::Member, line);
                    }
                }
                for imp in inner["implementations"].as_array().into_iter().flatten() {
                    if let Some(line) = id_of(imp).and_then(|id| self.item(&id)).and_then(|i| self.trait_impl(i)) {
                        push(Rank::TraitImpl, line);
                    }
                }
            }
            "type_alias" => {
                let generics = self.generics(&inner["generics"]);
                push(Rank::Item, format!("{attrs}pub type {path}{generics} = {}", self.ty(&inner["type"])));
            }
            "constant" => {
                push(Rank::Item, format!("{attrs}pub const {path}: {}", self.ty(&inner["type"])));
            }
            "static" => {
                let m = if inner["is_mutable"].as_bool().unwrap_or(false) { "mut " } else { "" };
                push(Rank::Item, format!("{attrs}pub static {m}{path}: {}", self.ty(&inner["type"])));
            }
            "macro" => {
                push(Rank::Item, format!("{attrs}macro_rules! {path}"));
            }
            "proc_macro" => {
                let k = inner["kind"].as_str().unwrap_or("bang");
                push(Rank::Item, format!("{attrs}proc_macro({k}) {path}"));
            }
            "trait_alias" => {
                push(Rank::Item, format!("{attrs}pub trait {path} = {}", self.bounds(&inner["params"])));
            }
            "primitive" | "extern_crate" | "use" | "impl" => {}
            other => {
                push(Rank::Item, format!("{attrs}pub {other} {path}"));
            }
        }
    }

    fn field_line(&self, owner: &str, field: &Json) -> Option<String> {
        let f = id_of(field).and_then(|id| self.item(&id))?;
        if f["visibility"] != "public" {
            return None;
        }
        let name = f["name"].as_str().unwrap_or("?");
        Some(format!("{}pub field {owner}::{name}: {}", self.attrs(f), self.ty(tagged(&f["inner"]).1)))
    }

    fn tuple_fields(&self, fields: &Json) -> String {
        fields
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| match id_of(f).and_then(|id| self.item(&id)) {
                Some(f) if f["visibility"] == "public" || f["visibility"] == "default" => {
                    self.ty(tagged(&f["inner"]).1)
                }
                _ => "_".into(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The lines of a type's impls: inherent public items, trait impls, auto traits.
    fn impl_lines(&self, owner: &str, impls: &Json, out: &mut BTreeSet<(String, Rank, String)>) {
        let mut auto: BTreeMap<String, bool> = BTreeMap::new();
        for imp in impls.as_array().into_iter().flatten() {
            let Some(item) = id_of(imp).and_then(|id| self.item(&id)) else { continue };
            let inner = tagged(&item["inner"]).1;
            if !inner["blanket_impl"].is_null() {
                continue;
            }
            if inner["is_synthetic"].as_bool().unwrap_or(false) {
                let name = inner["trait"]["path"].as_str().unwrap_or("?");
                let name = name.rsplit("::").next().unwrap_or(name).to_string();
                if AUTO_TRAITS.contains(&name.as_str()) {
                    auto.insert(name, !inner["is_negative"].as_bool().unwrap_or(false));
                }
                continue;
            }
            if inner["trait"].is_null() {
                for member in inner["items"].as_array().into_iter().flatten() {
                    let Some(m) = id_of(member).and_then(|id| self.item(&id)) else { continue };
                    if m["visibility"] != "public" {
                        continue;
                    }
                    let mpath = format!("{owner}::{}", m["name"].as_str().unwrap_or("?"));
                    if let Some(line) = self.assoc_line(&mpath, m, false) {
                        out.insert((owner.to_string(), Rank::Method, line));
                    }
                }
            } else if let Some(line) = self.trait_impl(item) {
                out.insert((owner.to_string(), Rank::TraitImpl, line));
            }
        }
        if !auto.is_empty() {
            let list: Vec<String> =
                auto.into_iter().map(|(name, yes)| if yes { name } else { format!("!{name}") }).collect();
            out.insert((owner.to_string(), Rank::AutoTraits, format!("auto {owner}: {}", list.join(" + "))));
        }
    }

    /// `impl<..> Trait<..> for Type { type Item = ..; }`, on one line.
    fn trait_impl(&self, item: &Json) -> Option<String> {
        let inner = tagged(&item["inner"]).1;
        if !inner["blanket_impl"].is_null() || inner["is_synthetic"].as_bool().unwrap_or(false) {
            return None;
        }
        let trait_name = inner["trait"]["path"].as_str().unwrap_or("");
        if HIDDEN_TRAITS.contains(&trait_name.rsplit("::").next().unwrap_or(trait_name)) {
            return None;
        }
        let generics = self.generics(&inner["generics"]);
        let neg = if inner["is_negative"].as_bool().unwrap_or(false) { "!" } else { "" };
        let unsafety = if inner["is_unsafe"].as_bool().unwrap_or(false) { "unsafe " } else { "" };
        let tr = self.path_ref(&inner["trait"]);
        let for_ty = self.ty(&inner["for"]);
        let wh = self.where_clause(&inner["generics"]);
        let mut assoc = Vec::new();
        for member in inner["items"].as_array().into_iter().flatten() {
            let Some(m) = id_of(member).and_then(|id| self.item(&id)) else { continue };
            let (kind, minner) = tagged(&m["inner"]);
            let name = m["name"].as_str().unwrap_or("?");
            match kind {
                "assoc_type" => assoc.push(format!("type {name} = {};", self.ty(&minner["type"]))),
                "assoc_const" => assoc.push(format!("const {name}: {};", self.ty(&minner["type"]))),
                _ => {}
            }
        }
        let body = if assoc.is_empty() { String::new() } else { format!(" {{ {} }}", assoc.join(" ")) };
        Some(format!("{unsafety}impl{generics} {neg}{tr} for {for_ty}{wh}{body}"))
    }

    /// A method, associated type or constant of a trait or an inherent impl.
    fn assoc_line(&self, path: &str, item: &Json, in_trait: bool) -> Option<String> {
        let attrs = self.attrs(item);
        let (kind, inner) = tagged(&item["inner"]);
        let vis = if in_trait { "" } else { "pub " };
        Some(match kind {
            "function" => {
                let provided = if in_trait && inner["has_body"].as_bool().unwrap_or(false) { " { .. }" } else { "" };
                let f = self.function(path, inner);
                let f = if in_trait { f.trim_start_matches("pub ").to_string() } else { f };
                format!("{attrs}{f}{provided}")
            }
            "assoc_type" => {
                let bounds = self.bounds(&inner["bounds"]);
                let bounds = if bounds.is_empty() { String::new() } else { format!(": {bounds}") };
                let default =
                    if inner["type"].is_null() { String::new() } else { format!(" = {}", self.ty(&inner["type"])) };
                format!("{attrs}{vis}type {path}{}{bounds}{default}", self.generics(&inner["generics"]))
            }
            "assoc_const" => format!("{attrs}{vis}const {path}: {}", self.ty(&inner["type"])),
            _ => return None,
        })
    }

    fn function(&self, path: &str, inner: &Json) -> String {
        let header = &inner["header"];
        let mut quals = String::new();
        for (flag, word) in [("is_const", "const "), ("is_async", "async "), ("is_unsafe", "unsafe ")] {
            if header[flag].as_bool().unwrap_or(false) {
                quals.push_str(word);
            }
        }
        let sig = &inner["sig"];
        let args: Vec<String> = sig["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pair| {
                let name = pair[0].as_str().unwrap_or("_");
                let ty = &pair[1];
                if name == "self" { self.self_param(ty) } else { format!("{name}: {}", self.ty(ty)) }
            })
            .collect();
        let output = if sig["output"].is_null() { String::new() } else { format!(" -> {}", self.ty(&sig["output"])) };
        let generics = self.generics(&inner["generics"]);
        let wh = self.where_clause(&inner["generics"]);
        format!("pub {quals}fn {path}{generics}({}){output}{wh}", args.join(", "))
    }

    fn self_param(&self, ty: &Json) -> String {
        let (kind, inner) = tagged(ty);
        match kind {
            "generic" if inner == "Self" => "self".into(),
            "borrowed_ref" if tagged(&inner["type"]) == ("generic", &Json::String("Self".into())) => {
                let lt = inner["lifetime"].as_str().map(|l| format!("{l} ")).unwrap_or_default();
                let m = if inner["is_mutable"].as_bool().unwrap_or(false) { "mut " } else { "" };
                format!("&{lt}{m}self")
            }
            _ => format!("self: {}", self.ty(ty)),
        }
    }

    /// `<'a, T: Bound, const N: usize>`, without the params of `impl Trait` arguments.
    fn generics(&self, generics: &Json) -> String {
        let params: Vec<String> = generics["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let name = p["name"].as_str().unwrap_or("?");
                let (kind, inner) = tagged(&p["kind"]);
                match kind {
                    "lifetime" => {
                        let outlives: Vec<&str> =
                            inner["outlives"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
                        if outlives.is_empty() {
                            Some(name.to_string())
                        } else {
                            Some(format!("{name}: {}", outlives.join(" + ")))
                        }
                    }
                    "type" => {
                        if inner["is_synthetic"].as_bool().unwrap_or(false) {
                            return None;
                        }
                        let bounds = self.bounds(&inner["bounds"]);
                        let mut s = name.to_string();
                        if !bounds.is_empty() {
                            s.push_str(&format!(": {bounds}"));
                        }
                        if !inner["default"].is_null() {
                            s.push_str(&format!(" = {}", self.ty(&inner["default"])));
                        }
                        Some(s)
                    }
                    "const" => Some(format!("const {name}: {}", self.ty(&inner["type"]))),
                    _ => Some(name.to_string()),
                }
            })
            .collect();
        if params.is_empty() { String::new() } else { format!("<{}>", params.join(", ")) }
    }

    fn where_clause(&self, generics: &Json) -> String {
        let preds: Vec<String> = generics["where_predicates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                let (kind, inner) = tagged(p);
                match kind {
                    "bound_predicate" => {
                        let hr = self.hrtb(&inner["generic_params"]);
                        format!("{hr}{}: {}", self.ty(&inner["type"]), self.bounds(&inner["bounds"]))
                    }
                    "lifetime_predicate" => {
                        let outlives: Vec<&str> =
                            inner["outlives"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
                        format!("{}: {}", inner["lifetime"].as_str().unwrap_or("?"), outlives.join(" + "))
                    }
                    "eq_predicate" => {
                        let rhs = match tagged(&inner["rhs"]) {
                            ("type", t) => self.ty(t),
                            _ => "?".into(),
                        };
                        format!("{} = {rhs}", self.ty(&inner["lhs"]))
                    }
                    _ => "?".into(),
                }
            })
            .collect();
        if preds.is_empty() { String::new() } else { format!(" where {}", preds.join(", ")) }
    }

    fn hrtb(&self, params: &Json) -> String {
        let names: Vec<&str> = params.as_array().into_iter().flatten().filter_map(|p| p["name"].as_str()).collect();
        if names.is_empty() { String::new() } else { format!("for<{}> ", names.join(", ")) }
    }

    fn bounds(&self, bounds: &Json) -> String {
        bounds
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                let (kind, inner) = tagged(b);
                match kind {
                    "trait_bound" => {
                        let modifier = match inner["modifier"].as_str() {
                            Some("maybe") => "?",
                            Some("maybe_const") => "~const ",
                            _ => "",
                        };
                        format!("{}{modifier}{}", self.hrtb(&inner["generic_params"]), self.path_ref(&inner["trait"]))
                    }
                    "outlives" => inner.as_str().unwrap_or("?").to_string(),
                    "use" => {
                        let args: Vec<String> = inner
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|a| match a {
                                Json::String(s) => s.clone(),
                                other => {
                                    let (_, v) = tagged(other);
                                    v.as_str().unwrap_or("?").to_string()
                                }
                            })
                            .collect();
                        format!("use<{}>", args.join(", "))
                    }
                    _ => "?".into(),
                }
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// The name of an item referred to by id: its public path in this crate, else the
    /// canonical path of its crate (std, core and alloc items by their last segment).
    fn name_of(&self, id: Option<String>, written: &str) -> String {
        let Some(id) = id else { return written.to_string() };
        if let Some(public) = self.public.get(&id) {
            return public.clone();
        }
        let Some(summary) = self.paths.get(&id) else { return written.to_string() };
        let segments: Vec<&str> = summary["path"].as_array().into_iter().flatten().filter_map(Json::as_str).collect();
        let crate_id = id_of(&summary["crate_id"]).unwrap_or_default();
        if crate_id == "0" {
            // A local item no public path reaches: shown by where it is defined.
            return format!("{}(unreachable)", segments.join("::"));
        }
        let krate = self.external.get(&crate_id).and_then(|c| c["name"].as_str()).unwrap_or("?");
        if matches!(krate, "std" | "core" | "alloc") {
            return segments.last().map(|s| s.to_string()).unwrap_or_else(|| written.to_string());
        }
        if segments.is_empty() { written.to_string() } else { segments.join("::") }
    }

    /// A path with generic args: `Trait<A>` or `Type<'a, T>`.
    fn path_ref(&self, p: &Json) -> String {
        let name = self.name_of(id_of(&p["id"]), p["path"].as_str().unwrap_or("?"));
        format!("{name}{}", self.generic_args(&p["args"]))
    }

    fn generic_args(&self, args: &Json) -> String {
        if args.is_null() {
            return String::new();
        }
        let (kind, inner) = tagged(args);
        match kind {
            "angle_bracketed" => {
                let mut parts: Vec<String> = inner["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        let (k, v) = tagged(a);
                        match k {
                            "lifetime" => v.as_str().unwrap_or("?").to_string(),
                            "type" => self.ty(v),
                            "const" => v["expr"].as_str().unwrap_or("?").to_string(),
                            "infer" => "_".into(),
                            _ => "?".into(),
                        }
                    })
                    .collect();
                for c in inner["constraints"].as_array().into_iter().flatten() {
                    let name = format!("{}{}", c["name"].as_str().unwrap_or("?"), self.generic_args(&c["args"]));
                    let (bk, bv) = tagged(&c["binding"]);
                    parts.push(match bk {
                        "equality" => match tagged(bv) {
                            ("type", t) => format!("{name} = {}", self.ty(t)),
                            (_, other) => format!("{name} = {}", other["expr"].as_str().unwrap_or("?")),
                        },
                        "constraint" => format!("{name}: {}", self.bounds(bv)),
                        _ => format!("{name}: ?"),
                    });
                }
                if parts.is_empty() { String::new() } else { format!("<{}>", parts.join(", ")) }
            }
            "parenthesized" => {
                let inputs: Vec<String> =
                    inner["inputs"].as_array().into_iter().flatten().map(|t| self.ty(t)).collect();
                let output = if inner["output"].is_null() {
                    String::new()
                } else {
                    format!(" -> {}", self.ty(&inner["output"]))
                };
                format!("({}){output}", inputs.join(", "))
            }
            "return_type_notation" => "(..)".into(),
            _ => "<?>".into(),
        }
    }

    fn ty(&self, t: &Json) -> String {
        let (kind, inner) = tagged(t);
        match kind {
            "resolved_path" => self.path_ref(inner),
            "dyn_trait" => {
                let mut parts: Vec<String> = inner["traits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| format!("{}{}", self.hrtb(&p["generic_params"]), self.path_ref(&p["trait"])))
                    .collect();
                if let Some(lt) = inner["lifetime"].as_str() {
                    parts.push(lt.to_string());
                }
                format!("dyn {}", parts.join(" + "))
            }
            "generic" | "primitive" => inner.as_str().unwrap_or("?").to_string(),
            "function_pointer" => {
                let sig = &inner["sig"];
                let args: Vec<String> =
                    sig["inputs"].as_array().into_iter().flatten().map(|p| self.ty(&p[1])).collect();
                let output =
                    if sig["output"].is_null() { String::new() } else { format!(" -> {}", self.ty(&sig["output"])) };
                let unsafety = if inner["header"]["is_unsafe"].as_bool().unwrap_or(false) { "unsafe " } else { "" };
                format!("{}{unsafety}fn({}){output}", self.hrtb(&inner["generic_params"]), args.join(", "))
            }
            "tuple" => {
                let items: Vec<String> = inner.as_array().into_iter().flatten().map(|t| self.ty(t)).collect();
                if items.len() == 1 { format!("({},)", items[0]) } else { format!("({})", items.join(", ")) }
            }
            "slice" => format!("[{}]", self.ty(inner)),
            "array" => format!("[{}; {}]", self.ty(&inner["type"]), inner["len"].as_str().unwrap_or("?")),
            "pat" => self.ty(&inner["type"]),
            "impl_trait" => format!("impl {}", self.bounds(inner)),
            "infer" => "_".into(),
            "raw_pointer" => {
                let m = if inner["is_mutable"].as_bool().unwrap_or(false) { "mut" } else { "const" };
                format!("*{m} {}", self.ty(&inner["type"]))
            }
            "borrowed_ref" => {
                let lt = inner["lifetime"].as_str().map(|l| format!("{l} ")).unwrap_or_default();
                let m = if inner["is_mutable"].as_bool().unwrap_or(false) { "mut " } else { "" };
                format!("&{lt}{m}{}", self.ty(&inner["type"]))
            }
            "qualified_path" => {
                let name = inner["name"].as_str().unwrap_or("?");
                let args = self.generic_args(&inner["args"]);
                let self_ty = self.ty(&inner["self_type"]);
                if inner["trait"].is_null() {
                    format!("{self_ty}::{name}{args}")
                } else {
                    format!("<{self_ty} as {}>::{name}{args}", self.path_ref(&inner["trait"]))
                }
            }
            _ => "?".into(),
        }
    }
}

static EMPTY: std::sync::LazyLock<serde_json::Map<String, Json>> = std::sync::LazyLock::new(serde_json::Map::new);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tiny crate: a root module with a struct (a public and a private field, a method,
    /// a trait impl, auto traits, an unstable derive marker and an unstable auto trait that
    /// are left out), a re-export of it under a second path, and a function.
    fn sample() -> Json {
        json!({
            "root": 0,
            "format_version": 57,
            "external_crates": {"1": {"name": "core"}, "2": {"name": "imbl"}},
            "paths": {
                "90": {"crate_id": 1, "path": ["core", "option", "Option"], "kind": "enum"},
                "91": {"crate_id": 2, "path": ["imbl", "vector", "Vector"], "kind": "struct"},
                "92": {"crate_id": 1, "path": ["core", "clone", "Clone"], "kind": "trait"},
                "93": {"crate_id": 1, "path": ["core", "marker", "Send"], "kind": "trait"}
            },
            "index": {
                "0": {"name": "demo", "visibility": "public", "attrs": [], "deprecation": null,
                      "inner": {"module": {"is_crate": true, "items": [1, 2, 5, 10]}}},
                "1": {"name": "inner", "visibility": "public", "attrs": [], "deprecation": null,
                      "inner": {"module": {"is_crate": false, "items": [3]}}},
                "2": {"name": null, "visibility": "public", "attrs": [], "deprecation": null,
                      "inner": {"use": {"source": "inner::Thing", "name": "Thing", "id": 3, "is_glob": false}}},
                "3": {"name": "Thing", "visibility": "public", "attrs": [{"non_exhaustive": null}], "deprecation": null,
                      "inner": {"struct": {"kind": {"plain": {"fields": [4, 8], "has_stripped_fields": true}},
                                "generics": {"params": [], "where_predicates": []}, "impls": [6, 7, 9, 12, 13]}}},
                "4": {"name": "items", "visibility": "public", "attrs": [], "deprecation": null,
                      "inner": {"struct_field": {"resolved_path": {"path": "imbl::Vector", "id": 91,
                          "args": {"angle_bracketed": {"args": [{"type": {"primitive": "u8"}}], "constraints": []}}}}}},
                "8": {"name": "secret", "visibility": "crate", "attrs": [], "deprecation": null,
                      "inner": {"struct_field": {"primitive": "u8"}}},
                "5": {"name": "make", "visibility": "public", "attrs": [], "deprecation": null,
                      "inner": {"function": {"sig": {"inputs": [["n", {"primitive": "usize"}]],
                          "output": {"resolved_path": {"path": "Option", "id": 90,
                              "args": {"angle_bracketed": {"args": [{"type": {"resolved_path": {"path": "Thing", "id": 3, "args": null}}}], "constraints": []}}}}},
                          "generics": {"params": [], "where_predicates": []},
                          "header": {"is_const": false, "is_unsafe": false, "is_async": false}, "has_body": true}}},
                "6": {"name": null, "visibility": "default", "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": null, "for": {"resolved_path": {"path": "Thing", "id": 3, "args": null}},
                          "items": [11], "generics": {"params": [], "where_predicates": []},
                          "is_synthetic": false, "is_negative": false, "blanket_impl": null, "is_unsafe": false}}},
                "11": {"name": "len", "visibility": "public", "attrs": [], "deprecation": null,
                       "inner": {"function": {"sig": {"inputs": [["self", {"borrowed_ref": {"lifetime": null, "is_mutable": false, "type": {"generic": "Self"}}}]],
                           "output": {"primitive": "usize"}},
                           "generics": {"params": [], "where_predicates": []},
                           "header": {"is_const": false, "is_unsafe": false, "is_async": false}, "has_body": true}}},
                "7": {"name": null, "visibility": "default", "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": {"path": "Clone", "id": 92, "args": null},
                          "for": {"resolved_path": {"path": "Thing", "id": 3, "args": null}},
                          "items": [], "generics": {"params": [], "where_predicates": []},
                          "is_synthetic": false, "is_negative": false, "blanket_impl": null, "is_unsafe": false}}},
                "9": {"name": null, "visibility": "default", "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": {"path": "Send", "id": 93, "args": null},
                          "for": {"resolved_path": {"path": "Thing", "id": 3, "args": null}},
                          "items": [], "generics": {"params": [], "where_predicates": []},
                          "is_synthetic": true, "is_negative": true, "blanket_impl": null, "is_unsafe": false}}},
                "12": {"name": null, "visibility": "default", "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": {"path": "StructuralPartialEq", "id": 94, "args": null},
                          "for": {"resolved_path": {"path": "Thing", "id": 3, "args": null}},
                          "items": [], "generics": {"params": [], "where_predicates": []},
                          "is_synthetic": false, "is_negative": false, "blanket_impl": null, "is_unsafe": false}}},
                "13": {"name": null, "visibility": "default", "attrs": [], "deprecation": null,
                      "inner": {"impl": {"trait": {"path": "Freeze", "id": 95, "args": null},
                          "for": {"resolved_path": {"path": "Thing", "id": 3, "args": null}},
                          "items": [], "generics": {"params": [], "where_predicates": []},
                          "is_synthetic": true, "is_negative": false, "blanket_impl": null, "is_unsafe": false}}},
                "10": {"name": "hidden_helper", "visibility": "crate", "attrs": [], "deprecation": null,
                       "inner": {"function": {"sig": {"inputs": [], "output": null},
                           "generics": {"params": [], "where_predicates": []},
                           "header": {}, "has_body": true}}}
            }
        })
    }

    #[test]
    fn renders_items_under_their_shortest_path_with_signatures() {
        let text = render(&sample()).unwrap();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "pub mod demo",
                "#[non_exhaustive] pub struct demo::Thing { .. }",
                "pub field demo::Thing::items: imbl::vector::Vector<u8>",
                "pub fn demo::Thing::len(&self) -> usize",
                "impl Clone for demo::Thing",
                "auto demo::Thing: !Send",
                "pub mod demo::inner",
                "pub use demo::inner::Thing = demo::Thing",
                "pub fn demo::make(n: usize) -> Option<demo::Thing>",
            ]
        );
        assert!(text.starts_with("# Public API of demo (rustdoc format 57)"));
    }

    #[test]
    fn rendering_is_deterministic() {
        assert_eq!(render(&sample()).unwrap(), render(&sample()).unwrap());
    }

    #[test]
    fn diff_lists_removed_then_added_lines() {
        assert_eq!(diff("a\nb\nc\n", "a\nc\nd\n"), "-b\n+d\n");
        assert_eq!(diff("a\n", "a\n"), "");
    }
}
