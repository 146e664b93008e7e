//! The README and the user guide (`docs/guide/`) cannot rot: every rtlab command line they show
//! parses, and every ```console block runs with its output checked.
//!
//! A ```console block is a sequence of `$ COMMAND` lines, each followed by the output it prints
//! (stdout and stderr together). The output must match line by line, where `[..]` in an expected
//! line matches any text and a line `...` any number of lines. A ```console,shape block shows a
//! real measurement: its figures differ at every run, so numbers are compared as numbers-at-all
//! (each run of digits, with its decimal point, is one number) and runs of spaces as one, and the
//! machine's warnings are left out. The commands run in a fresh directory per page where
//! `tests/` is the repository's.

use std::path::{Path, PathBuf};

mod common;

/// A fenced block: its info string, its first line's number and its lines.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, l) in text.lines().enumerate() {
        match (&mut open, l.strip_prefix("```")) {
            (None, Some(info)) => open = Some(Block { info: info.trim().to_string(), line: i + 2, lines: Vec::new() }),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(b), None) => b.lines.push(l.to_string()),
            (None, None) => {}
        }
    }
    out
}

fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    v.sort();
    v.insert(0, root.join("README.md"));
    v
}

/// The rtlab command lines of a shell line: `sudo` dropped, split at `&&`, `|`, `;`, and
/// anything from a redirection on left out.
fn rtlab_commands(line: &str) -> Vec<Vec<String>> {
    let line = line.split(" #").next().unwrap_or(line);
    // A command substitution (`$(pidof app)`) stands for one word.
    let line = regex::Regex::new(r"\$\([^)]*\)").unwrap().replace_all(line, "4711");
    let Some(words) = shlex::split(&line) else { return Vec::new() };
    let mut out = Vec::new();
    let mut cur: Vec<String> = Vec::new();
    let mut redirected = false;
    for w in words.into_iter().chain(std::iter::once("&&".to_string())) {
        if ["&&", "|", ";", "||", "&"].contains(&w.as_str()) {
            let mut c = std::mem::take(&mut cur);
            if c.first().is_some_and(|w| w == "sudo") {
                c.remove(0);
            }
            if c.first().is_some_and(|w| w == "rtlab" || w.ends_with("/rtlab")) {
                c[0] = "rtlab".into();
                out.push(c);
            }
            redirected = false;
        } else if w.starts_with('>') || w.starts_with("2>") || w.starts_with('<') {
            redirected = true;
        } else if !redirected {
            cur.push(w);
        }
    }
    out
}

#[test]
fn every_rtlab_command_line_in_the_readme_and_the_guide_parses() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for b in blocks(&text) {
            // Console blocks run (the other test): an error they show on purpose is checked there.
            let shell = b.info.is_empty() || b.info.starts_with("sh") || b.info.starts_with("text");
            if !shell {
                continue;
            }
            for (k, l) in b.lines.iter().enumerate() {
                let l = l.trim();
                // In a text block only the `$ ` lines are commands (the rest is output).
                let l = match (b.info.starts_with("text"), l.strip_prefix("$ ")) {
                    (_, Some(cmd)) => cmd,
                    (true, None) => "",
                    (false, None) => l,
                };
                for args in rtlab_commands(l) {
                    checked += 1;
                    if let Err(e) = rtlab::cli::dispatch::Parsed::from_args(&args) {
                        bad.push(format!("{}:{}: {l}\n    {e}", page.display(), b.line + k));
                    }
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} command lines found: is the guide there?");
    assert!(bad.is_empty(), "command lines that do not parse:\n{}", bad.join("\n"));
}

/// `line` matches `want` (`[..]` matches any text).
fn line_matches(want: &str, line: &str) -> bool {
    let parts: Vec<&str> = want.split("[..]").collect();
    if parts.len() == 1 {
        return want == line;
    }
    let mut rest = line;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(p) else { return false };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            let Some(at) = rest.find(p) else { return false };
            rest = &rest[at + p.len()..];
        }
    }
    true
}

/// `got` matches `want` line by line (`...` matches any number of lines).
fn matches(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w == "..." => (0..=got.len()).any(|i| matches(rest, &got[i..])),
        Some((w, rest)) => got.split_first().is_some_and(|(g, more)| line_matches(w, g) && matches(rest, more)),
    }
}

