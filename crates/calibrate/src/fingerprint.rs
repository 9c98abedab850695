//! This host's [`Fingerprint`], read from `/proc` and `/sys` (what the fields mean and why they
//! are the ones: `linerate_cost::fingerprint`).

use std::collections::BTreeMap;
use std::path::Path;

use linerate_cost::fingerprint::Fingerprint;

/// Where the BPF JIT sysctls live.
const JIT_SYSCTLS: &str = "/proc/sys/net/core";
/// Where the kernel reports its CPU vulnerability mitigations.
const VULNERABILITIES: &str = "/sys/devices/system/cpu/vulnerabilities";

/// This host's fingerprint; a field the host does not expose is `None` (or absent from its map).
pub fn current() -> Fingerprint {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let jit = files(Path::new(JIT_SYSCTLS), |name| name.starts_with("bpf_jit"));
    let mitigations = files(Path::new(VULNERABILITIES), |_| true);
    from_sources(&cpuinfo, kernel.as_deref(), jit, mitigations)
}

/// A fingerprint from the text of `/proc/cpuinfo` (CPU 0's block is read), the kernel release,
/// the JIT sysctls and the mitigations by name.
pub fn from_sources(
    cpuinfo: &str,
    kernel: Option<&str>,
    bpf_jit: BTreeMap<String, String>,
    mitigations: BTreeMap<String, String>,
) -> Fingerprint {
    let field = |name: &str| cpu0_field(cpuinfo, name);
    Fingerprint {
        cpu_vendor: field("vendor_id"),
        cpu_family: field("cpu family"),
        cpu_model: field("model"),
        cpu_stepping: field("stepping"),
        cpu_model_name: field("model name"),
        microcode: field("microcode"),
        kernel: kernel.map(|k| k.trim().to_string()),
        bpf_jit,
        mitigations,
    }
}

/// Field `name` of CPU 0's block of `/proc/cpuinfo` text `cpuinfo`, trimmed.
pub(crate) fn cpu0_field(cpuinfo: &str, name: &str) -> Option<String> {
    let cpu0 = cpuinfo.split("\n\n").next().unwrap_or_default();
    cpu0.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    })
}

/// The trimmed contents of the readable files of `dir` whose names `wanted` accepts, by name.
fn files(dir: &Path, wanted: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !wanted(&name) {
                return None;
            }
            let text = std::fs::read_to_string(entry.path()).ok()?;
            Some((name, text.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_zero_block_is_read() {
        let cpuinfo =
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\
                       model name\t: Intel Xeon\nstepping\t: 8\nmicrocode\t: 0x2b000603\n\n\
                       processor\t: 1\nvendor_id\t: Other\n";
        let f = from_sources(cpuinfo, Some("6.1.0\n"), BTreeMap::new(), BTreeMap::new());
        assert_eq!(f.cpu_vendor.as_deref(), Some("GenuineIntel"));
        assert_eq!(f.cpu_model.as_deref(), Some("143"));
        assert_eq!(f.cpu_model_name.as_deref(), Some("Intel Xeon"));
        assert_eq!(f.cpu_stepping.as_deref(), Some("8"));
        assert_eq!(f.microcode.as_deref(), Some("0x2b000603"));
        assert_eq!(f.kernel.as_deref(), Some("6.1.0"));
    }

    #[test]
    fn this_host_is_read() {
        let f = current();
        assert!(f.kernel.is_some(), "{f:?}");
        assert!(f.cpu_vendor.is_some(), "{f:?}");
    }
}
