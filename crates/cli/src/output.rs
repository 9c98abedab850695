//! Small output helpers shared by the commands: writing to stdout, hex dumps and aligned tables.

use std::cell::RefCell;
use std::io::Write;

use anyhow::{Context, Result};

thread_local! {
    /// Where [`emit`] writes while [`capture`] runs on this thread.
    static CAPTURED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs a command and returns what it would have written to stdout (`linerate report` reads the
/// other commands' `--json` documents this way, so a page shows exactly what they print).
pub fn capture(command: impl FnOnce() -> Result<()>) -> Result<String> {
    CAPTURED.with(|c| *c.borrow_mut() = Some(String::new()));
    let result = command();
    let text = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    result.map(|()| text)
}

/// Writes a command's whole output to stdout at once. A reader that stops early
/// (`linerate inspect x.o | head`) ends the output quietly instead of a panic; any other write
/// failure (`> /dev/full`) is an error.
pub fn emit(text: &str) -> Result<()> {
    let captured = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(buffer) => {
            buffer.push_str(text);
            true
        }
        None => false,
    });
    if captured {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("cannot write to standard output"),
    }
}

/// A hex dump with 16 bytes per line and offsets, each line prefixed with `indent`.
pub fn hexdump(bytes: &[u8], indent: &str) -> String {
    let mut out = String::new();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&format!("{indent}{:04x}  {}\n", i * 16, hex.join(" ")));
    }
    out
}

/// A table with left-aligned columns separated by two spaces.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// A progress bar on stderr, drawn only when `enabled` (a terminal, not `--json`): `label`,
/// a bar, `done/total` (total is an estimate: the bar stops full) and the time so far.
pub struct ProgressBar {
    label: String,
    total: usize,
    enabled: bool,
    started: std::time::Instant,
}

impl ProgressBar {
    pub fn new(label: &str, total: usize, enabled: bool) -> ProgressBar {
        ProgressBar {
            label: label.to_string(),
            total: total.max(1),
            enabled,
            started: std::time::Instant::now(),
        }
    }

    /// Replaces the estimated total.
    pub fn set_total(&mut self, total: usize) {
        self.total = total.max(1);
    }

    pub fn set(&self, done: usize) {
        if !self.enabled {
            return;
        }
        const WIDTH: usize = 30;
        let filled = (done.min(self.total) * WIDTH) / self.total;
        let seconds = self.started.elapsed().as_secs();
        eprint!(
            "\r{} [{}{}] {done}/~{} {}m{:02}s ",
            self.label,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            self.total,
            seconds / 60,
            seconds % 60
        );
        let _ = std::io::stderr().flush();
    }

    /// Clears the bar's line.
    pub fn finish(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
        }
    }
}
