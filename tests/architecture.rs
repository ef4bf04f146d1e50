//! The layering that `src/lib.rs` and `docs/ARCHITECTURE.md` describe, held by reading the
//! source: every `crate::…` path of every file under `src/` is resolved to the file it names.
//!
//! - The pure layers (`yaml/`, `protocol/`) name no shell module and use no `std::fs`,
//!   `std::net`, `notify` or `tokio`.
//! - Every file names only its own layer or the layers below it.
//! - No two files import each other, directly or through others.
//!
//! Only the code before a file's `#[cfg(test)]` module counts, and comments are left out (a doc
//! link is not an import).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers from the bottom up; a file may name its own layer and those before it.
const LAYERS: [&str; 9] = [
    "yaml",
    "protocol",
    "fs",
    "operations",
    "daemon",
    "bench",
    "dashboard",
    "mcp",
    "commands",
];

/// The layers that must stay free of I/O.
const PURE: [&str; 2] = ["yaml", "protocol"];

/// What a pure file may not use.
const IMPURE_PATHS: [&str; 4] = ["std::fs", "std::net", "notify::", "tokio::"];

/// A source file: its module path (`protocol::chronicle`) and its code without comments or tests.
struct Source {
    module: Vec<String>,
    code: String,
}

/// Every `.rs` file below `dir`, in no particular order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}

fn sources(src: &Path) -> Vec<Source> {
    let mut out: Vec<Source> = rust_files(src)
        .into_iter()
        .map(|path| Source {
            module: module_of(src, &path),
            code: code_of(&std::fs::read_to_string(&path).unwrap()),
        })
        .collect();
    out.sort_by(|a, b| a.module.cmp(&b.module));
    out
}

/// `src/protocol/chronicle/mod.rs` → `[protocol, chronicle]`; `src/daemon/engine/mod.rs` →
/// `[daemon, engine]`; `src/lib.rs` and `src/main.rs` → `[]` and `[main]`.
fn module_of(src: &Path, path: &Path) -> Vec<String> {
    let rel: PathBuf = path.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code before the test module, with `//` comments removed (string contents are kept; a
/// `//` inside a string literal is rare enough in this code base to be cut harmlessly).
fn code_of(text: &str) -> String {
    without_comments(&text[..test_module_start(text)])
}

/// Where a file's unit-test module starts: the first `#[cfg(test)]` at the start of a line whose
/// item (past other attributes) is an inline `mod … {`. A `#[cfg(test)]` on any other item (a
/// test hook, a helper, a `mod x;`) leaves the code after it counted. The file's length if none.
fn test_module_start(text: &str) -> usize {
    let mut at = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_end() == "#[cfg(test)]" {
            let item = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| !l.is_empty() && !l.starts_with("#["));
            let words: Vec<&str> = item.unwrap_or("").split_whitespace().collect();
            let is_inline_mod = match words.as_slice() {
                ["mod", _, "{", ..] => true,
                [vis, "mod", _, "{", ..] => vis.starts_with("pub"),
                _ => false,
            };
            if is_inline_mod {
                return at;
            }
        }
        at += line.len();
    }
    text.len()
}

/// `text` with every `//` comment cut from its line.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path the code names from the crate root, as segments: `crate::fs::writer::Writer` →
/// `[fs, writer, Writer]`; a group `crate::protocol::{amendments::amendment, chronicle::scan}` gives one
/// path per member.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `polisd_crate::`, not ours
        }
        let (prefix, after) = take_path(rest);
        if let Some(group) = after
            .strip_prefix("::{")
            .or_else(|| after.strip_prefix('{'))
        {
            let end = matching_brace(group);
            for member in split_top_level(&group[..end]) {
                let (tail, _) = take_path(member.trim());
                let mut path = prefix.clone();
                path.extend(tail);
                out.push(path);
            }
        } else {
            out.push(prefix);
        }
    }
    out
}

fn take_path(s: &str) -> (Vec<String>, &str) {
    let mut segments = Vec::new();
    let mut rest = s;
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segments.push(rest[..len].to_string());
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(|c: char| c.is_alphanumeric() || c == '_') => rest = r,
            _ => break,
        }
    }
    (segments, rest)
}

