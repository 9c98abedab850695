//! Whether an x86 model describes the machine a command runs on (issue 30): a model records the
//! fingerprint of the host `linerate calibrate` measured it on, and figures priced with a model
//! of another host (or of none recorded, as the shipped one) are said to be for another machine
//! in every output: a `warning:` line heading the text, `model_host` in `--json`, and the
//! report's summary.

use linerate_cost::fingerprint::Fingerprint;
use linerate_cost::Model;
use serde_json::{json, Value};

/// An x86 model checked against this host.
pub struct HostCheck {
    /// The fingerprint key of the model's host, if it records one.
    model_key: Option<String>,
    /// This host's fingerprint key.
    host_key: String,
    /// Why the figures are not this host's; `None` when they are.
    warning: Option<String>,
}

impl HostCheck {
    /// `model` checked against `host`; `None` for models of other devices (NFP, hXDP), whose
    /// figures are the device's wherever linerate runs.
    pub fn of(model: &Model, host: &Fingerprint) -> Option<HostCheck> {
        if model.target() != "x86" {
            return None;
        }
        let device = &model.file().device;
        let recorded = device.fingerprint.as_ref();
        let calibrated_on = || {
            format!(
                "{}, Linux {}",
                device.cpu_model.as_deref().unwrap_or("an unnamed CPU"),
                device.kernel.as_deref().unwrap_or("(release unknown)")
            )
        };
        let advice = "calibrate this host with `linerate calibrate -o host.json` and pass \
                      `--model host.json`";
        let warning = match recorded {
            None => Some(format!(
                "the x86 figures are for another machine: the model records no host \
                 fingerprint (it was calibrated on {}); {advice}",
                calibrated_on()
            )),
            Some(fingerprint) => {
                let differences = fingerprint.differences(host);
                (!differences.is_empty()).then(|| {
                    let listed: Vec<String> = differences.iter().map(|d| d.to_string()).collect();
                    format!(
                        "the x86 figures are for another machine: the model was calibrated on \
                         {}; this host differs in {}; {advice}",
                        fingerprint.summary(),
                        listed.join("; ")
                    )
                })
            }
        };
        Some(HostCheck {
            model_key: recorded.map(Fingerprint::key),
            host_key: host.key(),
            warning,
        })
    }

    /// `model` checked against the host the command runs on.
    pub fn here(model: &Model) -> Option<HostCheck> {
        HostCheck::of(model, &linerate_calibrate::fingerprint::current())
    }

    /// The `model_host` member of a command's `--json` document.
    pub fn json(&self) -> Value {
        json!({
            "this_host": self.warning.is_none(),
            "model_fingerprint": self.model_key,
            "host_fingerprint": self.host_key,
            "warning": self.warning,
        })
    }

    /// The line heading a command's text output: empty for this host's model.
    pub fn text_line(&self) -> String {
        self.warning
            .as_ref()
            .map_or_else(String::new, |w| format!("warning: {w}\n"))
    }
}

/// Adds `model_host` to a command's `--json` document when `model` is an x86 model.
pub fn annotate_json(document: &mut Value, model: &Model) {
    if let (Some(check), Some(members)) = (HostCheck::here(model), document.as_object_mut()) {
        members.insert("model_host".into(), check.json());
    }
}

/// A command's text output headed by the warning `model` needs on this host, if any.
pub fn annotate_text(text: String, model: &Model) -> String {
    match HostCheck::here(model) {
        Some(check) => check.text_line() + &text,
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Fingerprint {
        Fingerprint {
            cpu_model_name: Some("AMD EPYC".into()),
            microcode: Some("0x1".into()),
            kernel: Some("6.18".into()),
            ..Fingerprint::default()
        }
    }

    fn model_of(fingerprint: Option<Fingerprint>) -> Model {
        let mut file = Model::builtin_file("x86").unwrap();
        file.device.fingerprint = fingerprint;
        Model::new(file, "test model").unwrap()
    }

    #[test]
    fn the_hosts_own_model_gets_no_warning() {
        let check = HostCheck::of(&model_of(Some(host())), &host()).unwrap();
        assert_eq!(check.text_line(), "");
        assert_eq!(check.json()["this_host"], true);
    }

    #[test]
    fn another_hosts_model_names_what_differs() {
        let mut other = host();
        other.microcode = Some("0x2".into());
        let check = HostCheck::of(&model_of(Some(other)), &host()).unwrap();
        let line = check.text_line();
        assert!(line.starts_with("warning: the x86 figures are for another machine"));
        assert!(line.contains("microcode 0x2 -> 0x1"), "{line}");
        assert_eq!(check.json()["this_host"], false);
    }

    #[test]
    fn a_model_without_fingerprint_is_another_machines() {
        let check = HostCheck::of(&model_of(None), &host()).unwrap();
        assert!(check.text_line().contains("records no host fingerprint"));
        assert!(check.json()["model_fingerprint"].is_null());
    }

    #[test]
    fn device_models_are_not_checked() {
        assert!(HostCheck::of(&Model::builtin("nfp").unwrap(), &host()).is_none());
    }
}
