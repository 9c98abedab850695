//! Packets files: one packet in hex per line; blank lines and lines starting with `#` are
//! skipped.

use std::path::Path;

use crate::error::{read_text, Error, FileKind};
use crate::hex::{parse_hex, HexError};

/// A packets text that holds no packets or a line that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketsError {
    /// Line `line` (counted from 1) is not hex.
    #[error("line {line}: {error}")]
    Line { line: usize, error: HexError },
    #[error("holds no packets")]
    Empty,
}

/// The packets of a packets text, in order.
pub fn parse_packets(text: &str) -> Result<Vec<Vec<u8>>, PacketsError> {
    let mut packets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_text = line.trim();
        if line_text.is_empty() || line_text.starts_with('#') {
            continue;
        }
        let packet =
            parse_hex(line_text).map_err(|error| PacketsError::Line { line: i + 1, error })?;
        packets.push(packet);
    }
    if packets.is_empty() {
        return Err(PacketsError::Empty);
    }
    Ok(packets)
}

/// Reads a packets file.
pub fn read_packets_file(path: &Path) -> Result<Vec<Vec<u8>>, Error> {
    let text = read_text(path, FileKind::Packets)?;
    parse_packets(&text).map_err(|error| Error::Packets {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_comments_and_names_the_bad_line() {
        assert_eq!(
            parse_packets("# two\n\n0a0b\n  0c  \n").unwrap(),
            vec![vec![10, 11], vec![12]]
        );
        assert_eq!(
            parse_packets("0a\n\n0b0\n").unwrap_err().to_string(),
            "line 3: odd number of hex digits (3)"
        );
        assert_eq!(parse_packets("# none\n"), Err(PacketsError::Empty));
    }
}
