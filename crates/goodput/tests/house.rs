//! The shape of the source tree, checked like any other promise (and the
//! README's front door, last): no import
//! cycle between the files of a crate, no non-test source file over 800
//! lines, no non-test function over 100 lines. A newcomer opens a file and
//! can hold it in their head; a circle of imports would mean there is no
//! order in which to read them.
//!
//! Source files are every `.rs` under a crate's `src/`, `examples/` and
//! `benches/`, except files named `tests.rs` and folders named `tests`;
//! inside them, `#[cfg(test)]` modules are left out of the function rule.
//! Imports are the `use crate::…`, `use super::…` and `use self::…` paths
//! (and the same paths written inline), resolved to the file that defines
//! the module they name; a module's own `mod` declarations are not imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 800;
const MAX_FN_LINES: usize = 100;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/goodput is two levels below the workspace")
        .to_path_buf()
}

fn crates() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    v.sort();
    v
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "tests" && name != "snapshots" {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(p);
        }
    }
}

/// Every non-test source file of the workspace.
fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for c in crates() {
        for sub in ["src", "examples", "benches"] {
            rust_files(&c.join(sub), &mut out);
        }
    }
    out.sort();
    out
}

/// The text with comments blanked and string and char literals emptied,
/// newlines kept, so that braces and `use` paths can be read by position.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let keep_newlines = |out: &mut String, s: &[u8]| {
        for &c in s {
            if c == b'\n' {
                out.push('\n');
            }
        }
    };
    while i < b.len() {
        let c = b[i];
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let start = i;
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            keep_newlines(&mut out, &b[start..i]);
        } else if (c == b'r' || (c == b'b' && b.get(i + 1) == Some(&b'r'))) && !prev_ident && {
            let j = if c == b'b' { i + 2 } else { i + 1 };
            let hashes = b[j..].iter().take_while(|&&h| h == b'#').count();
            b.get(j + hashes) == Some(&b'"') && (hashes > 0 || c == b'r' || c == b'b')
        } {
            let j = if c == b'b' { i + 2 } else { i + 1 };
            let hashes = b[j..].iter().take_while(|&&h| h == b'#').count();
            let body = j + hashes + 1;
            let mut end = body;
            loop {
                if end >= b.len() {
                    break;
                }
                if b[end] == b'"'
                    && b[end + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    end += 1 + hashes;
                    break;
                }
                end += 1;
            }
            out.push_str("\"\"");
            keep_newlines(&mut out, &b[i..end.min(b.len())]);
            i = end;
        } else if c == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
            keep_newlines(&mut out, &b[start..i.min(b.len())]);
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}', '"'), or a lifetime.
            let rest = &b[i + 1..];
            let len = if rest.first() == Some(&b'\\') {
                rest.iter().skip(1).position(|&x| x == b'\'').map(|p| p + 2)
            } else {
                let ch = std::str::from_utf8(&rest[..rest.len().min(4)])
                    .or_else(|e| std::str::from_utf8(&rest[..e.valid_up_to()]))
                    .ok()
                    .and_then(|s| s.chars().next());
                ch.and_then(|ch| {
                    let n = ch.len_utf8();
                    (rest.get(n) == Some(&b'\'')).then_some(n)
                })
            };
            match len {
                Some(n) => {
                    out.push_str("' '");
                    i += n + 2;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn line_of(code: &str, pos: usize) -> usize {
    code[..pos].bytes().filter(|&c| c == b'\n').count() + 1
}

/// The position of the brace closing the one at `open`.
fn closing(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len() - 1
}

/// Line ranges of `#[cfg(test)] mod … { … }` blocks.
fn test_modules(code: &str) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        from = at + 1;
        let rest = &code[at + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let skip = rest.len() - trimmed.len();
        let t = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| trimmed.strip_prefix(v))
            .unwrap_or(trimmed);
        if let Some(after_mod) = t.strip_prefix("mod ") {
            let name_len = after_mod
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after_mod.len());
            let after = after_mod[name_len..].trim_start();
            if after.starts_with('{') {
                let open = at
                    + "#[cfg(test)]".len()
                    + skip
                    + (trimmed.len() - t.len())
                    + 4
                    + name_len
                    + (after_mod[name_len..].len() - after.len());
                let close = closing(code.as_bytes(), open);
                v.push((line_of(code, at), line_of(code, close)));
            }
        }
    }
    v
}

