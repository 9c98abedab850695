//! Which x86 model a command prices with, and whether it describes the machine the command runs
//! on (issue 30).
//!
//! `--target x86` means this host: its model from the cache of calibrated models
//! (`linerate_calibrate::cache`), calibrated on first use with a progress bar, or, where this
//! process cannot use BPF, the shipped model. `--model FILE` prices with any file. A model records
//! the fingerprint of the host it was calibrated on; figures priced with a model of another host
//! (or of none recorded, as the shipped one) are said to be for another machine in every output:
//! a `warning:` line heading the text, `model_host` in `--json`, and the report's summary.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use linerate_calibrate::cache::{self, HostModel};
use linerate_calibrate::{Options, Progress};
use linerate_cost::fingerprint::Fingerprint;
use linerate_cost::Model;
use serde_json::{json, Value};

use crate::output::ProgressBar;

/// Where the model a command prices with came from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// `--model FILE`.
    File(PathBuf),
    /// This host's cached model.
    Cached(PathBuf),
    /// This host's model, calibrated by this command and cached.
    Calibrated { path: PathBuf, seconds: f64 },
    /// The model shipped with linerate: for device models, or for x86 when this host's model
    /// could not be had (why, and what to do).
    Shipped { uncalibrated: Option<String> },
}

/// The model a command prices with, and for an x86 model whether it is this host's.
pub struct DeviceModel {
    pub model: Model,
    /// `None` for models of other devices (NFP, hXDP).
    pub host: Option<HostCheck>,
}

/// This host's x86 model (`fingerprint` being this host's): cached, calibrated now (a progress bar on a terminal unless `quiet`),
/// or, without BPF or when calibrating fails, the shipped one (whose figures every output then
/// says are another machine's, and why).
pub fn this_host(quiet: bool, fingerprint: &Fingerprint) -> Result<(Model, Origin)> {
    let dir = cache::directory().ok_or(cache::CacheError::NoDirectory)?;
    let mut bar = ProgressBar::new(
        "calibrating this host's x86 model (first use)",
        1,
        !quiet && std::io::stderr().is_terminal(),
    );
    let mut progress = |p: &Progress| {
        if let Progress::Step { done, total, .. } = p {
            bar.set_total(*total);
            bar.set(*done);
        }
    };
    let resolved = cache::host_model(&dir, fingerprint, &Options::first_use(), &mut progress);
    bar.finish();
    let resolved = match resolved {
        Err(cache::CacheError::Calibrate(e)) => {
            let why = format!(
                "calibrating this host failed ({e}); `linerate calibrate` shows the details"
            );
            return Ok((
                Model::builtin("x86")?,
                Origin::Shipped {
                    uncalibrated: Some(why),
                },
            ));
        }
        other => other.map_err(|e| anyhow!("{e}"))?,
    };
    Ok(match resolved {
        HostModel::Cached { path, model } => (model, Origin::Cached(path)),
        HostModel::Calibrated {
            path,
            model,
            calibration,
        } => {
            let seconds = calibration.elapsed.as_secs_f64();
            if !quiet && std::io::stderr().is_terminal() {
                eprintln!(
                    "linerate: calibrated this host's x86 model in {seconds:.0} s; cached in {} \
                     (`linerate calibrate` makes a finer one)",
                    path.display()
                );
            }
            (model, Origin::Calibrated { path, seconds })
        }
        HostModel::Unavailable(why) => (
            Model::builtin("x86")?,
            Origin::Shipped {
                uncalibrated: Some(format!(
                    "this host's model cannot be calibrated without BPF ({why}); run as root to \
                     calibrate and cache it"
                )),
            },
        ),
    })
}

/// An x86 model checked against this host.
pub struct HostCheck {
    /// The fingerprint key of the model's host, if it records one.
    model_key: Option<String>,
    /// This host's fingerprint key.
    host_key: String,
    origin: Origin,
    /// The model's host as a line (CPU, microcode, kernel), if it records one.
    model_host: Option<String>,
    /// When the model was calibrated, seconds since the Unix epoch, if it records it.
    calibrated_unix: Option<u64>,
    /// Why the figures are not this host's; `None` when they are.
    warning: Option<String>,
}

