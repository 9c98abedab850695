//! The running kernel's configuration, as `__kconfig` extern variables see it.
//!
//! A program declares `extern int LINUX_KERNEL_VERSION __kconfig;` or `extern bool CONFIG_X
//! __kconfig __weak;` and reads the values libbpf puts in the object's read-only `.kconfig` map.
//! [`KernelConfig`] holds what those values come from: the kernel release (`uname -r`, read from
//! `/proc/sys/kernel/osrelease`) and the `CONFIG_*` lines of `/proc/config.gz` or
//! `/boot/config-<release>`. Reading an object builds the `.kconfig` map's initial value from it
//! once ([`crate::object`]), so the interpreter, the analyses and the kernel loader all see the
//! same values. This module reads files only; it never talks to the kernel through bpf(2).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// What `__kconfig` externs read: the kernel release and its `CONFIG_*` settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelConfig {
    /// The kernel release, as `uname -r` prints it (`6.18.44-foo`).
    pub release: String,
    /// Each `CONFIG_NAME=value` line's value text, by name (`y`, `m`, `"text"`, `0x10`, `42`).
    /// Lines `# CONFIG_NAME is not set` are absent, as libbpf treats them.
    pub settings: HashMap<String, String>,
    /// Where `settings` came from, for error messages (`/proc/config.gz`), if anywhere.
    pub source: Option<String>,
}

impl KernelConfig {
    /// The configuration of the kernel this process runs on. Files that are missing or unreadable
    /// leave the release empty (version 0) or the settings empty (every `CONFIG_*` absent), as
    /// libbpf treats them.
    pub fn running() -> KernelConfig {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let boot = format!("/boot/config-{release}");
        for path in ["/proc/config.gz", boot.as_str()] {
            if let Some(text) = read_config_file(Path::new(path)) {
                return KernelConfig {
                    settings: parse_config(&text),
                    source: Some(path.to_string()),
                    release,
                };
            }
        }
        KernelConfig {
            release,
            ..KernelConfig::default()
        }
    }

    /// `LINUX_KERNEL_VERSION`: `KERNEL_VERSION(major, minor, patch)` of the release, the patch
    /// level capped at 255, as libbpf's `get_kernel_version` computes it (tools/lib/bpf/libbpf.c);
    /// 0 where the release does not start with three dot-separated numbers.
    pub fn kernel_version(&self) -> u32 {
        let mut parts = [0u32; 3];
        let mut rest = self.release.as_str();
        for (i, part) in parts.iter_mut().enumerate() {
            if i > 0 {
                let Some(r) = rest.strip_prefix('.') else {
                    return 0;
                };
                rest = r;
            }
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(n) = rest[..digits].parse::<u32>() else {
                return 0;
            };
            *part = n;
            rest = &rest[digits..];
        }
        let [major, minor, patch] = parts;
        (major.min(255) << 16) | (minor.min(255) << 8) | patch.min(255)
    }
}

/// The text of a kernel config file, gunzipped where its name ends in `.gz`.
fn read_config_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .ok()?;
        Some(text)
    } else {
        String::from_utf8(bytes).ok()
    }
}

/// The `CONFIG_NAME=value` lines of a kernel config text.
pub fn parse_config(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(r: &str) -> KernelConfig {
        KernelConfig {
            release: r.into(),
            ..KernelConfig::default()
        }
    }

    #[test]
    fn kernel_version_follows_libbpf() {
        assert_eq!(release("6.18.44-fc-v669").kernel_version(), 0x06122c);
        assert_eq!(release("5.15.300").kernel_version(), 0x050fff);
        assert_eq!(release("6.1").kernel_version(), 0);
        assert_eq!(release("").kernel_version(), 0);
    }

    #[test]
    fn config_lines_are_read_and_unset_ones_absent() {
        let s = parse_config(
            "# c\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\nCONFIG_D=0x10\n",
        );
        assert_eq!(s.len(), 3);
        assert_eq!(s["CONFIG_A"], "y");
        assert_eq!(s["CONFIG_C"], "\"x y\"");
        assert_eq!(s["CONFIG_D"], "0x10");
    }

    #[test]
    fn the_running_kernel_has_a_release() {
        let running = KernelConfig::running();
        let uname = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        assert_eq!(running.release, uname.trim());
    }
}