/// (name, first line, length in lines) of every function outside test modules.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let tests = test_modules(code);
    let b = code.as_bytes();
    let mut v = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration without body).
        let Some(end) = code[at..].find(['{', ';']) else {
            continue;
        };
        if b[at + end] != b'{' {
            continue;
        }
        let open = at + end;
        let first = line_of(code, at);
        if tests.iter().any(|&(a, z)| a <= first && first <= z) {
            continue;
        }
        let last = line_of(code, closing(b, open));
        v.push((name, first, last - first + 1));
    }
    v
}

#[test]
fn no_source_file_is_over_800_lines() {
    let root = workspace();
    let mut over = Vec::new();
    for f in sources() {
        let n = std::fs::read_to_string(&f)
            .expect("readable")
            .lines()
            .count();
        if n > MAX_FILE_LINES {
            over.push(format!(
                "{} ({n} lines)",
                f.strip_prefix(&root).unwrap().display()
            ));
        }
    }
    assert!(
        over.is_empty(),
        "files over {MAX_FILE_LINES} lines (split them by meaning): {over:#?}"
    );
}

#[test]
fn no_function_is_over_100_lines() {
    let root = workspace();
    let mut all = Vec::new();
    for f in sources() {
        let code = code_only(&std::fs::read_to_string(&f).expect("readable"));
        for (name, line, len) in functions(&code) {
            all.push((
                len,
                format!("{}:{line} {name}", f.strip_prefix(&root).unwrap().display()),
            ));
        }
    }
    all.sort_by(|a, b| b.cmp(a));
    eprintln!("the ten longest functions:");
    for (len, at) in all.iter().take(10) {
        eprintln!("  {len:4} {at}");
    }
    let over: Vec<_> = all.iter().filter(|(n, _)| *n > MAX_FN_LINES).collect();
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them by meaning): {over:#?}"
    );
}

/// The file of `module` (a path of module names below the crate root).
fn module_file(src: &Path, root_file: &Path, module: &[String]) -> Option<PathBuf> {
    if module.is_empty() {
        return Some(root_file.to_path_buf());
    }
    let rel: PathBuf = module.iter().collect();
    let a = src.join(&rel).with_extension("rs");
    if a.is_file() {
        return Some(a);
    }
    let b = src.join(&rel).join("mod.rs");
    b.is_file().then_some(b)
}

/// The module path of `file` below `src` (`a/b.rs` and `a/b/mod.rs` → [a, b]).
fn module_of(src: &Path, root_file: &Path, file: &Path) -> Vec<String> {
    if file == root_file {
        return Vec::new();
    }
    let rel = file.strip_prefix(src).expect("below src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// The modules a file declares (`mod x;`, of any visibility): a bare
/// `x::…` path in it names the file of `x`, as `self::x::…` does.
fn child_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find_map(|v| l.strip_prefix(v))
                .unwrap_or(l);
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
            name.chars()
                .all(|c| c.is_alphanumeric() || c == '_')
                .then(|| name.to_string())
        })
        .collect()
}

/// The `crate::`/`super::`/`self::` paths a file names outside its test
/// modules, and the bare paths into the modules it declares (`pub use
/// plan::ShardOf`, `wire::LinkError`), each as a list of segments (braced
/// groups expanded one level; a bare path starts `self`).
fn import_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let tests = test_modules(code);
    let b = code.as_bytes();
    let mut starts: Vec<(String, Vec<String>)> = ["crate", "super", "self"]
        .iter()
        .map(|s| (format!("{s}::"), vec![s.to_string()]))
        .collect();
    for child in child_modules(code) {
        starts.push((format!("{child}::"), vec!["self".into(), child]));
    }
    for (start, first) in &starts {
        let start = start.as_str();
        let mut from = 0;
        while let Some(p) = code[from..].find(start) {
            let at = from + p;
            from = at + start.len();
            if at > 0
                && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_' || b[at - 1] == b':')
            {
                continue;
            }
            let line = line_of(code, at);
            if tests.iter().any(|&(a, z)| a <= line && line <= z) || in_reexport(code, at) {
                continue;
            }
            let mut segs = first.clone();
            let mut k = at + start.len();
            loop {
                if code[k..].starts_with('{') {
                    // `a::{b, c::d}`: each item's first segment.
                    let close = closing(b, k);
                    for item in code[k + 1..close].split(',') {
                        let first: String = item
                            .trim()
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        if !first.is_empty() {
                            let mut s = segs.clone();
                            s.push(first);
                            out.push(s);
                        }
                    }
                    break;
                }
                let seg: String = code[k..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if seg.is_empty() {
                    out.push(segs);
                    break;
                }
                k += seg.len();
                segs.push(seg);
                if code[k..].starts_with("::") {
                    k += 2;
                } else {
                    out.push(segs);
                    break;
                }
            }
        }
    }
    out
}

