//! Talking to people: the live terminal view, the summary table, cyclictest's live lines, warnings.

pub mod cyclictest;
pub mod doctor;
pub mod explain;
pub mod live;
pub mod noise;
pub mod osnoise;
pub mod table;
pub mod timerlat;
pub mod warnings;

/// `text` wrapped to `width` columns, continuation lines indented by `indent`, with a final
/// line end.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let opts = textwrap::Options::new(width.max(40)).subsequent_indent(indent).break_words(false);
    let mut s = textwrap::fill(text, opts);
    s.push('\n');
    s
}
