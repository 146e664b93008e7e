//! The terminal's width, for output that wraps to it.

/// Columns of the terminal on stdout (or stderr), `COLUMNS` when set, `None` when neither is a
/// terminal.
pub fn columns() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|n| *n >= 20) {
        return Some(n);
    }
    terminal_size::terminal_size_of(std::io::stdout())
        .or_else(|| terminal_size::terminal_size_of(std::io::stderr()))
        .map(|(w, _)| w.0 as usize)
}