/// Whether `at` lies in a `pub use …;` statement (of any visibility): a
/// re-export, which makes the file a door to the item's own file
/// ([`reexports`]), not a user of it.
fn in_reexport(code: &str, at: usize) -> bool {
    let start = code[..at].rfind(';').map_or(0, |i| i + 1);
    let start = code[..at].rfind('}').map_or(start, |i| start.max(i + 1));
    let stmt = code[start..at].trim_start();
    ["pub use ", "pub(crate) use ", "pub(super) use "]
        .iter()
        .any(|p| stmt.starts_with(p))
}

/// A file's re-exports: (the path's segments up to the item, the name it
/// is exported under), for `pub use a::b::{C, D as E};`, `pub use
/// child::F;` (a declared child module's path starts `self`).
fn reexports(code: &str) -> Vec<(Vec<String>, String)> {
    let children = child_modules(code);
    let mut out = Vec::new();
    let tests = test_modules(code);
    for vis in ["pub use ", "pub(crate) use ", "pub(super) use "] {
        let mut from = 0;
        while let Some(p) = code[from..].find(vis) {
            let at = from + p;
            from = at + vis.len();
            let line = line_of(code, at);
            if tests.iter().any(|&(a, z)| a <= line && line <= z) {
                continue;
            }
            let Some(end) = code[from..].find(';') else {
                break;
            };
            let stmt: String = code[from..from + end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let (head, items) = match stmt.find('{') {
                Some(b) => (
                    stmt[..b].trim_end_matches("::").to_string(),
                    stmt[b + 1..stmt.rfind('}').unwrap_or(stmt.len())].to_string(),
                ),
                None => match stmt.rfind("::") {
                    Some(c) => (stmt[..c].to_string(), stmt[c + 2..].to_string()),
                    None => continue,
                },
            };
            let mut base: Vec<String> = head.split("::").map(|x| x.trim().to_string()).collect();
            if children.contains(&base[0]) {
                base.insert(0, "self".into());
            }
            if !["crate", "self", "super"].contains(&base[0].as_str()) {
                continue;
            }
            for item in items.split(',') {
                let item = item.trim();
                let (path, name) = match item.split_once(" as ") {
                    Some((p, n)) => (p.trim(), n.trim()),
                    None => (item, item.rsplit("::").next().unwrap_or(item)),
                };
                if path.is_empty() || path.contains('*') || path == "self" {
                    continue;
                }
                let mut segs = base.clone();
                let inner: Vec<&str> = path.split("::").collect();
                segs.extend(inner[..inner.len() - 1].iter().map(|x| x.to_string()));
                out.push((segs, name.to_string()));
            }
        }
    }
    out
}

/// The module a path's leading `crate`/`self`/`super` segments name from
/// module `here`, and the rest of the path.
fn anchored(here: &[String], path: &[String]) -> (Vec<String>, Vec<String>) {
    let mut module: Vec<String> = match path[0].as_str() {
        "crate" => Vec::new(),
        // `self` in a.rs/mod.rs is the module itself; `super` its parent.
        "self" => here.to_vec(),
        _ => {
            let mut m = here.to_vec();
            m.pop();
            m
        }
    };
    let mut rest = &path[1..];
    while let Some(s) = rest.first() {
        if s == "super" {
            module.pop();
            rest = &rest[1..];
        } else {
            break;
        }
    }
    (module, rest.to_vec())
}

/// The file a path names: the deepest module file along it, or, where the
/// next segment is an item that module re-exports, the file it comes from
/// (through re-exports of re-exports).
fn resolve(
    src: &Path,
    root_file: &Path,
    doors: &BTreeMap<(Vec<String>, String), Vec<String>>,
    mut module: Vec<String>,
    rest: &[String],
) -> Option<PathBuf> {
    let mut best = module_file(src, root_file, &module);
    let mut next = None;
    for s in rest {
        module.push(s.clone());
        match module_file(src, root_file, &module) {
            Some(f) => best = Some(f),
            None => {
                module.pop();
                next = Some(s.clone());
                break;
            }
        }
    }
    for _ in 0..4 {
        let Some(item) = next.take() else { break };
        let Some(from) = doors.get(&(module.clone(), item.clone())) else {
            break;
        };
        module = from.clone();
        best = module_file(src, root_file, &module).or(best);
        next = Some(item);
    }
    best
}

/// Import edges between the files of one crate's `src/`: every path a
/// file names, resolved through re-exports to the file that defines the
/// item (`crate::shard::ShardOf`, re-exported by `shard/mod.rs` from
/// `shard/plan.rs`, is an edge to `shard/plan.rs`).
fn import_graph(krate: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let src = krate.join("src");
    let mut graph = BTreeMap::new();
    for root_name in ["lib.rs", "main.rs"] {
        let root_file = src.join(root_name);
        if !root_file.is_file() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        // With both lib.rs and main.rs, main.rs's own modules are the files
        // it declares; lib.rs owns the rest. Keep it simple: a crate here has one root.
        files.retain(|f| {
            !(f.file_name()
                .is_some_and(|n| n == "main.rs" || n == "lib.rs")
                && *f != root_file)
        });
        let codes: Vec<(PathBuf, Vec<String>, String)> = files
            .into_iter()
            .map(|f| {
                let code = code_only(&std::fs::read_to_string(&f).expect("readable"));
                let here = module_of(&src, &root_file, &f);
                (f, here, code)
            })
            .collect();
        let mut doors = BTreeMap::new();
        for (_, here, code) in &codes {
            for (path, name) in reexports(code) {
                let (mut module, rest) = anchored(here, &path);
                module.extend(rest);
                doors.insert((here.clone(), name), module);
            }
        }
        for (f, here, code) in &codes {
            let mut targets = BTreeSet::new();
            for path in import_paths(code) {
                let (module, rest) = anchored(here, &path);
                // A module declares its own submodules and may use them
                // (a room and its parts); a submodule's use of its parent,
                // and any use across rooms, is an edge.
                let Some(t) = resolve(&src, &root_file, &doors, module, &rest) else {
                    continue;
                };
                let inside = module_of(&src, &root_file, &t).starts_with(here);
                if t != *f && !inside {
                    targets.insert(t);
                }
            }
            graph.insert(f.clone(), targets);
        }
        break;
    }
    graph
}

/// Strongly connected components of more than one file (Tarjan).
fn cycles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct T<'a> {
        g: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a PathBuf) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                let Some((w, _)) = t.g.get_key_value(w) else {
                    continue;
                };
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_import_cycle_between_files() {
    let root = workspace();
    let mut found = Vec::new();
    for c in crates() {
        for comp in cycles(&import_graph(&c)) {
            let names: Vec<String> = comp
                .iter()
                .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
                .collect();
            found.push(names.join(" ↔ "));
        }
    }
    assert!(found.is_empty(), "import cycles: {found:#?}");
}