fn matching_brace(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// The file a path names: the longest prefix of it that is a module of the crate.
fn resolve<'m>(path: &[String], modules: &'m BTreeSet<Vec<String>>) -> Option<&'m Vec<String>> {
    (1..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n].to_vec()))
}

fn layer_of(module: &[String]) -> Option<usize> {
    let top = module.first()?;
    LAYERS.iter().position(|l| l == top)
}

struct Graph {
    edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

/// Every path the code names relative to its own module, made absolute: `super::view::X` in
/// `dashboard::queue` → `[dashboard, view, X]`; `self::x` and a `use x::…` of a child module
/// `x` → `[…module, x]`. Groups give one path per member, as in [`crate_paths`].
fn relative_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let step = rest.chars().next().map_or(1, char::len_utf8);
        let word_start = code[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
        if !word_start {
            i += step;
            continue;
        }
        let (base, after) = if rest.starts_with("super::") || rest.starts_with("self::") {
            let mut after = rest.strip_prefix("self::").unwrap_or(rest);
            let mut depth = 0;
            while let Some(r) = after.strip_prefix("super::") {
                depth += 1;
                after = r;
            }
            let Some(keep) = module.len().checked_sub(depth) else {
                i += step;
                continue;
            };
            (module[..keep].to_vec(), after)
        } else if let Some(after) = rest.strip_prefix("use ") {
            let after = after.trim_start();
            if ["crate::", "super::", "self::"]
                .iter()
                .any(|p| after.starts_with(p))
            {
                i += "use ".len();
                continue;
            }
            // `use child::…`: the 2018 edition's paths relative to the module
            (module.to_vec(), after)
        } else {
            i += step;
            continue;
        };
        let (prefix, tail) = take_path(after);
        if let Some(group) = tail.strip_prefix("::{").or_else(|| tail.strip_prefix('{')) {
            let end = matching_brace(group);
            for member in split_top_level(&group[..end]) {
                let (seg, _) = take_path(member.trim());
                let mut path = base.clone();
                path.extend(prefix.iter().cloned());
                path.extend(seg);
                out.push(path);
            }
        } else if !prefix.is_empty() {
            let mut path = base;
            path.extend(prefix);
            out.push(path);
        }
        i = code.len() - tail.len().max(1).min(code.len() - i - 1);
    }
    out
}

fn graph(sources: &[Source]) -> Graph {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for s in sources {
        let targets = edges.entry(s.module.clone()).or_default();
        let relative = relative_paths(&s.code, &s.module);
        for path in crate_paths(&s.code).into_iter().chain(relative) {
            if let Some(target) = resolve(&path, &modules) {
                // A folder's `mod.rs` and the files under it are one room: a child may use what
                // its ancestors define (Rust lets it see their private items, and an `impl`
                // split over child files is the idiom). Every other pair counts, siblings
                // reached through `super::` included.
                if target != &s.module && !s.module.starts_with(target) {
                    targets.insert(target.clone());
                }
            }
        }
    }
    Graph { edges }
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "lib".to_string()
    } else {
        module.join("::")
    }
}

/// Violations of the layering: pure files that touch I/O or the shell, and files that name a
/// layer above their own.
fn layering_violations(sources: &[Source], graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for s in sources {
        let Some(own) = layer_of(&s.module) else {
            continue; // lib.rs and main.rs sit above every layer
        };
        if PURE.contains(&LAYERS[own]) {
            for impure in IMPURE_PATHS {
                if s.code.contains(impure) {
                    out.push(format!("{} is pure but uses `{impure}`", name(&s.module)));
                }
            }
        }
        for target in &graph.edges[&s.module] {
            if let Some(theirs) = layer_of(target) {
                if theirs > own {
                    out.push(format!(
                        "{} ({}) names {} ({}), a layer above it",
                        name(&s.module),
                        LAYERS[own],
                        name(target),
                        LAYERS[theirs]
                    ));
                }
            }
        }
    }
    out
}

/// Every loop of imports, as the files on it (Tarjan's strongly connected components).
fn import_loops(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        loops: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Vec<String>) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.graph.edges[v] {
                let Some((w, _)) = self.graph.edges.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(name(w));
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.loops.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        loops: Vec::new(),
    };
    for v in graph.edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.loops
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_layer_names_only_itself_and_the_layers_below() {
    let sources = sources(&src_dir());
    let graph = graph(&sources);
    let violations = layering_violations(&sources, &graph);
    assert!(
        violations.is_empty(),
        "the layering of src/lib.rs is broken:\n  {}",
        violations.join("\n  ")
    );
}

