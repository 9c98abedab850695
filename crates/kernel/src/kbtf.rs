//! The running kernel's BTF, for resolving kfunc calls when a program is loaded.
//!
//! In the program model a kfunc call names its callee by index into
//! [`linerate_bpf::Object::kfuncs`]; `BPF_PROG_LOAD` wants the callee's BTF type id in the
//! kernel's BTF instead and, in the call's `off`, which BTF: 0 for vmlinux, or the index in
//! `fd_array` of the fd of the module BTF holding it (kernel/bpf/verifier.c,
//! `__find_kfunc_desc_btf`: a positive `off` reads `fd_array[off]`, which must be a module's BTF
//! object; a negative one is refused; at most `MAX_KFUNC_BTFS` = 256 modules per program).
//! [`resolve_kfuncs`] rewrites the call slots the way libbpf's `bpf_object__resolve_externs` and
//! `bpf_object__relocate_data` (tools/lib/bpf/libbpf.c) do: the id of the `FUNC` of that name in
//! `/sys/kernel/btf/vmlinux` (parsed with [`linerate_bpf::btf`], once per process), else in the
//! first module's BTF that defines it ([`crate::module_btf`], read only when vmlinux lacks a
//! kfunc); a `__weak` kfunc no BTF has becomes libbpf's "poisoned" helper call, which the
//! verifier accepts only where it is unreachable; a non-weak one is a
//! [`KernelError::MissingKfunc`] naming it and the BTF searched.
//!
//! linerate's `fd_array` already holds the object's map fds at their map indices (for
//! `BPF_PSEUDO_MAP_IDX`), so module BTF fds go after them: slot `max(maps, 1)` onwards, slot 0
//! never (`off` 0 means vmlinux); without maps slot 0 is a placeholder no instruction reads
//! ([`fd_array`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;

use linerate_bpf::btf::{Btf, Kind};
use linerate_bpf::core_relo::running_kernel_btf;
use linerate_bpf::insn::pseudo;
use linerate_bpf::{Kfunc, Program};

use crate::error::KernelError;
use crate::module_btf::{module_btfs, ModuleBtf};

/// Opcode of `call`.
const CALL_OPCODE: u8 = 0x85;
/// libbpf's `POISON_CALL_KFUNC_BASE`: a weak kfunc the kernel lacks is called as helper
/// `POISON_CALL_KFUNC_BASE + index`, which no kernel has.
const POISON_CALL_KFUNC_BASE: i32 = 2_002_000_000;

/// What `fd_array` holds in slot 0 when the object has no maps: no fd (never read).
const NO_FD: u32 = u32::MAX;

/// The kernel functions of one kernel BTF (vmlinux's or a module's own): name to `FUNC` type id.
#[derive(Debug, Default)]
pub struct KernelFuncs {
    ids: HashMap<String, u32>,
}

impl KernelFuncs {
    /// The `FUNC` types `btf` defines (for a module's split BTF: its own, not vmlinux's).
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

    /// A table of the given functions, standing in for a module's BTF in tests.
    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: &[(&str, u32)]) -> KernelFuncs {
        KernelFuncs {
            ids: pairs.iter().map(|&(n, id)| (n.to_string(), id)).collect(),
        }
    }
}

/// A program with its kfunc calls resolved, and the module BTF fds its calls name.
#[derive(Debug)]
pub struct Resolved<'p> {
    /// The program, with every kfunc call slot naming its callee as the kernel wants it.
    pub program: Cow<'p, Program>,
    /// The fds of the module BTF objects the calls name, in slot order from
    /// [`first_module_slot`]: what [`fd_array`] appends after the map fds.
    pub module_fds: Vec<u32>,
}

/// The first `fd_array` slot a module BTF fd takes, after `maps` map fds (never slot 0).
pub fn first_module_slot(maps: usize) -> usize {
    maps.max(1)
}

/// The `fd_array` of a program load: the map fds at their map indices (a placeholder in slot 0
/// when there are none), then the module BTF fds from [`first_module_slot`].
pub fn fd_array(map_fds: &[u32], module_fds: &[u32]) -> Vec<u32> {
    let mut out = map_fds.to_vec();
    if out.is_empty() && !module_fds.is_empty() {
        out.push(NO_FD);
    }
    out.extend_from_slice(module_fds);
    out
}