/// A line with every number replaced by `#` and runs of spaces collapsed.
fn shape(line: &str) -> String {
    let re = regex::Regex::new(r"-?[0-9]+(\.[0-9]+)?").unwrap();
    let l = re.replace_all(line, "#");
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_console_block_of_the_readme_and_the_guide_prints_what_it_shows() {
    assert!(common::is_root(), "the guide's examples measure for real: run the tests as root");
    let bin = common::rtlab_path();
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut ran = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(root.join("tests"), dir.path().join("tests")).unwrap();
        for b in blocks(&text).into_iter().filter(|b| b.info.starts_with("console")) {
            let shaped = b.info.contains("shape");
            let mut steps: Vec<(usize, String, Vec<String>)> = Vec::new();
            for (k, l) in b.lines.iter().enumerate() {
                match l.strip_prefix("$ ") {
                    Some(cmd) => steps.push((b.line + k, cmd.trim_start_matches("sudo ").to_string(), Vec::new())),
                    None => steps.last_mut().expect("a console block starts with `$ `").2.push(l.clone()),
                }
            }
            for (at, cmd, want) in steps {
                ran += 1;
                let out = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!("{cmd} 2>&1"))
                    .current_dir(dir.path())
                    .env("PATH", &path)
                    .env("COLUMNS", "100")
                    .output()
                    .unwrap();
                let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
                if shaped {
                    // A real machine may warn (a busy CPU, an IRQ the doctor saw): not the example's shape.
                    got.retain(|l| !l.starts_with("rtlab: warning: "));
                }
                let ok = if shaped {
                    let w: Vec<String> = want.iter().map(|l| if l == "..." { l.clone() } else { shape(l) }).collect();
                    matches(&w, &got.iter().map(|l| shape(l)).collect::<Vec<_>>())
                } else {
                    matches(&want, &got)
                };
                if !ok {
                    failures.push(format!(
                        "{}:{at}: $ {cmd}\n--- shown\n{}\n--- printed\n{}",
                        page.display(),
                        want.join("\n"),
                        got.join("\n")
                    ));
                }
            }
        }
    }
    assert!(ran >= 10, "only {ran} console commands: the guide shows its examples in ```console blocks");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_matcher_takes_wildcards_and_elisions_and_nothing_else() {
    let v = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
    assert!(matches(&v("a [..] c\n...\nz"), &v("a b c\nx\ny\nz")));
    assert!(!matches(&v("a [..] c"), &v("a b d")));
    assert!(!matches(&v("a"), &v("a\nb")), "extra lines are a difference");
    assert_eq!(shape("max 4476.1 µs on thread 1"), shape("max  12.0 µs on thread 0"));
    assert_ne!(shape("PASS: no sample"), shape("FAIL: no sample"));
    assert_eq!(
        rtlab_commands("sudo rtlab run -D 5s --json r.json && rtlab report r.json > /dev/null # then look"),
        vec![vec!["rtlab", "run", "-D", "5s", "--json", "r.json"], vec!["rtlab", "report", "r.json"]]
    );
}

#[test]
fn the_readme_is_a_front_door_that_links_every_guide_page_and_each_page_opens_with_its_question() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 300,
        "README.md has {} lines: move detail to docs/guide/",
        readme.lines().count()
    );
    // Its first block holds the two set-up commands: build and run the main job, the whole suite.
    let first = blocks(&readme).into_iter().next().expect("a first fenced block").lines.join("\n");
    assert!(
        first.contains(
            "RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build --release --locked --target x86_64-unknown-linux-gnu \
             && sudo ./target/x86_64-unknown-linux-gnu/release/rtlab run"
        ),
        "{first}"
    );
    assert!(first.contains("&& cargo test"), "{first}");
    for page in pages().iter().skip(1) {
        let name = page.file_name().unwrap().to_string_lossy();
        if name != "README.md" {
            assert!(readme.contains(&format!("(docs/guide/{name})")), "README.md links docs/guide/{name}");
        }
        let text = std::fs::read_to_string(page).unwrap();
        let question = text.lines().filter(|l| !l.trim().is_empty()).nth(1).unwrap_or_default();
        assert!(
            question.starts_with('*') && question.contains("?*"),
            "{name} opens with the question it answers, in italics: {question}"
        );
    }
}
