//! The report as Markdown (GitHub-flavoured tables); pictures become SVG files next to it.

use super::Block;
use crate::result::VerdictStatus;

/// Text from the data (host names, labels, messages) as inline Markdown: HTML is escaped (a
/// `<script>` in a label stays text), line breaks and control characters cannot start a forged
/// heading or move a terminal's cursor.
fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn escape(s: &str) -> String {
    inline(s).replace('|', "\\|")
}

/// A table with its columns padded to equal width (up to 40 characters), so it reads in a
/// terminal too.
pub fn table(header: &[String], rows: &[Vec<String>], numeric: &[bool]) -> String {
    let kv = header.iter().all(String::is_empty);
    let head: Vec<String> = header.iter().map(|h| if kv { String::new() } else { escape(h) }).collect();
    let body: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|c| escape(c)).collect()).collect();
    let width = |i: usize| {
        body.iter()
            .filter_map(|r| r.get(i))
            .chain(head.get(i))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(3, 40)
    };
    let widths: Vec<usize> = (0..head.len()).map(width).collect();
    let right = |i: usize| numeric.get(i).copied().unwrap_or(false);
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let w = widths.get(i).copied().unwrap_or(3);
                if right(i) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(&head);
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| if right(i) { format!("{}:", "-".repeat(w - 1)) } else { "-".repeat(*w) })
        .collect();
    out += &format!("| {} |\n", rule.join(" | "));
    for r in &body {
        out += &line(r);
    }
    out.push('\n');
    out
}

/// The Markdown text, and the pictures as `(file name, SVG bytes)`; file names start with
/// `stem` (the report's file stem) so several reports can share a directory.
pub fn render(blocks: &[Block], stem: &str) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let mut out = String::new();
    let mut files = Vec::new();
    write(blocks, stem, &mut out, &mut files);
    (crate::units::printable_text(&out).into_bytes(), files)
}

fn write(blocks: &[Block], stem: &str, out: &mut String, files: &mut Vec<(String, Vec<u8>)>) {
    for b in blocks {
        match b {
            Block::Headline(figures) => {
                let cells: Vec<String> =
                    figures.iter().map(|(k, v)| format!("**{}** {}", inline(k), inline(v))).collect();
                *out += &format!("{}\n\n", cells.join(" · "));
            }
            Block::Details(summary, inner) => {
                // GitHub folds <details>; Markdown inside it needs the blank lines.
                *out += &format!("<details><summary>{}</summary>\n\n", inline(summary));
                write(inner, stem, out, files);
                *out += "</details>\n\n";
            }
            Block::Heading(level, t) => {
                *out += &format!("{} {}\n\n", "#".repeat(*level as usize), inline(t));
            }
            Block::Text(t) => *out += &format!("{}\n\n", inline(t)),
            Block::Verdict(s, m) => {
                let mark = match s {
                    VerdictStatus::Pass => "✅",
                    VerdictStatus::Fail => "❌",
                    VerdictStatus::NotChecked => "➖",
                };
                *out += &format!("> {mark} **Verdict:** {}\n\n", inline(m));
            }
            Block::List(items) => {
                for i in items {
                    *out += &format!("- {}\n", inline(i));
                }
                out.push('\n');
            }
            Block::Table { header, rows, numeric } => *out += &table(header, rows, numeric),
            Block::Figure { name, caption, svg } => {
                let file = format!("{stem}-{name}.svg");
                *out += &format!("![{}]({file})\n\n", inline(caption).replace(['[', ']'], ""));
                files.push((file, svg.clone().into_bytes()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_line_breaks_and_control_characters_from_the_data_stay_text() {
        let blocks = vec![
            Block::Heading(2, "host <script>alert(1)</script>\n# forged".into()),
            Block::Text("a\u{1b}]0;title\u{7}b".into()),
            Block::Table { header: vec!["h".into()], rows: vec![vec!["x|y<b>".into()]], numeric: vec![false] },
        ];
        let (md, _) = render(&blocks, "r");
        let md = String::from_utf8(md).unwrap();
        assert!(md.contains("## host &lt;script&gt;alert(1)&lt;/script&gt; # forged"), "{md}");
        assert!(!md.contains('\u{1b}') && !md.contains('\u{7}'), "{md:?}");
        assert!(md.contains("x\\|y&lt;b&gt;"), "{md}");
    }
}
