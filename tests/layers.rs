//! The crate's shape, checked on its source: layers point down (no module imports from a layer
//! above it, so there is no cycle), commands do not call each other, and `unsafe`/libc live
//! only in `rt/` (the trace crate, crates/trace, has none and knows nothing of rtlab).
//! docs/ARCHITECTURE.md draws the same order.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level modules from the top layer down; a module may import only modules below it.
const LAYERS: &[&str] = &[
    "cli", "commands", "output", "report", "plot", "import", "serve", "session", "export", "probes", "sweep", "result",
    "load", "measure", "trace", "sysinfo", "doctor", "error", "timefmt", "units", "rt",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`src/probes/beam.rs` → `probes`).
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// The modules `text` names as `crate::X`, outside comments.
fn imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let name: String = rest[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            out.insert(name);
            rest = &rest[i + 7..];
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut wrong = Vec::new();
    for f in &files {
        let m = module_of(&root, f);
        if m == "main" || m == "lib" {
            continue;
        }
        let me = rank(&m).unwrap_or_else(|| panic!("{m} ({}) is not in LAYERS: give it its place", f.display()));
        for target in imports(&std::fs::read_to_string(f).unwrap()) {
            match rank(&target) {
                Some(t) if t > me => {}
                Some(t) if t == me => {}
                Some(_) => wrong.push(format!("{} imports {target}, a layer above {m}", f.display())),
                None => wrong.push(format!("{} imports crate::{target}, which is not in LAYERS", f.display())),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn commands_do_not_call_each_other() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut files = Vec::new();
    sources(&dir, &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            assert!(
                !line.contains("crate::commands::") && !line.contains("super::"),
                "{} reaches another command: {line}",
                f.display()
            );
        }
    }
}

#[test]
fn only_rt_uses_unsafe_or_libc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    for f in files.iter().filter(|f| module_of(&root, f) != "rt") {
        let text = std::fs::read_to_string(f).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            assert!(!line.contains("libc::"), "{}: {line}", f.display());
            assert!(!line.contains("unsafe {") && !line.contains("unsafe fn"), "{}: {line}", f.display());
        }
    }
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    assert!(lib.contains("#![deny(unsafe_code)]") && lib.contains("#[allow(unsafe_code)]\npub mod rt;"));
}

#[test]
fn the_trace_crate_forbids_unsafe_and_depends_on_nothing_of_rtlab() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/trace");
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(lib.contains("#![forbid(unsafe_code)]"), "crates/trace/src/lib.rs must forbid unsafe code");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let deps = manifest.split("[dependencies]").nth(1).expect("the trace crate's manifest has dependencies");
    let names: Vec<&str> = deps.lines().filter_map(|l| l.split('=').next()).map(str::trim).collect();
    assert!(!names.iter().any(|n| n.starts_with("rtlab") || *n == "libc"), "the trace crate depends on {names:?}");
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            assert!(!line.contains("libc::") && !line.contains("rtlab::"), "{}: {line}", f.display());
        }
    }
}
