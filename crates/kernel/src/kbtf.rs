//! The running kernel's BTF, for resolving kfunc calls when a program is loaded.
//!
//! In the program model a kfunc call names its callee by index into
//! [`linerate_bpf::Object::kfuncs`]; `BPF_PROG_LOAD` wants the callee's BTF type id in the
//! kernel's BTF instead (and, in `off`, the `fd_array` slot of the module BTF holding it, 0 for
//! vmlinux). [`resolve_kfuncs`] rewrites the call slots the way libbpf's `bpf_object__resolve_externs`
//! and `bpf_object__relocate_data` (tools/lib/bpf/libbpf.c) do: the id of the `FUNC` of that name
//! in `/sys/kernel/btf/vmlinux` (parsed with [`linerate_bpf::btf`], once per process); a `__weak`
//! kfunc the kernel lacks becomes libbpf's "poisoned" helper call, which the verifier accepts only
//! where it is unreachable; a non-weak one is a [`KernelError::MissingKfunc`] naming it.
//!
//! Kernel modules' BTF (`/sys/kernel/btf/<module>`, split BTF on top of vmlinux, passed through
//! `fd_array`) is not searched: a kfunc only a module defines is reported missing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use linerate_bpf::btf::{Btf, Kind};
use linerate_bpf::core_relo::running_kernel_btf;
use linerate_bpf::insn::pseudo;
use linerate_bpf::{Kfunc, Program};

use crate::error::KernelError;

/// Where the running kernel exposes its own BTF.
/// Opcode of `call`.
const CALL_OPCODE: u8 = 0x85;
/// libbpf's `POISON_CALL_KFUNC_BASE`: a weak kfunc the kernel lacks is called as helper
/// `POISON_CALL_KFUNC_BASE + index`, which no kernel has.
const POISON_CALL_KFUNC_BASE: i32 = 2_002_000_000;

/// The kernel functions of the running kernel's BTF: name to `FUNC` type id.
pub struct KernelFuncs {
    ids: HashMap<String, u32>,
}

impl KernelFuncs {
    /// The `FUNC` types of `btf`.
    pub fn of(btf: &Btf) -> KernelFuncs {
        let mut ids = HashMap::new();
        for (id, ty) in btf.types() {
            if let Kind::Func { .. } = ty.kind {
                if let Ok(name) = btf.name(ty) {
                    ids.entry(name.to_string()).or_insert(id);
                }
            }
        }
        KernelFuncs { ids }
    }

    /// The running kernel's functions, from its BTF as the object reader parsed it for CO-RE
    /// ([`running_kernel_btf`]: read once per process).
    pub fn running() -> Result<&'static KernelFuncs, KernelError> {
        static RUNNING: OnceLock<Result<KernelFuncs, String>> = OnceLock::new();
        RUNNING
            .get_or_init(|| running_kernel_btf().map(KernelFuncs::of))
            .as_ref()
            .map_err(|e| KernelError::System(format!("kernel BTF: {e}")))
    }

    /// The BTF type id of the kernel function `name`.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }
}

/// `prog` with every kfunc call slot naming its callee as the kernel wants it (see the module
/// documentation); `prog` itself where it calls no kfunc.
pub fn resolve_kfuncs<'p>(
    prog: &'p Program,
    kfuncs: &[Kfunc],
) -> Result<Cow<'p, Program>, KernelError> {
    let is_kfunc_call =
        |i: &linerate_bpf::RawInsn| i.code == CALL_OPCODE && i.src == pseudo::KFUNC_CALL;
    if !prog.insns.iter().any(is_kfunc_call) {
        return Ok(Cow::Borrowed(prog));
    }
    let funcs = KernelFuncs::running()?;
    let mut out = prog.clone();
    let mut i = 0;
    while i < out.insns.len() {
        let insn = &mut out.insns[i];
        let wide = insn.is_wide();
        if is_kfunc_call(insn) {
            let index = insn.imm;
            let kfunc = usize::try_from(index).ok().and_then(|k| kfuncs.get(k));
            let Some(kfunc) = kfunc else {
                return Err(KernelError::InvalidArgument(format!(
                    "program `{}` calls kfunc {index} at insn {i}, but the object declares {} kfuncs",
                    prog.name,
                    kfuncs.len()
                )));
            };
            match funcs.id(&kfunc.name) {
                Some(id) => {
                    insn.imm = id as i32;
                    insn.off = 0;
                }
                None if kfunc.weak => {
                    insn.src = 0;
                    insn.off = 0;
                    insn.imm = POISON_CALL_KFUNC_BASE.saturating_add(index);
                }
                None => {
                    return Err(KernelError::MissingKfunc {
                        program: prog.name.clone(),
                        kfunc: kfunc.name.clone(),
                    })
                }
            }
        }
        i += if wide { 2 } else { 1 };
    }
    Ok(Cow::Owned(out))
}
