//! No import circle inside a profile folder (`conformance/src/profiles/<p>/`) or a reference
//! design (`reference-impl/src/<design>/`): within each folder, its files and subfolders depend
//! on each other one way, so each can be read after what it uses (issue 25).
//!
//! Read from the sources as text, without a Rust parser: every path a file names starting with
//! `super::`, `self::` or `crate::` (in `use` lines, groups `{a, b::c}` included, and in code) is
//! resolved to the file that defines it; a name a folder's `mod.rs` imports from one of its
//! children (`pub use expiring::ExpiringStore;`) counts as that child. A folder's `mod.rs` is the
//! folder's face, not one of its parts: what it declares and imports is how a folder is put
//! together, so edges from or into it are not counted. Test modules (`#[cfg(test)] mod x {`) are
//! left out: a test reaching across is not a dependency of the code. An inline module other than
//! a test's is read as part of its file.
//!
//! The scoped profile and the scoped design had circles when this check came in; their reshaping
//! removed the last of them, and with them the list of known ones: any circle fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use tidemark_conformance::spec::repo_root;

/// One circle: the folder it is inside and its members, sorted.
type Circle = (String, Vec<String>);

/// The circles inside `folder` (a tree of `(path relative to the folder, text)` files), whose
/// module path from its crate's root is `module` (`["profiles", "rows"]`, or `["rows"]`).
fn circles(folder: &str, module: &[&str], files: &[(String, String)]) -> Vec<Circle> {
    // Each file's module path, relative to the folder.
    let modules: BTreeMap<Vec<String>, &str> = files
        .iter()
        .map(|(path, text)| (module_of(path), text.as_str()))
        .collect();
    // A mod.rs's imports from its children: (folder module, name) -> child module.
    let mut reexports: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    for (path, text) in files {
        if !(path.ends_with("/mod.rs") || path == "mod.rs") {
            continue;
        }
        let here = module_of(path);
        let code = code_of(text);
        for (name, target) in use_names(&code) {
            // `use child::X` or `use self::child::X` (possibly `pub`, possibly renamed).
            let mut target: Vec<String> = target;
            if target.first().map(String::as_str) == Some("self") {
                target.remove(0);
            }
            let Some(first) = target.first() else {
                continue;
            };
            let mut child = here.clone();
            child.push(first.clone());
            if modules.contains_key(&child) {
                reexports.insert((here.clone(), name), child);
            }
        }
    }
    let resolve = |path: &[String]| -> Option<Vec<String>> {
        // The longest prefix of `path` that is a file's module, then a re-export one level on.
        let mut best = None;
        for n in (0..=path.len()).rev() {
            if modules.contains_key(&path[..n]) {
                best = Some(n);
                break;
            }
        }
        let n = best?;
        let found = path[..n].to_vec();
        if let Some(next) = path.get(n) {
            if let Some(child) = reexports.get(&(found.clone(), next.clone())) {
                return Some(child.clone());
            }
        }
        Some(found)
    };
    // Edges between files (module paths relative to the folder).
    let mut edges: BTreeSet<(Vec<String>, Vec<String>)> = BTreeSet::new();
    for (path, text) in files {
        let from = module_of(path);
        for chain in paths_named(&code_of(text)) {
            let Some(absolute) = absolute(&chain, &from, module) else {
                continue;
            };
            if let Some(to) = resolve(&absolute) {
                if to != from {
                    edges.insert((from.clone(), to));
                }
            }
        }
    }
    // Every folder of the tree: its parts are its children; a part is a file or a subfolder.
    let folders: BTreeSet<Vec<String>> = files
        .iter()
        .filter(|(p, _)| p.ends_with("mod.rs"))
        .map(|(p, _)| module_of(p))
        .collect();
    let mut found = Vec::new();
    for f in &folders {
        let part_of = |m: &Vec<String>| -> Option<String> {
            (m.len() > f.len() && m[..f.len()] == f[..]).then(|| m[f.len()].clone())
        };
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in &edges {
            if let (Some(pa), Some(pb)) = (part_of(a), part_of(b)) {
                if pa != pb {
                    graph.entry(pa).or_default().insert(pb);
                }
            }
        }
        let name = if f.is_empty() {
            folder.to_string()
        } else {
            format!("{folder}/{}", f.join("/"))
        };
        for members in strongly_connected(&graph) {
            found.push((name.clone(), members));
        }
    }
    found.sort();
    found
}