/// `prog` with every kfunc call slot naming its callee in the running kernel's BTF (see the
/// module documentation), for an object with `maps` maps.
pub fn resolve_kfuncs<'p>(
    prog: &'p Program,
    kfuncs: &[Kfunc],
    maps: usize,
) -> Result<Resolved<'p>, KernelError> {
    if !prog.insns.iter().any(is_kfunc_call) {
        return Ok(Resolved {
            program: Cow::Borrowed(prog),
            module_fds: Vec::new(),
        });
    }
    resolve_in(prog, kfuncs, maps, KernelFuncs::running()?, module_btfs)
}

fn is_kfunc_call(insn: &linerate_bpf::RawInsn) -> bool {
    insn.code == CALL_OPCODE && insn.src == pseudo::KFUNC_CALL
}

/// [`resolve_kfuncs`] against `vmlinux` and the module table `modules` gives (asked at most once,
/// and only when `vmlinux` lacks a kfunc the program calls).
pub(crate) fn resolve_in<'p, 'm>(
    prog: &'p Program,
    kfuncs: &[Kfunc],
    maps: usize,
    vmlinux: &KernelFuncs,
    modules: impl FnOnce() -> Result<&'m [ModuleBtf], KernelError>,
) -> Result<Resolved<'p>, KernelError> {
    let mut modules = Some(modules);
    let mut table: &[ModuleBtf] = &[];
    // Indices into `table` of the modules the program's calls name, in slot order.
    let mut used: Vec<usize> = Vec::new();
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
            let mut found = vmlinux.id(&kfunc.name).map(|id| (id, 0i16));
            if found.is_none() {
                if let Some(read) = modules.take() {
                    table = read()?;
                }
                let module = table
                    .iter()
                    .enumerate()
                    .find_map(|(m, module)| Some((m, module.funcs().id(&kfunc.name)?)));
                if let Some((m, id)) = module {
                    let nth = match used.iter().position(|&u| u == m) {
                        Some(nth) => nth,
                        None => {
                            used.push(m);
                            used.len() - 1
                        }
                    };
                    let slot = first_module_slot(maps).saturating_add(nth);
                    let Ok(off) = i16::try_from(slot) else {
                        return Err(KernelError::InvalidArgument(format!(
                            "program `{}` calls kfunc `{}` of module `{}` at insn {i}, whose BTF \
                             would take fd_array slot {slot}, past the largest call offset {}",
                            prog.name,
                            kfunc.name,
                            table[m].name(),
                            i16::MAX
                        )));
                    };
                    found = Some((id, off));
                }
            }
            match found {
                Some((id, off)) => {
                    insn.imm = id as i32;
                    insn.off = off;
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
                        modules: table.iter().map(|m| m.name().to_string()).collect(),
                    })
                }
            }
        }
        i += if wide { 2 } else { 1 };
    }
    let module_fds = used
        .iter()
        .map(|&m| table[m].fd().as_raw_fd() as u32)
        .collect();
    Ok(Resolved {
        program: Cow::Owned(out),
        module_fds,
    })
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::os::fd::OwnedFd;

    use linerate_bpf::insn::{build, CallTarget, Instruction};

    use super::*;
    use crate::module_btf::{btf_objects, VMLINUX};
    use crate::sys::{self, Cmd};

    /// A program calling kfuncs `calls` (indices into its object's kfuncs), then returning 2.
    fn calling(calls: &[i32]) -> Program {
        let mut insns: Vec<Instruction> = calls
            .iter()
            .map(|&k| Instruction::Call(CallTarget::Kfunc(k)))
            .collect();
        insns.push(build::mov64(0, 2));
        insns.push(build::exit());
        Program::from_instructions("calls", "xdp", &insns)
    }

    fn kfuncs(names: &[&str]) -> Vec<Kfunc> {
        names.iter().map(|n| Kfunc::new(n)).collect()
    }

    /// Any open fd, standing in for a module BTF object's where the kernel does not read it.
    fn some_fd() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    /// The (imm, off) of each kfunc call of `prog`, and whether it is still a kfunc call.
    fn calls_of(prog: &Program) -> Vec<(i32, i16, bool)> {
        prog.insns
            .iter()
            .filter(|i| i.code == CALL_OPCODE)
            .map(|i| (i.imm, i.off, i.src == pseudo::KFUNC_CALL))
            .collect()
    }

    #[test]
    fn vmlinux_kfuncs_keep_offset_zero_and_modules_are_not_read() {
        let vmlinux = KernelFuncs::from_pairs(&[("a", 10), ("b", 11)]);
        let prog = calling(&[1, 0]);
        let resolved = resolve_in(&prog, &kfuncs(&["a", "b"]), 2, &vmlinux, || {
            panic!("module BTF read although vmlinux has every kfunc")
        })
        .unwrap();
        assert_eq!(calls_of(&resolved.program), [(11, 0, true), (10, 0, true)]);
        assert!(resolved.module_fds.is_empty());
        assert_eq!(fd_array(&[5, 6], &resolved.module_fds), [5, 6]);
    }

    #[test]
    fn module_kfuncs_name_their_btf_by_fd_array_slot_after_the_maps() {
        let vmlinux = KernelFuncs::from_pairs(&[("vm", 10)]);
        let modules = [
            ModuleBtf::new("mod_a", some_fd(), KernelFuncs::from_pairs(&[("ma", 100)])),
            ModuleBtf::new(
                "mod_b",
                some_fd(),
                KernelFuncs::from_pairs(&[("mb", 200), ("ma", 999), ("vm", 998)]),
            ),
        ];
        let fd = |m: usize| modules[m].fd().as_raw_fd() as u32;
        let reads = Cell::new(0);
        let table = || {
            reads.set(reads.get() + 1);
            Ok(&modules[..])
        };
        // Calls mb, ma, vm, ma: mod_b is named first, so it takes the first slot after the 3 maps.
        let prog = calling(&[1, 0, 2, 0]);
        let resolved = resolve_in(&prog, &kfuncs(&["ma", "mb", "vm"]), 3, &vmlinux, table).unwrap();
        assert_eq!(reads.get(), 1);
        assert_eq!(
            calls_of(&resolved.program),
            [
                (200, 3, true),
                (100, 4, true),
                (10, 0, true),
                (100, 4, true)
            ]
        );
        assert_eq!(resolved.module_fds, [fd(1), fd(0)]);
        let array = fd_array(&[7, 8, 9], &resolved.module_fds);
        assert_eq!(array, [7, 8, 9, fd(1), fd(0)]);
        // Each call's `off` indexes the fd of the module that defines its callee.
        assert_eq!(array[3], fd(1));
        assert_eq!(array[4], fd(0));

        // Without maps, slot 0 (vmlinux) holds no fd and the module takes slot 1.
        let prog = calling(&[0]);
        let resolved =
            resolve_in(&prog, &kfuncs(&["ma"]), 0, &vmlinux, || Ok(&modules[..])).unwrap();
        assert_eq!(calls_of(&resolved.program), [(100, 1, true)]);
        assert_eq!(fd_array(&[], &resolved.module_fds), [NO_FD, fd(0)]);

        // A slot past what a call's 16-bit `off` can name is refused, naming the call.
        let prog = calling(&[0, 1]);
        let names = kfuncs(&["ma", "mb"]);
        let last = i16::MAX as usize;
        let one_module = calling(&[0]);
        let resolved =
            resolve_in(&one_module, &names, last, &vmlinux, || Ok(&modules[..])).unwrap();
        assert_eq!(calls_of(&resolved.program), [(100, i16::MAX, true)]);
        let err = resolve_in(&prog, &names, last, &vmlinux, || Ok(&modules[..])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "program `calls` calls kfunc `mb` of module `mod_b` at insn 1, whose BTF would take \
             fd_array slot 32768, past the largest call offset 32767"
        );
    }

    #[test]
    fn a_kfunc_no_btf_has_is_named_with_the_btf_searched() {
        let vmlinux = KernelFuncs::from_pairs(&[("vm", 10)]);
        let modules = [
            ModuleBtf::new("mod_a", some_fd(), KernelFuncs::from_pairs(&[("ma", 100)])),
            ModuleBtf::new("mod_b", some_fd(), KernelFuncs::default()),
        ];
        let prog = calling(&[0, 1]);
        let err = resolve_in(&prog, &kfuncs(&["vm", "nope"]), 1, &vmlinux, || {
            Ok(&modules[..])
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "program `calls` calls kfunc `nope`, which the running kernel lacks (not in \
             /sys/kernel/btf/vmlinux nor in the BTF of the 2 modules mod_a, mod_b)"
        );
        let err = resolve_in(&prog, &kfuncs(&["vm", "nope"]), 1, &vmlinux, || Ok(&[])).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("(not in /sys/kernel/btf/vmlinux, and no kernel module has BTF)"),
            "{err}"
        );
        // A failure to read the module table is reported as it is.
        let failed = || Err(KernelError::System("no module table".to_string()));
        let err = resolve_in(&prog, &kfuncs(&["vm", "nope"]), 1, &vmlinux, failed).unwrap_err();
        assert_eq!(err.to_string(), "no module table");
        // A weak kfunc no BTF has becomes the poisoned helper call.
        let mut weak = kfuncs(&["vm", "nope"]);
        weak[1].weak = true;
        let resolved = resolve_in(&prog, &weak, 1, &vmlinux, || Ok(&modules[..])).unwrap();
        assert_eq!(
            calls_of(&resolved.program),
            [(10, 0, true), (POISON_CALL_KFUNC_BASE + 1, 0, false)]
        );
        assert!(resolved.module_fds.is_empty());
    }

    /// Loads `prog` with `fd_array` and returns the verifier log of its (expected) rejection.
    fn rejection_log(prog: &Program, fd_array: &[u32]) -> String {
        let insns: Vec<u8> = prog.insns.iter().flat_map(|i| i.to_bytes()).collect();
        let mut log = vec![0u8; 1 << 16];
        let mut attr = sys::ProgLoadAttr {
            prog_type: sys::PROG_TYPE_XDP,
            insn_cnt: prog.insns.len() as u32,
            insns: sys::ptr_u64(insns.as_ptr()),
            license: sys::ptr_u64(c"GPL".as_ptr()),
            log_level: 1,
            log_size: log.len() as u32,
            log_buf: sys::ptr_u64(log.as_mut_ptr()),
            expected_attach_type: sys::ATTACH_XDP,
            fd_array: sys::ptr_u64(fd_array.as_ptr()),
            ..Default::default()
        };
        // SAFETY: `insns`, the license, `log` and `fd_array` are valid for the sizes given (the
        // only call's `off` indexes inside `fd_array`) and outlive the call.
        let result = unsafe { sys::sys_bpf(Cmd::ProgLoad, &mut attr) };
        assert!(result.is_err(), "loaded");
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        String::from_utf8_lossy(&log[..end]).into_owned()
    }

    /// The kernel looks a module kfunc's BTF up at `fd_array[off]` as resolution laid it out:
    /// with the (injected) module's fd being vmlinux's BTF object, the verifier finds that BTF
    /// object there and refuses it as not a module's; with no fd at that slot it refuses
    /// differently. (This kernel has no module BTF, so no module kfunc can load for real.)
    #[test]
    fn the_kernel_reads_the_module_btf_fd_at_the_call_offset() {
        if !crate::usable_or_skip("the_kernel_reads_the_module_btf_fd_at_the_call_offset") {
            return;
        }
        let vmlinux_object = btf_objects()
            .unwrap()
            .into_iter()
            .find(|o| o.name == VMLINUX)
            .expect("vmlinux BTF object");
        let running = KernelFuncs::running().unwrap();
        let id = running.id("bpf_iter_num_new").expect("bpf_iter_num_new");
        let modules = [ModuleBtf::new(
            "fake_mod",
            vmlinux_object.fd().try_clone_to_owned().unwrap(),
            KernelFuncs::from_pairs(&[("fake_mod_kfunc", id)]),
        )];
        let prog = calling(&[0]);
        let empty = KernelFuncs::default();
        let resolved = resolve_in(&prog, &kfuncs(&["fake_mod_kfunc"]), 2, &empty, || {
            Ok(&modules[..])
        })
        .unwrap();
        assert_eq!(calls_of(&resolved.program), [(id as i32, 2, true)]);
        let array = fd_array(&[NO_FD, NO_FD], &resolved.module_fds);
        let log = rejection_log(&resolved.program, &array);
        assert!(
            log.contains("BTF fd for kfunc is not a module BTF"),
            "{log}"
        );

        let log = rejection_log(&resolved.program, &[NO_FD, NO_FD, NO_FD]);
        assert!(log.contains("invalid module BTF fd specified"), "{log}");
    }
}