impl HostCheck {
    /// `model`, from `origin`, checked against `host`; `None` for models of other devices (NFP,
    /// hXDP), whose figures are the device's wherever linerate runs.
    pub fn of(model: &Model, origin: Origin, host: &Fingerprint) -> Option<HostCheck> {
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
        let advice = match &origin {
            Origin::Shipped {
                uncalibrated: Some(why),
            } => why.clone(),
            _ => "drop --model to price with this host's model (calibrated on first use), or \
                  calibrate one with `linerate calibrate`"
                .to_string(),
        };
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
            origin,
            model_host: recorded.map(Fingerprint::summary),
            calibrated_unix: device.calibrated_unix,
            warning,
        })
    }

    /// The `model_host` member of a command's `--json` document.
    pub fn json(&self) -> Value {
        let (origin, file, calibrated_now) = match &self.origin {
            Origin::File(path) => ("file", Some(path.as_path()), None),
            Origin::Cached(path) => ("cache", Some(path.as_path()), None),
            Origin::Calibrated { path, seconds } => {
                ("calibrated", Some(path.as_path()), Some(*seconds))
            }
            Origin::Shipped { .. } => ("shipped", None, None),
        };
        let now = linerate_calibrate::unix_now();
        json!({
            "this_host": self.warning.is_none(),
            "model_fingerprint": self.model_key,
            "host_fingerprint": self.host_key,
            "model_host": self.model_host,
            "origin": origin,
            "model_file": file.map(|p: &Path| p.display().to_string()),
            "calibrated": self.calibrated_unix.map(linerate_calibrate::utc_date),
            "age_s": self.calibrated_unix.map(|t| now.saturating_sub(t)),
            "calibration_seconds": calibrated_now,
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

impl DeviceModel {
    /// Adds `model_host` to a command's `--json` document when the model is an x86 model.
    pub fn annotate_json(&self, document: &mut Value) {
        if let (Some(check), Some(members)) = (&self.host, document.as_object_mut()) {
            members.insert("model_host".into(), check.json());
        }
    }

    /// A command's text output headed by the warning the model needs on this host, if any.
    pub fn annotate_text(&self, text: String) -> String {
        match &self.host {
            Some(check) => check.text_line() + &text,
            None => text,
        }
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
        let check = HostCheck::of(
            &model_of(Some(host())),
            Origin::Cached("c.json".into()),
            &host(),
        )
        .unwrap();
        assert_eq!(check.text_line(), "");
        assert_eq!(check.json()["this_host"], true);
    }

    #[test]
    fn another_hosts_model_names_what_differs() {
        let mut other = host();
        other.microcode = Some("0x2".into());
        let check = HostCheck::of(
            &model_of(Some(other)),
            Origin::File("o.json".into()),
            &host(),
        )
        .unwrap();
        let line = check.text_line();
        assert!(line.starts_with("warning: the x86 figures are for another machine"));
        assert!(line.contains("microcode 0x2 -> 0x1"), "{line}");
        assert_eq!(check.json()["this_host"], false);
    }

    #[test]
    fn a_model_without_fingerprint_is_another_machines() {
        let check =
            HostCheck::of(&model_of(None), Origin::File("x86.json".into()), &host()).unwrap();
        assert!(check.text_line().contains("records no host fingerprint"));
        assert!(check.json()["model_fingerprint"].is_null());
    }

    #[test]
    fn without_bpf_the_shipped_model_says_why() {
        let origin = Origin::Shipped {
            uncalibrated: Some(
                "this host's model cannot be calibrated without BPF (BPF needs root); run as root"
                    .into(),
            ),
        };
        let check = HostCheck::of(&model_of(None), origin, &host()).unwrap();
        let line = check.text_line();
        assert!(
            line.contains("cannot be calibrated without BPF (BPF needs root)"),
            "{line}"
        );
        assert_eq!(check.json()["origin"], "shipped");
    }

    #[test]
    fn device_models_are_not_checked() {
        assert!(HostCheck::of(
            &Model::builtin("nfp").unwrap(),
            Origin::Shipped { uncalibrated: None },
            &host()
        )
        .is_none());
    }
}