#[test]
fn the_checks_read_rust_as_rust() {
    let src = r##"
fn a() {
    let s = "}}}";
    let r = r#"{ " }"#;
    let c = '}';
    let l: &'static str = "x";
    // }
    /* { /* } */ */
}
#[cfg(test)]
mod tests {
    fn long() {
    }
}
"##;
    let code = code_only(src);
    let f = functions(&code);
    assert_eq!(f, vec![("a".to_string(), 2, 8)], "{code}");
    let paths = import_paths(
        "use crate::a::{b, c::d};\nuse super::x;\nlet y = crate::m::f();\n#[cfg(test)]\nmod tests {\n    use crate::t::u;\n}\n",
    );
    assert!(!paths.iter().any(|p| p[1] == "t"));
    assert!(paths.contains(&vec!["crate".into(), "a".into(), "b".into()]));
    assert!(paths.contains(&vec!["crate".into(), "a".into(), "c".into()]));
    assert!(paths.contains(&vec!["super".into(), "x".into()]));
    assert!(paths.contains(&vec!["crate".into(), "m".into(), "f".into()]));
    // A re-export is a door to the item's file, not an import of it; a
    // bare path into a declared child module is an import.
    let facade = "mod plan;\npub mod wire;\npub use plan::ShardOf;\npub use crate::x::{Y, z::W as V};\nfn f(e: wire::LinkError) { drop(e) }\n";
    let paths = import_paths(facade);
    assert_eq!(
        paths,
        vec![vec!["self".to_string(), "wire".into(), "LinkError".into()]]
    );
    let doors = reexports(facade);
    assert!(doors.contains(&(vec!["self".into(), "plan".into()], "ShardOf".into())));
    assert!(doors.contains(&(vec!["crate".into(), "x".into()], "Y".into())));
    assert!(doors.contains(&(vec!["crate".into(), "x".into(), "z".into()], "V".into())));
}

