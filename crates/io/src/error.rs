//! The error of every file-level reader and writer: one line naming the file and, inside it, the
//! place (line, column, entry, route, offset) and the cause.

use std::path::PathBuf;

use crate::fib::FibError;
use crate::maps::MapsError;
use crate::object::ObjectFormatError;
use crate::packets::PacketsError;
use crate::pcap::PcapError;

/// What kind of file a path was meant to be, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Object,
    Packets,
    Pcap,
    Maps,
    Fib,
}

impl FileKind {
    /// How messages introduce a file of this kind (`packets file `); objects are named by their
    /// path alone.
    fn prefix(self) -> &'static str {
        match self {
            FileKind::Object => "",
            FileKind::Packets => "packets file ",
            FileKind::Pcap => "pcap file ",
            FileKind::Maps => "maps file ",
            FileKind::Fib => "FIB file ",
        }
    }
}

/// Reading or writing a file failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read at all.
    #[error("cannot read {}{}", kind.prefix(), path.display())]
    Read {
        kind: FileKind,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file could not be written; nothing was left at `path`.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    /// An output path that names no file (`/`, `dir/..`).
    #[error("{}: not a file name", path.display())]
    NotAFileName { path: PathBuf },
    #[error("{}: {error}", path.display())]
    Object {
        path: PathBuf,
        error: ObjectFormatError,
    },
    #[error("packets file {} {error}", path.display())]
    Packets { path: PathBuf, error: PacketsError },
    #[error("pcap file {}: {error}", path.display())]
    Pcap { path: PathBuf, error: PcapError },
    #[error("maps file {}: {error}", path.display())]
    Maps { path: PathBuf, error: MapsError },
    #[error(
        "FIB file {}{}{error}",
        path.display(),
        if matches!(error, FibError::Json(_)) { ": " } else { " " }
    )]
    Fib { path: PathBuf, error: FibError },
}

/// Text that is not the JSON expected, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at line {line} column {column}: {cause}")]
pub struct JsonError {
    pub line: usize,
    pub column: usize,
    /// serde_json's message without its own " at line L column C".
    pub cause: String,
}

impl From<serde_json::Error> for JsonError {
    fn from(e: serde_json::Error) -> JsonError {
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        JsonError {
            line: e.line(),
            column: e.column(),
            cause: text.strip_suffix(&suffix).unwrap_or(&text).to_string(),
        }
    }
}

/// Reads a whole file, naming it as a file of `kind` on failure.
pub(crate) fn read(path: &std::path::Path, kind: FileKind) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Read {
        kind,
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a whole file as UTF-8 text, naming it as a file of `kind` on failure.
pub(crate) fn read_text(path: &std::path::Path, kind: FileKind) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        kind,
        path: path.to_path_buf(),
        source,
    })
}
