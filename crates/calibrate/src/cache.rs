//! This host's x86 model (issue 30): calibrated models cached by host fingerprint, so that
//! `--target x86` means the machine a command runs on.
//!
//! The cache is `$XDG_CACHE_HOME/linerate` (`~/.cache/linerate` when unset), one file per host,
//! `x86-<fingerprint key>.json`: a microcode update, another kernel or a changed JIT sysctl makes
//! another key, and so a fresh calibration, while the old host's file stays for when it comes
//! back. The first command needing the model calibrates ([`Options::first_use`]) and writes the
//! file atomically; concurrent commands wait on a lock file beside it instead of calibrating
//! side by side (which would disturb both). A cached file is trusted only if it is a valid model
//! recording exactly this host's fingerprint; otherwise it is calibrated again.

use std::fs::File;
use std::path::{Path, PathBuf};

use linerate_cost::fingerprint::Fingerprint;
use linerate_cost::Model;

use crate::{calibrate, CalibrateError, Calibration, Options, Progress};

/// Environment variable naming the cache's base directory (the XDG base directory spec).
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";

/// The directory of cached host models, if a base directory is known.
pub fn directory() -> Option<PathBuf> {
    let base = std::env::var_os(XDG_CACHE_HOME)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))?;
    Some(base.join("linerate"))
}

/// The cache file of the host with `fingerprint` in `dir`.
pub fn path_in(dir: &Path, fingerprint: &Fingerprint) -> PathBuf {
    dir.join(format!("x86-{}.json", fingerprint.key()))
}

/// Where this host's x86 model came from.
pub enum HostModel {
    /// Read from the cache.
    Cached { path: PathBuf, model: Model },
    /// Calibrated by this command and cached.
    Calibrated {
        path: PathBuf,
        model: Model,
        calibration: Box<Calibration>,
    },
    /// BPF is unavailable here, so nothing could be calibrated: why.
    Unavailable(String),
}

/// Why this host's model could not be had.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Neither `XDG_CACHE_HOME` nor `HOME` is set.
    #[error("no cache directory for this host's x86 model: set XDG_CACHE_HOME or HOME, or pass --model FILE")]
    NoDirectory,
    /// The cache directory or its lock cannot be used.
    #[error("cannot use the x86 model cache {path}: {message}")]
    Io { path: String, message: String },
    /// Calibrating failed.
    #[error("calibrating this host's x86 model: {0}")]
    Calibrate(#[from] CalibrateError),
}

/// The cached model of the host with `fingerprint` at `path`, if it is there, valid and this
/// The cache directory and, in it, the model file of the host with `fingerprint`.
pub fn host_file(fingerprint: &Fingerprint) -> Result<(PathBuf, PathBuf), CacheError> {
    let dir = directory().ok_or(CacheError::NoDirectory)?;
    let path = path_in(&dir, fingerprint);
    Ok((dir, path))
}

/// host's; `Err` says why a file that is there cannot be used.
pub fn read_cached(path: &Path, fingerprint: &Fingerprint) -> Option<Result<Model, String>> {
    if !path.exists() {
        return None;
    }
    Some(
        Model::read(path)
            .map_err(|e| e.to_string())
            .and_then(|model| {
                if model.file().device.fingerprint.as_ref() == Some(fingerprint) {
                    Ok(model)
                } else {
                    Err("it records another host's fingerprint".into())
                }
            }),
    )
}

/// The x86 model of this host, whose fingerprint is `fingerprint`, from the cache in `dir`,
/// calibrated with `opts` and cached on first use. `progress` sees the calibration's steps and
/// the notes (waiting for another process's calibration, replacing an unusable file).
pub fn host_model(
    dir: &Path,
    fingerprint: &Fingerprint,
    opts: &Options,
    progress: &mut dyn FnMut(&Progress),
) -> Result<HostModel, CacheError> {
    let path = path_in(dir, fingerprint);
    if let Some(Ok(model)) = read_cached(&path, fingerprint) {
        return Ok(HostModel::Cached { path, model });
    }
    if let Err(e) = linerate_kernel::check_access() {
        return Ok(HostModel::Unavailable(e.to_string()));
    }
    let io = |message: std::io::Error| CacheError::Io {
        path: dir.display().to_string(),
        message: message.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let lock = File::create(dir.join(format!(".x86-{}.lock", fingerprint.key()))).map_err(io)?;
    if lock.try_lock().is_err() {
        progress(&Progress::Note(
            "waiting for another linerate calibrating this host",
        ));
        lock.lock().map_err(io)?;
    }
    // Whoever held the lock may have cached the model meanwhile.
    match read_cached(&path, fingerprint) {
        Some(Ok(model)) => return Ok(HostModel::Cached { path, model }),
        Some(Err(why)) => progress(&Progress::Note(&format!(
            "replacing the cached model {}: {why}",
            path.display()
        ))),
        None => {}
    }
    let calibration = calibrate(opts, progress)?;
    let text = serde_json::to_string_pretty(&calibration.model)
        .expect("a model file always encodes as JSON")
        + "\n";
    linerate_io::write_atomically(&path, text.as_bytes()).map_err(|e| CacheError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let model = Model::new(calibration.model.clone(), &path.display().to_string())
        .map_err(CalibrateError::Model)?;
    Ok(HostModel::Calibrated {
        path,
        model,
        calibration: Box::new(calibration),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("linerate-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn each_host_has_its_own_file() {
        let host = Fingerprint {
            microcode: Some("0x1".into()),
            ..Fingerprint::default()
        };
        let other = Fingerprint {
            microcode: Some("0x2".into()),
            ..Fingerprint::default()
        };
        let dir = Path::new("/c");
        assert_ne!(path_in(dir, &host), path_in(dir, &other));
        assert!(path_in(dir, &host).to_string_lossy().starts_with("/c/x86-"));
    }

    #[test]
    fn a_file_of_another_host_or_no_model_is_not_used() {
        let dir = scratch("read");
        let host = crate::fingerprint::current();
        let path = path_in(&dir, &host);
        assert!(read_cached(&path, &host).is_none());

        std::fs::write(&path, "{").unwrap();
        assert!(read_cached(&path, &host).unwrap().is_err());

        let mut file = Model::builtin_file("x86").unwrap();
        file.device.fingerprint = Some(Fingerprint {
            microcode: Some("another".into()),
            ..host.clone()
        });
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        let why = read_cached(&path, &host).unwrap().unwrap_err();
        assert!(why.contains("another host"), "{why}");

        file.device.fingerprint = Some(host.clone());
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        assert!(read_cached(&path, &host).unwrap().is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
