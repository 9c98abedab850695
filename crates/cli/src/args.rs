//! Arguments several commands share, each documented once.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use linerate_bpf::Object;
use linerate_cost::Model;

/// The object a command reads.
#[derive(Args)]
pub struct ObjectArgs {
    /// BPF object (.o) or `llvm-objdump -d` text.
    pub object: PathBuf,
    /// Target BTF of CO-RE relocations (raw BTF such as /sys/kernel/btf/vmlinux); default: the
    /// running kernel's.
    #[arg(long, value_name = "PATH")]
    pub btf: Option<PathBuf>,
}

impl ObjectArgs {
    /// Reads the object, its CO-RE relocations applied.
    pub fn load(&self) -> Result<Object> {
        crate::load_object(&self.object, self.btf.as_deref())
    }
}

/// The device model a command prices with.
#[derive(Args)]
pub struct ModelArgs {
    /// Device model shipped with linerate: x86 (this host class) or nfp (Netronome Agilio CX).
    #[arg(long, default_value = "x86")]
    pub target: String,
    /// A model file (e.g. written by `linerate calibrate`) instead of the shipped one.
    #[arg(long, conflicts_with = "target")]
    pub model: Option<PathBuf>,
}

impl ModelArgs {
    /// The model `--model` names, or the shipped one for `--target`.
    pub fn load(&self) -> Result<Model> {
        Ok(match &self.model {
            Some(path) => Model::read(path)?,
            None => Model::builtin(&self.target)?,
        })
    }
}