/// The README starts like a tool's front door: what it is, Install and the
/// two commands in its first 80 lines, and under 400 lines in all (the
/// long usage lives in docs/guide.md).
#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    assert!(lines.len() < 400, "README.md has {} lines", lines.len());
    for heading in ["## Install", "## The two commands"] {
        let at = lines.iter().position(|l| *l == heading);
        assert!(
            at.is_some_and(|i| i < 80),
            "{heading} not within the first 80 lines (at {at:?})"
        );
    }
    for command in [
        "cargo install --locked --path crates/goodput",
        "pip install .",
        "cargo test --workspace --locked",
    ] {
        assert!(readme.contains(command), "README lacks `{command}`");
    }
}

/// The metric registry (`metrics/registry.rs`) is the one list of the
/// metrics: no other bracketed list in the code names three or more of its
/// keys as strings, or four or more of its `Metric::` variants (a second
/// list is how adding a metric came to touch fourteen files). Lists inside
/// test modules are left alone.
#[test]
fn the_metric_registry_is_the_only_list_of_metrics() {
    let root = workspace();
    let registry_path = root.join("crates/goodput-core/src/measure/metrics/registry.rs");
    let registry = std::fs::read_to_string(&registry_path).unwrap();
    let keys: BTreeSet<String> = registry
        .match_indices("key: \"")
        .map(|(i, m)| {
            let rest = &registry[i + m.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect();
    assert!(keys.len() >= 10, "{keys:?}");
    let variants: BTreeSet<String> = registry
        .match_indices("Metric::")
        .map(|(i, m)| {
            registry[i + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .collect()
        })
        .filter(|v: &String| v.starts_with(|c: char| c.is_uppercase()))
        .collect();
    let mut lists = Vec::new();
    for file in sources() {
        if file == registry_path {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let tests = test_modules(&code_only(&text));
        let b = text.as_bytes();
        for (open, _) in text.match_indices('[') {
            let line = line_of(&text, open);
            if tests.iter().any(|&(a, z)| (a..=z).contains(&line)) {
                continue;
            }
            let mut depth = 0usize;
            let mut close = open;
            for (j, &c) in b.iter().enumerate().skip(open) {
                match c {
                    b'[' => depth += 1,
                    b']' => {
                        depth -= 1;
                        if depth == 0 {
                            close = j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &text[open + 1..close.max(open + 1)];
            let named_keys = keys
                .iter()
                .filter(|k| inner.contains(&format!("\"{k}\"")))
                .count();
            let named_variants = variants
                .iter()
                .filter(|v| {
                    inner.match_indices(&format!("Metric::{v}")).any(|(i, m)| {
                        !inner[i + m.len()..].starts_with(|c: char| c.is_alphanumeric())
                    })
                })
                .count();
            if named_keys >= 3 || named_variants >= 4 {
                let shown = file.strip_prefix(&root).unwrap_or(&file).display();
                lists.push(format!("{shown}:{line}"));
            }
        }
    }
    lists.dedup();
    assert!(
        lists.is_empty(),
        "lists of metrics beside the registry (give the registry a column and read it instead): {lists:?}"
    );
}

/// goodput-core has a front door: its root is the five wings, and each
/// wing's `mod.rs` lists what it offers with `pub use`; every module inside
/// a wing is `pub(crate)`, so nothing else is public (the whole surface is
/// what `cargo doc -p goodput-core` shows).
#[test]
fn goodput_core_is_five_wings_with_a_front_door() {
    let src = workspace().join("crates/goodput-core/src");
    let lib = code_only(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let public: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(str::to_string)
        .collect();
    let wings = ["load", "measure", "output", "plan", "request"];
    let mut expected: BTreeSet<String> = wings.iter().map(|w| w.to_string()).collect();
    expected.insert("fuzz".into()); // behind cfg(test) or the fuzz feature
    assert_eq!(public, expected, "goodput-core's root modules");
    for wing in wings {
        let text = std::fs::read_to_string(src.join(wing).join("mod.rs")).unwrap();
        let code = code_only(&text);
        let open: Vec<&str> = code
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("pub mod ") && l.ends_with(';'))
            .collect();
        assert!(
            open.is_empty(),
            "{wing}/mod.rs opens a whole module ({open:?}): make it pub(crate) and `pub use` what it offers"
        );
        assert!(code.contains("pub use "), "{wing}/mod.rs lists nothing");
    }
}