/// `rows/explore/ops.rs` -> `[explore, ops]`; `explore/mod.rs` -> `[explore]`; `mod.rs` -> `[]`.
fn module_of(path: &str) -> Vec<String> {
    let trimmed = path.strip_suffix(".rs").unwrap_or(path);
    let mut parts: Vec<String> = trimmed.split('/').map(str::to_string).collect();
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    parts
}

/// A chain as written (`super`, `super`, `model`, `Model`) made relative to the folder, or
/// `None` where it leaves the folder.
fn absolute(chain: &[String], from: &[String], module: &[&str]) -> Option<Vec<String>> {
    let mut rest = chain;
    let mut at: Vec<String>;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            // `crate::profiles::rows::x` inside the folder `profiles/rows`.
            let spelled: Vec<&str> = rest[1..].iter().map(String::as_str).collect();
            if spelled.len() < module.len() || spelled[..module.len()] != module[..] {
                return None;
            }
            return Some(rest[1 + module.len()..].to_vec());
        }
        Some("self") => {
            at = from.to_vec();
            rest = &rest[1..];
        }
        Some("super") => {
            at = from.to_vec();
            // In `x.rs` (module `[.., x]`), `super` is the folder; in `f/mod.rs` (module
            // `[.., f]`), `super` is `f`'s parent: both pop one segment.
            while rest.first().map(String::as_str) == Some("super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The text without comments and without test modules.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            if let Some(next) = lines.peek() {
                let n = next.trim_start();
                if n.starts_with("mod ") && n.trim_end().ends_with('{') {
                    // Skip the block by its braces.
                    lines.next();
                    let mut depth = 1i32;
                    for l in lines.by_ref() {
                        depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                        if depth <= 0 {
                            break;
                        }
                    }
                    continue;
                }
            }
        }
        let code = match t.find("//") {
            Some(_) if t.starts_with("//") => "",
            _ => line,
        };
        // A trailing comment: cut at `//` outside a string (good enough: paths in strings are
        // not counted either way).
        let code = match code.find(" //") {
            Some(i) if !code[..i].contains('"') => &code[..i],
            _ => code,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every path starting with `crate::`, `self::` or `super::`, groups expanded.
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|s| bytes[i..].starts_with(s.as_bytes()));
        let boundary = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        if let (Some(_), true) = (starts, boundary) {
            let (trees, end) = path_tree(code, i);
            out.extend(trees);
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads a path (with groups) at `at`: every full path it names, and where it ended.
fn path_tree(code: &str, at: usize) -> (Vec<Vec<String>>, usize) {
    let bytes = code.as_bytes();
    let mut i = at;
    let mut prefix: Vec<String> = Vec::new();
    loop {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i > start {
            prefix.push(code[start..i].to_string());
        }
        let rest = &code[i..];
        let skipped = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with("::") {
            i += skipped + 2;
            let after = code[i..].trim_start();
            i += code[i..].len() - after.len();
            if after.starts_with('{') {
                // A group: each member a tree of its own under `prefix`.
                let mut out = Vec::new();
                i += 1;
                loop {
                    let after = code[i..].trim_start();
                    i += code[i..].len() - after.len();
                    if after.starts_with('}') {
                        i += 1;
                        break;
                    }
                    if after.is_empty() {
                        break;
                    }
                    let (subs, end) = path_tree(code, i);
                    for s in subs {
                        let mut p = prefix.clone();
                        p.extend(s.into_iter().filter(|x| x != "self"));
                        out.push(p);
                    }
                    // A member that reads nothing (stray punctuation) is stepped over.
                    i = if end <= i { i + 1 } else { end };
                    // Past `as name` and the comma.
                    let after = code[i..].trim_start();
                    i += code[i..].len() - after.len();
                    if let Some(r) = after.strip_prefix("as ") {
                        let name_len = r
                            .trim_start()
                            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .unwrap_or(r.len());
                        i += 3 + (r.len() - r.trim_start().len()) + name_len;
                    }
                    let after = code[i..].trim_start();
                    i += code[i..].len() - after.len();
                    if after.starts_with(',') {
                        i += 1;
                    }
                }
                return (out, i);
            }
            if after.starts_with('*') || after.starts_with('<') {
                return (vec![prefix], i + 1);
            }
            continue;
        }
        return (
            if prefix.is_empty() {
                vec![]
            } else {
                vec![prefix]
            },
            i,
        );
    }
}

/// In a `mod.rs`: each name its `use` lines bring in, with the path it came from
/// (`pub use expiring::ExpiringStore;` -> (`ExpiringStore`, `[expiring, ExpiringStore]`)).
fn use_names(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for stmt in code.split(';') {
        let s = stmt.trim();
        let body = ["pub use ", "pub(crate) use ", "pub(super) use ", "use "]
            .iter()
            .find_map(|p| {
                s.rfind(p)
                    .filter(|&i| i == 0 || s[..i].ends_with(char::is_whitespace))
                    .map(|i| &s[i + p.len()..])
            });
        let Some(body) = body else { continue };
        let (trees, _) = path_tree(body, 0);
        let renames: BTreeMap<&str, &str> = body
            .split([',', '{', '}'])
            .filter_map(|part| {
                let mut w = part.split_whitespace();
                let path = w.next()?;
                (w.next()? == "as").then_some(())?;
                Some((path.rsplit("::").next()?, w.next()?))
            })
            .collect();
        for t in trees {
            let Some(last) = t.last() else { continue };
            let name = renames
                .get(last.as_str())
                .copied()
                .unwrap_or(last)
                .to_string();
            out.push((name, t));
        }
    }
    out
}

/// The strongly connected parts of more than one member, each sorted (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(ws) = s.graph.get(v) {
            for w in ws {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut members = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                members.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if members.len() > 1 {
                members.sort();
                s.out.push(members);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = graph
        .iter()
        .flat_map(|(k, vs)| std::iter::once(k.as_str()).chain(vs.iter().map(String::as_str)))
        .collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// Every `.rs` file below `dir`, as (path relative to `dir`, text), sorted.
fn read_tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The circles of every profile and every design in the repository.
fn repository_circles() -> Vec<Circle> {
    let root = repo_root();
    let mut all = Vec::new();
    for (base, crate_path) in [
        ("conformance/src/profiles", vec!["profiles"]),
        ("reference-impl/src", vec![]),
    ] {
        let mut dirs: Vec<_> = std::fs::read_dir(root.join(base))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            let mut module: Vec<&str> = crate_path.clone();
            module.push(&name);
            let folder = format!("{base}/{name}");
            all.extend(circles(&folder, &module, &read_tree(&dir)));
        }
    }
    all.sort();
    all
}

#[test]
fn no_import_circle_inside_a_profile_or_a_design() {
    let found = repository_circles();
    let show = found
        .iter()
        .map(|(f, m)| format!("  {f}: {}", m.join(" <-> ")))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        found.is_empty(),
        "import circles inside a folder (each part should use the others one way):\n{show}"
    );
}

/// No hollow check: the reader finds a circle through a `use` group, one through a path in code
/// and one through a `mod.rs` re-export, and finds none where the dependencies go one way.
#[test]
fn the_circle_check_finds_circles_it_is_shown_and_none_where_there_are_none() {
    let tree = |files: &[(&str, &str)]| -> Vec<(String, String)> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    };
    let one_way = tree(&[
        ("mod.rs", "pub mod a;\npub mod b;\npub mod c;\npub use c::Gamma;\n"),
        ("a.rs", "use super::{b::Beta, Gamma};\n"),
        ("b.rs", "fn f() { crate::profiles::p::c::g(); }\n"),
        ("c.rs", "// use super::a::Alpha;\n#[cfg(test)]\nmod tests {\n    use super::super::a::Alpha;\n}\n"),
    ]);
    assert_eq!(circles("p", &["profiles", "p"], &one_way), vec![]);

    let group = tree(&[
        ("mod.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use super::{b::{self, Beta}};\n"),
        ("b.rs", "use super::a::Alpha;\n"),
    ]);
    assert_eq!(
        circles("p", &["profiles", "p"], &group),
        vec![("p".to_string(), vec!["a".to_string(), "b".to_string()])]
    );

    let in_code = tree(&[
        ("mod.rs", "mod a;\nmod sub;\n"),
        ("a.rs", "fn f() { let _ = super::sub::deep::D::new(); }\n"),
        ("sub/mod.rs", "mod deep;\n"),
        ("sub/deep.rs", "fn g() -> crate::p::a::A { todo!() }\n"),
    ]);
    assert_eq!(
        circles("p", &["p"], &in_code),
        vec![("p".to_string(), vec!["a".to_string(), "sub".to_string()])]
    );

    let reexport = tree(&[
        (
            "mod.rs",
            "pub mod x;\npub mod y;\npub use x::Ex as Renamed;\n",
        ),
        ("x.rs", "use super::y::Why;\n"),
        ("y.rs", "fn f(_: super::Renamed) {}\n"),
    ]);
    assert_eq!(
        circles("d", &["d"], &reexport),
        vec![("d".to_string(), vec!["x".to_string(), "y".to_string()])]
    );
}
