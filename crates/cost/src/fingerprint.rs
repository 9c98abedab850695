//! Host fingerprints: what an x86 model's prices depend on besides the program, recorded in the
//! model by `linerate calibrate` so that a model used on another machine is recognised as such
//! (issue 30).
//!
//! The fields are the ones found to move BPF prices on x86: the CPU (vendor, family, model,
//! stepping and name: another core runs the same JIT code at other speeds), its microcode and
//! the kernel's CPU vulnerability mitigations (both change what speculation barriers, return
//! thunks and buffer clears cost: `helper` calls and indirect jumps most), the kernel release
//! (the JIT's code and the helpers' implementations) and the BPF JIT sysctls (hardening blinds
//! constants and costs extra instructions; without the JIT the interpreter runs). Reading them
//! from a running system is `linerate_calibrate`'s; this module only defines, compares and names
//! them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a host's x86 prices depend on. Every field is as the host reports it (text), `None` when
/// it could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// `vendor_id` of CPU 0 in `/proc/cpuinfo`.
    pub cpu_vendor: Option<String>,
    /// `cpu family`.
    pub cpu_family: Option<String>,
    /// `model`.
    pub cpu_model: Option<String>,
    /// `stepping`.
    pub cpu_stepping: Option<String>,
    /// `model name`.
    pub cpu_model_name: Option<String>,
    /// `microcode`.
    pub microcode: Option<String>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// `/proc/sys/net/core/bpf_jit_*` by name (`bpf_jit_enable`, `bpf_jit_harden`, ...).
    #[serde(default)]
    pub bpf_jit: BTreeMap<String, String>,
    /// `/sys/devices/system/cpu/vulnerabilities/*` by name: the kernel's mitigation of each.
    #[serde(default)]
    pub mitigations: BTreeMap<String, String>,
}

/// One field that differs between two fingerprints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The field, as a user would look it up (`microcode`, `mitigation spectre_v2`, ...).
    pub field: String,
    /// Its value in the first fingerprint (the model's), `None` when absent.
    pub was: Option<String>,
    /// Its value in the second (this host's).
    pub now: Option<String>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        write!(
            f,
            "{} {} -> {}",
            self.field,
            shown(&self.was),
            shown(&self.now)
        )
    }
}

impl Fingerprint {
    /// The fields where `other` (this host) differs from `self` (a model's host), in a fixed
    /// order: the CPU's first, then microcode, kernel, JIT sysctls and mitigations.
    pub fn differences(&self, other: &Fingerprint) -> Vec<Difference> {
        let mut out = Vec::new();
        let scalar = [
            ("cpu vendor", &self.cpu_vendor, &other.cpu_vendor),
            ("cpu family", &self.cpu_family, &other.cpu_family),
            ("cpu model", &self.cpu_model, &other.cpu_model),
            ("cpu stepping", &self.cpu_stepping, &other.cpu_stepping),
            (
                "cpu model name",
                &self.cpu_model_name,
                &other.cpu_model_name,
            ),
            ("microcode", &self.microcode, &other.microcode),
            ("kernel", &self.kernel, &other.kernel),
        ];
        for (field, was, now) in scalar {
            if was != now {
                out.push(Difference {
                    field: field.into(),
                    was: was.clone(),
                    now: now.clone(),
                });
            }
        }
        for (prefix, was, now) in [
            ("sysctl", &self.bpf_jit, &other.bpf_jit),
            ("mitigation", &self.mitigations, &other.mitigations),
        ] {
            let keys: std::collections::BTreeSet<&String> = was.keys().chain(now.keys()).collect();
            for key in keys {
                if was.get(key) != now.get(key) {
                    out.push(Difference {
                        field: format!("{prefix} {key}"),
                        was: was.get(key).cloned(),
                        now: now.get(key).cloned(),
                    });
                }
            }
        }
        out
    }

    /// A short stable name of the fingerprint (16 hex digits of FNV-1a over its JSON form), for
    /// naming cached models: equal fingerprints have equal keys.
    pub fn key(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{hash:016x}")
    }

    /// One line naming the host: CPU name, family/model/stepping, microcode and kernel.
    pub fn summary(&self) -> String {
        let get = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        format!(
            "{} (family {} model {} stepping {}, microcode {}), Linux {}",
            get(&self.cpu_model_name),
            get(&self.cpu_family),
            get(&self.cpu_model),
            get(&self.cpu_stepping),
            get(&self.microcode),
            get(&self.kernel)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Fingerprint {
        Fingerprint {
            cpu_vendor: Some("AuthenticAMD".into()),
            cpu_family: Some("25".into()),
            cpu_model: Some("1".into()),
            cpu_stepping: Some("1".into()),
            cpu_model_name: Some("AMD EPYC".into()),
            microcode: Some("0xa0011d1".into()),
            kernel: Some("6.18.44".into()),
            bpf_jit: [("bpf_jit_harden".to_string(), "0".to_string())].into(),
            mitigations: [(
                "spectre_v2".to_string(),
                "Mitigation: Retpolines".to_string(),
            )]
            .into(),
        }
    }

    #[test]
    fn equal_hosts_have_no_differences_and_one_key() {
        assert!(host().differences(&host()).is_empty());
        assert_eq!(host().key(), host().key());
        assert_eq!(host().key().len(), 16);
    }

    #[test]
    fn differences_name_each_field_that_moved() {
        let mut other = host();
        other.microcode = Some("0xa0011d5".into());
        other.mitigations.insert(
            "retbleed".into(),
            "Mitigation: untrained return thunk".into(),
        );
        other.bpf_jit.clear();
        let found: Vec<String> = host()
            .differences(&other)
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(
            found,
            [
                "microcode 0xa0011d1 -> 0xa0011d5",
                "sysctl bpf_jit_harden 0 -> (none)",
                "mitigation retbleed (none) -> Mitigation: untrained return thunk",
            ]
        );
        assert_ne!(host().key(), other.key());
    }
}
