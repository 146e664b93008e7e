//! The report as one self-contained HTML page: inline CSS and SVG, no JavaScript, nothing
//! fetched (a Content-Security-Policy forbids it, so a browser would report any attempt).

use super::Block;
use crate::result::VerdictStatus;
use maud::{html, Markup, PreEscaped, DOCTYPE};

const CSS: &str = r#"
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; margin: 2rem auto; max-width: 78rem; padding: 0 1.5rem; color: #1d1d1f; line-height: 1.45; }
h1 { font-size: 1.8rem; border-bottom: 2px solid #1f77b4; padding-bottom: .3rem; }
h2 { font-size: 1.4rem; margin-top: 2.6rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; }
h3 { font-size: 1.1rem; margin-top: 1.6rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .86rem; }
th, td { border: 1px solid #d0d0d0; padding: .25rem .55rem; vertical-align: top; }
th { background: #f2f4f7; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv td:first-child { font-weight: 600; background: #fafafa; white-space: nowrap; }
tr:last-child td { }
.verdict { padding: .6rem .9rem; border-radius: .3rem; margin: .8rem 0; font-weight: 600; }
.pass { background: #e6f4ea; border-left: 6px solid #2ca02c; }
.fail { background: #fdecea; border-left: 6px solid #d62728; }
.not_checked { background: #f2f4f7; border-left: 6px solid #7f7f7f; font-weight: normal; }
figure { margin: 1rem 0 2rem; }
figure svg { width: 100%; height: auto; border: 1px solid #e5e5e5; }
figcaption { color: #555; font-size: .9rem; margin-top: .3rem; }
.scroll { overflow-x: auto; }
.headline { display: flex; flex-wrap: wrap; gap: .6rem; margin: .8rem 0; }
.headline div { border: 1px solid #d0d0d0; border-radius: .35rem; padding: .4rem .8rem; background: #fafbfc; }
.headline .v { display: block; font-size: 1.25rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.headline .k { display: block; font-size: .8rem; color: #555; }
tr.fail td { background: #fdecea; }
tr.fail td:first-child { color: #b71c1c; font-weight: 600; }
tr.warn td { background: #fff6e0; }
tr.warn td:first-child { color: #8a5a00; font-weight: 600; }
details { margin: .6rem 0; }
summary { cursor: pointer; font-weight: 600; color: #333; }
"#;

fn status_class(s: VerdictStatus) -> &'static str {
    match s {
        VerdictStatus::Pass => "pass",
        VerdictStatus::Fail => "fail",
        VerdictStatus::NotChecked => "not_checked",
    }
}

fn block(b: &Block) -> Markup {
    match b {
        Block::Heading(1, t) => html! { h1 { (t) } },
        Block::Heading(2, t) => html! { h2 { (t) } },
        Block::Heading(_, t) => html! { h3 { (t) } },
        Block::Text(t) => html! { p { (t) } },
        Block::Verdict(s, m) => html! { div class={"verdict " (status_class(*s))} { "Verdict: " (m) } },
        Block::Headline(figures) => html! {
            div class="headline" {
                @for (k, v) in figures { div { span class="v" { (v) } span class="k" { (k) } } }
            }
        },
        Block::Details(summary, inner) => html! {
            details { summary { (summary) } @for b in inner { (block(b)) } }
        },
        Block::List(items) => html! { ul { @for i in items { li { (i) } } } },
        Block::Table { header, rows, numeric } => {
            let kv = header.iter().all(String::is_empty);
            let num = |i: usize| if numeric.get(i).copied().unwrap_or(false) { "num" } else { "" };
            // The doctor's table colours its rows by status.
            let status = header.first().is_some_and(|h| h == "status");
            let row_class = |r: &Vec<String>| status.then(|| r.first().cloned().unwrap_or_default());
            html! {
                div class="scroll" {
                    table class=[kv.then_some("kv")] {
                        @if !kv {
                            thead { tr { @for (i, h) in header.iter().enumerate() { th class=(num(i)) { (h) } } } }
                        }
                        tbody {
                            @for r in rows {
                                tr class=[row_class(r)] { @for (i, c) in r.iter().enumerate() { td class=(num(i)) { (c) } } }
                            }
                        }
                    }
                }
            }
        }
        Block::Figure { name, caption, svg } => html! {
            figure id=(name) {
                (PreEscaped(svg))
                figcaption { (caption) }
            }
        },
    }
}

/// The page.
pub fn render(blocks: &[Block]) -> Vec<u8> {
    let title = blocks
        .iter()
        .find_map(|b| if let Block::Heading(1, t) = b { Some(t.as_str()) } else { None })
        .unwrap_or("rtlab report");
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content={"rtlab " (env!("CARGO_PKG_VERSION"))};
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body {
                @for b in blocks { (block(b)) }
            }
        }
    };
    // maud escapes markup; the text from outside (names, hosts, warnings) is made printable too.
    crate::units::printable_text(&page.into_string()).into_bytes()
}
