//! Writing output files atomically: readers of the path see the old file or the whole new one,
//! never a partial write.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Writes `bytes` to `path` through a temporary file in the same directory, synced, then renamed
/// over `path`. On failure the temporary file is removed and `path` is left as it was.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let failed = |error| Error::Write {
        path: path.to_path_buf(),
        error,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().ok_or_else(|| Error::NotAFileName {
        path: path.to_path_buf(),
    })?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        failed(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_or_leaves_it() {
        let dir = std::env::temp_dir().join(format!("linerate-io-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let err = write_atomically(&dir.join("missing/out.json"), b"x").unwrap_err();
        assert!(err.to_string().starts_with("cannot write "), "{err}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