/// What a read-only front end may not name: the writer, and file-writing calls of std.
const WRITING: [&str; 6] = [
    "fs::writer",
    "Writer",
    "std::fs",
    "OpenOptions",
    "File::create",
    "operations::edit",
];

/// The dashboard only reads: any write belongs in `operations/` (none exists for it yet).
#[test]
fn the_dashboard_writes_nothing() {
    for s in sources(&src_dir()) {
        if s.module.first().map(String::as_str) != Some("dashboard") {
            continue;
        }
        for w in WRITING {
            assert!(
                !s.code.contains(w),
                "src/{}.rs names `{w}`: the dashboard is read-only; put a write in operations/",
                s.module.join("/")
            );
        }
    }
}

#[test]
fn no_two_files_import_each_other() {
    let graph = graph(&sources(&src_dir()));
    let loops = import_loops(&graph);
    assert!(
        loops.is_empty(),
        "files that import each other (directly or through others):\n  {}",
        loops
            .iter()
            .map(|l| l.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn every_file_of_src_is_in_a_layer() {
    for s in sources(&src_dir()) {
        let top = s.module.first().map(String::as_str);
        assert!(
            matches!(top, None | Some("main")) || layer_of(&s.module).is_some(),
            "src/{} is in no layer: put it in one of {LAYERS:?}",
            s.module.join("/")
        );
    }
}

// The checker itself, on made-up trees: a rule that cannot fail is no rule.

fn fake(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(module, code)| Source {
            module: module.split("::").map(str::to_string).collect(),
            code: code_of(code),
        })
        .collect()
}

#[test]
fn a_protocol_file_using_std_fs_is_refused() {
    let sources = fake(&[(
        "protocol::chronicle",
        "fn f() { std::fs::read(\"x\").unwrap(); }",
    )]);
    let v = layering_violations(&sources, &graph(&sources));
    assert_eq!(v, ["protocol::chronicle is pure but uses `std::fs`"]);
}

#[test]
fn a_protocol_file_naming_the_shell_is_refused() {
    let sources = fake(&[
        ("protocol::routing::stats", "use crate::fs::writer::Writer;"),
        ("fs::writer", "pub struct Writer;"),
    ]);
    let v = layering_violations(&sources, &graph(&sources));
    assert_eq!(
        v,
        ["protocol::routing::stats (protocol) names fs::writer (fs), a layer above it"]
    );
}

#[test]
fn a_loop_through_a_group_import_is_found() {
    let sources = fake(&[
        (
            "protocol::amendments::amendment",
            "use crate::protocol::{chronicle, clock};",
        ),
        (
            "protocol::chronicle",
            "fn f() { crate::protocol::amendments::amendment::x(); }",
        ),
        (
            "protocol::clock",
            "// crate::protocol::chronicle in a comment",
        ),
    ]);
    assert_eq!(
        import_loops(&graph(&sources)),
        [vec![
            "protocol::amendments::amendment".to_string(),
            "protocol::chronicle".to_string()
        ]]
    );
}

#[test]
fn a_loop_through_super_paths_is_found() {
    let sources = fake(&[
        ("dashboard::queue", "use super::view::Row;"),
        ("dashboard::view", "fn f() { super::queue::items(); }"),
        ("dashboard", "pub mod queue; pub mod view;"),
    ]);
    assert_eq!(
        import_loops(&graph(&sources)),
        [vec![
            "dashboard::queue".to_string(),
            "dashboard::view".to_string()
        ]]
    );
}

#[test]
fn a_loop_between_siblings_through_self_super_is_found() {
    let sources = fake(&[
        ("yaml::load", "use self::super::plain::read;"),
        (
            "yaml::plain",
            "use crate::yaml::value::Value; fn f() { crate::yaml::load::x(); }",
        ),
        ("yaml::value", ""),
        (
            "fs::writer",
            "mod syscall; use syscall::Target; pub struct Writer;",
        ),
        ("fs::writer::syscall", "use super::Writer;"),
    ]);
    // the writer and its own child are one room; the two siblings are a loop
    assert_eq!(
        import_loops(&graph(&sources)),
        [vec!["yaml::load".to_string(), "yaml::plain".to_string()]]
    );
}

#[test]
fn code_after_the_test_module_and_comments_do_not_count() {
    let sources = fake(&[(
        "protocol::citizens::card",
        "/// [`crate::fs::snapshot`]\nfn f() {}\n#[cfg(test)]\nmod tests { fn g() { std::fs::read(\"x\"); } }",
    )]);
    assert!(layering_violations(&sources, &graph(&sources)).is_empty());
}

/// The most lines of code a source file may hold: code before its `#[cfg(test)]` module, blank
/// lines and comments left out. A file past it is split by concept (a folder of its own).
const MAX_LINES_OF_CODE: usize = 1_200;

fn lines_of_code(code: &str) -> usize {
    code.lines().filter(|l| !l.trim().is_empty()).count()
}

#[test]
fn no_source_file_is_over_the_size_of_a_room() {
    let big: Vec<String> = sources(&src_dir())
        .iter()
        .map(|s| (lines_of_code(&s.code), name(&s.module)))
        .filter(|(n, _)| *n > MAX_LINES_OF_CODE)
        .map(|(n, m)| format!("{m}: {n} lines of code"))
        .collect();
    assert!(
        big.is_empty(),
        "split these by concept (at most {MAX_LINES_OF_CODE} lines of code each):\n  {}",
        big.join("\n  ")
    );
}

/// The most lines a source file may hold before its test module, comments and blank lines
/// included: they are read too. A little above [`MAX_LINES_OF_CODE`], so that a file of dense
/// code is caught by that and a file of long explanations by this.
const MAX_LINES_BEFORE_TESTS: usize = 1_250;

/// The lines of `text` before its test module.
fn lines_before_tests(text: &str) -> usize {
    text[..test_module_start(text)].lines().count()
}

/// Every file of `files` (path, text) over [`MAX_LINES_BEFORE_TESTS`], with its count and what
/// to do.
fn too_long(files: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = files
        .iter()
        .map(|(path, text)| (path, lines_before_tests(text)))
        .filter(|(_, n)| *n > MAX_LINES_BEFORE_TESTS)
        .map(|(path, n)| {
            format!(
                "{path}: {n} lines before its test module (limit {MAX_LINES_BEFORE_TESTS}): \
                 split it by concept into a folder of modules, re-exporting what the crate uses"
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn no_source_file_is_over_the_lines_a_reader_reads_in_one_go() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files: Vec<(String, String)> = rust_files(&src_dir())
        .into_iter()
        .map(|path| {
            let shown = path.strip_prefix(root).unwrap().display().to_string();
            (shown, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    let long = too_long(&files);
    assert!(
        long.is_empty(),
        "files too long to read:\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn a_long_file_is_named_with_its_count_and_its_test_module_does_not_count() {
    let hook = "fn f() {\n    #[cfg(test)]\n    hook();\n}\n";
    let tests = "#[cfg(test)]\nmod tests {\n".to_string() + &"// t\n".repeat(2_000) + "}\n";
    let long = format!("{hook}{}", "// why\n".repeat(MAX_LINES_BEFORE_TESTS - 3)) + &tests;
    let short = format!("{hook}{}", "// why\n".repeat(MAX_LINES_BEFORE_TESTS - 4)) + &tests;
    let files = [
        ("src/long.rs".to_string(), long),
        ("src/short.rs".to_string(), short),
    ];
    assert_eq!(
        too_long(&files),
        [format!(
            "src/long.rs: {} lines before its test module (limit {MAX_LINES_BEFORE_TESTS}): \
             split it by concept into a folder of modules, re-exporting what the crate uses",
            MAX_LINES_BEFORE_TESTS + 1
        )]
    );
}

/// The integration tests are held to the same size: a test file is read by the next maintainer
/// as much as the code it tests. They have no test module to leave out; comments still do not
/// count.
#[test]
fn no_integration_test_file_is_over_the_size_of_a_room() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut big: Vec<String> = rust_files(&tests)
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let n = lines_of_code(&without_comments(&text));
            let shown = path
                .strip_prefix(&tests)
                .unwrap_or(&path)
                .display()
                .to_string();
            (n > MAX_LINES_OF_CODE).then(|| format!("tests/{shown}: {n} lines of code"))
        })
        .collect();
    big.sort();
    assert!(
        big.is_empty(),
        "split these by concept into a folder of modules, one test binary \
         (tests/<name>/main.rs; at most {MAX_LINES_OF_CODE} lines of code each):\n  {}",
        big.join("\n  ")
    );
}

#[test]
fn a_file_of_long_code_is_over_the_size_and_its_tests_and_comments_do_not_count() {
    let long = "fn f() {}\n".repeat(MAX_LINES_OF_CODE + 1);
    assert!(lines_of_code(&code_of(&long)) > MAX_LINES_OF_CODE);
    let commented = format!(
        "{}\n{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "// why\n\n".repeat(MAX_LINES_OF_CODE),
        "fn f() {}\n".repeat(10),
        "fn g() {}\n".repeat(MAX_LINES_OF_CODE)
    );
    assert_eq!(lines_of_code(&code_of(&commented)), 10);
}

// The map: docs/ARCHITECTURE.md names only what exists, and names every folder and file of src/.
//
// The doc's conventions, as the checker reads them: a paragraph of the code map opens with its
// folder in bold (**`src/fs/`**, **`tests/`**), and a path in backticks inside it (`writer/`,
// `state/settled.rs`) or a bare module name (`layout`, `settled_pass`) is below that folder; a
// path outside such a paragraph is below `src/` unless it starts with `src/` or `tests/`. A module
// path (`protocol::finding::quoted`, `pages::PAGES`) names a module by its last segments and,
// after it, at most one item its file must mention. Spans that are none of these (types,
// commands, polis files like `_polis/`) are prose, not names.

/// One name in backticks, and the folder of the paragraph it is in.
#[derive(Debug)]
struct Mention {
    span: String,
    folder: Option<String>,
}

/// Every code span of the doc with its paragraph's folder; the folders of a fenced picture too.
fn mentions(doc: &str) -> Vec<Mention> {
    let mut out = Vec::new();
    let mut folder: Option<String> = None;
    let mut fenced = false;
    // a code span that began on an earlier line, and whether its opening followed `**`
    let mut open: Option<(String, bool)> = None;
    for line in doc.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            for word in line.split_whitespace().filter(|w| w.ends_with('/')) {
                out.push(Mention {
                    span: word.to_string(),
                    folder: None,
                });
            }
            continue;
        }
        if line.starts_with('#') {
            folder = None;
        }
        let mut rest = line;
        loop {
            match open.take() {
                None => match rest.find('`') {
                    Some(i) => {
                        open = Some((String::new(), rest[..i].ends_with("**")));
                        rest = &rest[i + 1..];
                    }
                    None => break,
                },
                Some((mut span, bold)) => match rest.find('`') {
                    Some(i) => {
                        if !span.is_empty() {
                            span.push(' ');
                        }
                        span.push_str(&rest[..i]);
                        rest = &rest[i + 1..];
                        let is_folder = (span.starts_with("src/") || span.starts_with("tests/"))
                            && span.ends_with('/');
                        if bold && is_folder {
                            folder = Some(span.clone());
                        }
                        out.push(Mention {
                            span,
                            folder: folder.clone(),
                        });
                    }
                    None => {
                        if !span.is_empty() {
                            span.push(' ');
                        }
                        span.push_str(rest);
                        open = Some((span, bold));
                        break;
                    }
                },
            }
        }
    }
    out
}

/// The tree the map describes: every folder (ending in `/`) and file below `src/` and `tests/`,
/// relative to the crate root, with the text of each `.rs` file of `src/`.
type Tree = BTreeMap<String, String>;

fn crate_tree(root: &Path) -> Tree {
    let mut out = Tree::new();
    let mut stack = vec![root.join("src"), root.join("tests")];
    while let Some(dir) = stack.pop() {
        let rel = dir
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        out.insert(format!("{rel}/"), String::new());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = if rel.starts_with("src/") && rel.ends_with(".rs") {
                    std::fs::read_to_string(&path).unwrap()
                } else {
                    String::new()
                };
                out.insert(rel, text);
            }
        }
    }
    out
}

/// What a mention names.
enum Named {
    /// Prose: a type, a command, a polis file.
    Prose,
    /// These paths of the tree (none: a bare word that is no module, also prose).
    Paths(Vec<String>),
    /// A name of the source that does not exist, and what is missing.
    Missing(String),
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_lower_ident(s: &str) -> bool {
    is_ident(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// The module path of a file of `src/`: `src/fs/writer/mod.rs` → `[fs, writer]`.
fn module_of_path(path: &str) -> Option<Vec<&str>> {
    let rel = path.strip_prefix("src/")?.strip_suffix(".rs")?;
    let mut parts: Vec<&str> = rel.split('/').collect();
    if matches!(parts.last(), Some(&("mod" | "lib"))) {
        parts.pop();
    }
    Some(parts)
}

/// `text` has `word` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn named(m: &Mention, tree: &Tree) -> Named {
    let span = m.span.as_str();
    let base = m.folder.as_deref().unwrap_or("src/");
    let path_like = !span.starts_with("_polis")
        && (span.contains('/') || span.ends_with(".rs"))
        && span
            .split('/')
            .all(|part| part.is_empty() || is_ident(&part.replace(".rs", "")));
    if path_like {
        if span.starts_with("src/") || span.starts_with("tests/") {
            return if tree.contains_key(span) {
                Named::Paths(vec![span.to_string()])
            } else {
                Named::Missing(format!("`{span}` does not exist"))
            };
        }
        // below the paragraph's folder first; a paragraph may also name another layer's path
        let below = |base: &str| -> Vec<String> {
            tree.keys()
                .filter(|p| {
                    p.starts_with(base)
                        && (p[base.len()..] == *span || p.ends_with(&format!("/{span}")))
                })
                .cloned()
                .collect()
        };
        let mut found = below(base);
        if found.is_empty() {
            found = below("src/");
        }
        return if found.is_empty() {
            Named::Missing(format!("nothing below {base} is `{span}`"))
        } else {
            Named::Paths(found)
        };
    }
    if span.contains("::") {
        let segments: Vec<&str> = span.split("::").collect();
        let modules: Vec<(&String, Vec<&str>)> = tree
            .keys()
            .filter_map(|p| module_of_path(p).map(|m| (p, m)))
            .collect();
        let is_module_name = modules.iter().any(|(_, m)| m.contains(&segments[0]));
        if !segments.iter().all(|s| is_ident(s)) || !is_lower_ident(segments[0]) || !is_module_name
        {
            return Named::Prose; // `std::fs`, `polisd::run`, `Engine::pass`
        }
        for k in (1..=segments.len()).rev() {
            let found: Vec<&String> = modules
                .iter()
                .filter(|(_, m)| m.ends_with(&segments[..k]))
                .map(|(p, _)| *p)
                .collect();
            if found.is_empty() {
                continue;
            }
            let mut found = found;
            if let Some(item) = segments.get(k) {
                let with_item: Vec<&String> = found
                    .iter()
                    .copied()
                    .filter(|p| has_word(&tree[*p], item))
                    .collect();
                if with_item.is_empty() {
                    return Named::Missing(format!(
                        "{} names no `{item}`",
                        found
                            .iter()
                            .map(|p| p.as_str())
                            .collect::<Vec<_>>()
                            .join(" or ")
                    ));
                }
                found = with_item;
            }
            let mut paths: Vec<String> = Vec::new();
            for p in found {
                paths.push(p.clone());
                // a module's folder: `fs/state.rs` has `fs/state/`, `fs/writer/mod.rs` is `fs/writer/`
                let folder = match p.strip_suffix("/mod.rs") {
                    Some(dir) => format!("{dir}/"),
                    None => format!("{}/", p.trim_end_matches(".rs")),
                };
                if tree.contains_key(&folder) {
                    paths.push(folder);
                }
            }
            return Named::Paths(paths);
        }
        return Named::Missing(format!("no module of src/ is `{}`", segments[0]));
    }
    if is_lower_ident(span) && base.starts_with("src/") && m.folder.is_some() {
        let (file, dir) = (format!("/{span}.rs"), format!("/{span}/"));
        return Named::Paths(
            tree.keys()
                .filter(|p| p.starts_with(base) && (p.ends_with(&file) || p.ends_with(&dir)))
                .cloned()
                .collect(),
        );
    }
    Named::Prose
}

/// `src/fs/state/sent.rs` → `src/fs/state/`; `src/fs/state/` → `src/fs/`.
fn parent_of(path: &str) -> String {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some((parent, _)) => format!("{parent}/"),
        None => String::new(),
    }
}

/// What is wrong with the map `doc` of `tree`, each with what to add or remove.
fn map_errors(doc: &str, tree: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    let mut mapped: BTreeSet<String> = BTreeSet::new();
    let mut paragraphs: BTreeSet<String> = BTreeSet::new();
    for m in mentions(doc) {
        if let Some(folder) = &m.folder {
            paragraphs.insert(folder.clone());
        }
        match named(&m, tree) {
            Named::Prose => {}
            Named::Paths(paths) => mapped.extend(paths),
            Named::Missing(why) => out.push(format!(
                "remove or correct `{}`{}: {why}",
                m.span,
                m.folder
                    .as_ref()
                    .map(|f| format!(" (in the paragraph on {f})"))
                    .unwrap_or_default()
            )),
        }
    }
    // A folder whose files the map lists (it names one of them, not only the folder) must list
    // them all; a folder it describes as a whole needs only its name.
    let listed: BTreeSet<String> = mapped
        .iter()
        .filter(|p| p.ends_with(".rs") && !p.ends_with("/mod.rs"))
        .map(|p| parent_of(p))
        .collect();
    for path in tree
        .keys()
        .filter(|p| p.starts_with("src/") && p.as_str() != "src/")
    {
        let is_dir = path.ends_with('/');
        let parent = parent_of(path);
        let wanted = is_dir
            || (path.ends_with(".rs")
                && !path.ends_with("/mod.rs")
                && path != "src/lib.rs"
                && listed.contains(&parent));
        if mapped.contains(path) || !wanted {
            continue;
        }
        let name = &path[parent.len()..];
        let paragraph = paragraphs
            .iter()
            .filter(|f| path.starts_with(f.as_str()))
            .max_by_key(|f| f.len());
        out.push(match paragraph {
            Some(f) => format!(
                "add `{}` to the paragraph on {f}, one line on what it is for",
                &path[f.len()..]
            ),
            None if is_dir => {
                format!("add a paragraph **`{path}`** to the code map, one line on what it is for")
            }
            None => format!("add `{path}` to the code map, one line on what it is for ({name})"),
        });
    }
    out
}

#[test]
fn the_architecture_map_names_what_exists_and_every_folder_and_file_of_src() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let errors = map_errors(&doc, &crate_tree(root));
    assert!(
        errors.is_empty(),
        "docs/ARCHITECTURE.md is not a true map of the source; in it:\n  {}",
        errors.join("\n  ")
    );
}

#[test]
fn a_map_naming_a_gone_file_and_missing_a_file_and_a_folder_is_refused() {
    let tree: Tree = [
        ("src/", ""),
        ("src/lib.rs", ""),
        ("src/a/", ""),
        ("src/a/mod.rs", "pub fn run() {}"),
        ("src/a/x.rs", ""),
        ("src/a/y.rs", ""),
        ("src/b/", ""),
        ("src/b/z.rs", ""),
    ]
    .into_iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    let doc = "## Code map\n\n**`src/a/`**: `x.rs` reads, `gone.rs` writes; `a::run`, \
               `a::stop`, `std::fs` and `_polis/` are prose or checked.\n";
    assert_eq!(
        map_errors(doc, &tree),
        [
            "remove or correct `gone.rs` (in the paragraph on src/a/): nothing below src/a/ is `gone.rs`",
            "remove or correct `a::stop` (in the paragraph on src/a/): src/a/mod.rs names no `stop`",
            "add `y.rs` to the paragraph on src/a/, one line on what it is for",
            "add a paragraph **`src/b/`** to the code map, one line on what it is for",
        ]
    );
}

#[test]
fn code_after_a_test_only_item_still_counts() {
    // a `#[cfg(test)]` on one item (a hook, a helper) is not the test module: what follows it is
    // still the file's code, held to the layering and the size
    let sources = fake(&[(
        "protocol::citizens::card",
        "fn f() {\n    #[cfg(test)]\n    hook();\n}\n#[cfg(test)]\npub use x::y;\nfn g() { std::fs::read(\"x\"); }\n#[cfg(test)]\nmod tests {\n    fn h() { std::net::x(); }\n}\n",
    )]);
    assert_eq!(
        layering_violations(&sources, &graph(&sources)),
        ["protocol::citizens::card is pure but uses `std::fs`"]
    );
}
