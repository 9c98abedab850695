//! The kind of a program (the kernel's program type) as its ELF section names it.
//!
//! libbpf chooses the program type of each program from its section name
//! (tools/lib/bpf/libbpf.c, `section_defs`): `xdp`, `tc`, `tp/...`, `fentry/...` and so on.
//! linerate follows the same names, so an object holding tracepoint, fentry or TC programs beside
//! its XDP programs is understood the way `bpftool prog loadall` would understand it. Sections no
//! rule names (`prog`, `xdp_prog`, `.text` of legacy objects) are XDP programs, as `ip link set
//! dev D xdp obj O sec S` loads any section as XDP.
//!
//! linerate executes, prices and analyses XDP programs only; every other kind is read, listed and
//! disassembled, and refused by name where a command needs an XDP program ([`NotXdp`]).

use std::fmt;

use crate::program::Program;

/// A program's kind: XDP, or the kind of another program type linerate recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgramKind {
    Xdp,
    /// `tc`, `tcx/*`, `classifier`, `netkit/*` (`BPF_PROG_TYPE_SCHED_CLS`).
    Tc,
    /// `action` (`BPF_PROG_TYPE_SCHED_ACT`).
    TcAction,
    /// `tp/*`, `tracepoint/*`.
    Tracepoint,
    /// `raw_tp/*`, `raw_tracepoint/*` and their writable variants.
    RawTracepoint,
    /// `tp_btf/*`.
    BtfTracepoint,
    /// `kprobe/*`, `kprobe.multi/*`, `ksyscall/*`.
    Kprobe,
    /// `kretprobe/*`, `kretprobe.multi/*`, `kretsyscall/*`.
    Kretprobe,
    /// `uprobe*`, `uretprobe*`, `usdt`.
    Uprobe,
    /// `fentry/*`, `fentry.s/*`.
    Fentry,
    /// `fexit/*`, `fexit.s/*`.
    Fexit,
    /// `fmod_ret/*`, `fmod_ret.s/*`.
    FmodRet,
    /// `lsm/*`, `lsm.s/*`, `lsm_cgroup/*`.
    Lsm,
    /// `iter/*`, `iter.s/*`.
    Iterator,
    /// `socket*`.
    SocketFilter,
    /// `cgroup/*`, `cgroup_skb/*`.
    Cgroup,
    /// `sk_skb*`.
    SkSkb,
    /// `sk_msg`.
    SkMsg,
    /// `sockops`.
    SockOps,
    /// `sk_lookup`.
    SkLookup,
    /// `sk_reuseport*`.
    SkReuseport,
    /// `flow_dissector`.
    FlowDissector,
    /// `lwt_in`, `lwt_out`, `lwt_xmit`, `lwt_seg6local`.
    Lwt,
    /// `perf_event`.
    PerfEvent,
    /// `struct_ops*`.
    StructOps,
    /// `syscall`.
    Syscall,
    /// `netfilter`.
    Netfilter,
}

/// Section names and the kinds they give: an entry `name` matches the section `name` itself and
/// every section `name/...`; an entry ending in `*` matches every section it prefixes.
const SECTION_KINDS: &[(&str, ProgramKind)] = &[
    ("xdp", ProgramKind::Xdp),
    ("xdp.frags", ProgramKind::Xdp),
    ("tc", ProgramKind::Tc),
    ("tcx", ProgramKind::Tc),
    ("netkit", ProgramKind::Tc),
    ("classifier", ProgramKind::Tc),
    ("action", ProgramKind::TcAction),
    ("tp", ProgramKind::Tracepoint),
    ("tracepoint", ProgramKind::Tracepoint),
    ("raw_tp", ProgramKind::RawTracepoint),
    ("raw_tracepoint", ProgramKind::RawTracepoint),
    ("raw_tp.w", ProgramKind::RawTracepoint),
    ("raw_tracepoint.w", ProgramKind::RawTracepoint),
    ("tp_btf", ProgramKind::BtfTracepoint),
    ("kprobe", ProgramKind::Kprobe),
    ("kprobe.multi", ProgramKind::Kprobe),
    ("kprobe.session", ProgramKind::Kprobe),
    ("ksyscall", ProgramKind::Kprobe),
    ("kretprobe", ProgramKind::Kretprobe),
    ("kretprobe.multi", ProgramKind::Kretprobe),
    ("kretsyscall", ProgramKind::Kretprobe),
    ("uprobe*", ProgramKind::Uprobe),
    ("uretprobe*", ProgramKind::Uprobe),
    ("usdt", ProgramKind::Uprobe),
    ("fentry", ProgramKind::Fentry),
    ("fentry.s", ProgramKind::Fentry),
    ("fexit", ProgramKind::Fexit),
    ("fexit.s", ProgramKind::Fexit),
    ("fmod_ret", ProgramKind::FmodRet),
    ("fmod_ret.s", ProgramKind::FmodRet),
    ("lsm", ProgramKind::Lsm),
    ("lsm.s", ProgramKind::Lsm),
    ("lsm_cgroup", ProgramKind::Lsm),
    ("iter", ProgramKind::Iterator),
    ("iter.s", ProgramKind::Iterator),
    ("socket*", ProgramKind::SocketFilter),
    ("cgroup", ProgramKind::Cgroup),
    ("cgroup_skb", ProgramKind::Cgroup),
    ("sk_skb*", ProgramKind::SkSkb),
    ("sk_msg", ProgramKind::SkMsg),
    ("sockops", ProgramKind::SockOps),
    ("sk_lookup", ProgramKind::SkLookup),
    ("sk_reuseport*", ProgramKind::SkReuseport),
    ("flow_dissector", ProgramKind::FlowDissector),
    ("lwt_in", ProgramKind::Lwt),
    ("lwt_out", ProgramKind::Lwt),
    ("lwt_xmit", ProgramKind::Lwt),
    ("lwt_seg6local", ProgramKind::Lwt),
    ("perf_event", ProgramKind::PerfEvent),
    ("struct_ops*", ProgramKind::StructOps),
    ("syscall", ProgramKind::Syscall),
    ("netfilter", ProgramKind::Netfilter),
];

impl ProgramKind {
    /// The kind of a program in ELF section `section`.
    pub fn of_section(section: &str) -> ProgramKind {
        SECTION_KINDS
            .iter()
            .find(|(name, _)| match name.strip_suffix('*') {
                Some(prefix) => section.starts_with(prefix),
                None => section
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
            })
            .map_or(ProgramKind::Xdp, |&(_, kind)| kind)
    }

    /// The name users know the kind by (libbpf's section prefix, or the program type).
    pub fn name(self) -> &'static str {
        match self {
            ProgramKind::Xdp => "xdp",
            ProgramKind::Tc => "tc",
            ProgramKind::TcAction => "tc action",
            ProgramKind::Tracepoint => "tracepoint",
            ProgramKind::RawTracepoint => "raw tracepoint",
            ProgramKind::BtfTracepoint => "BTF tracepoint",
            ProgramKind::Kprobe => "kprobe",
            ProgramKind::Kretprobe => "kretprobe",
            ProgramKind::Uprobe => "uprobe",
            ProgramKind::Fentry => "fentry",
            ProgramKind::Fexit => "fexit",
            ProgramKind::FmodRet => "fmod_ret",
            ProgramKind::Lsm => "lsm",
            ProgramKind::Iterator => "iterator",
            ProgramKind::SocketFilter => "socket filter",
            ProgramKind::Cgroup => "cgroup",
            ProgramKind::SkSkb => "sk_skb",
            ProgramKind::SkMsg => "sk_msg",
            ProgramKind::SockOps => "sockops",
            ProgramKind::SkLookup => "sk_lookup",
            ProgramKind::SkReuseport => "sk_reuseport",
            ProgramKind::FlowDissector => "flow dissector",
            ProgramKind::Lwt => "lwt",
            ProgramKind::PerfEvent => "perf_event",
            ProgramKind::StructOps => "struct_ops",
            ProgramKind::Syscall => "syscall",
            ProgramKind::Netfilter => "netfilter",
        }
    }
}

impl fmt::Display for ProgramKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A command that executes, prices or analyses programs was given one that is not XDP.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{program}` is {} {kind} program (section {section}): {command} {what}", article(*.kind))]
pub struct NotXdp {
    pub program: String,
    pub section: String,
    pub kind: ProgramKind,
    /// The command or engine refusing it (`run`, `cost`, ...).
    pub command: &'static str,
    /// What it does instead, e.g. "executes XDP programs".
    pub what: &'static str,
}

fn article(kind: ProgramKind) -> &'static str {
    match kind.name().as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    }
}

impl Program {
    /// The program's kind, from its section (see the module documentation).
    pub fn kind(&self) -> ProgramKind {
        ProgramKind::of_section(&self.section)
    }

    /// `Ok` for an XDP program; otherwise the [`NotXdp`] error `command` reports, saying `what` it
    /// does instead.
    pub fn require_xdp(&self, command: &'static str, what: &'static str) -> Result<(), NotXdp> {
        match self.kind() {
            ProgramKind::Xdp => Ok(()),
            kind => Err(NotXdp {
                program: self.name.clone(),
                section: self.section.clone(),
                kind,
                command,
                what,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_name_their_kinds_as_libbpf_does() {
        for (section, kind) in [
            ("xdp", ProgramKind::Xdp),
            ("xdp.frags", ProgramKind::Xdp),
            ("xdp/devmap", ProgramKind::Xdp),
            ("xdp_prog", ProgramKind::Xdp),
            ("prog", ProgramKind::Xdp),
            (".text", ProgramKind::Xdp),
            ("tc", ProgramKind::Tc),
            ("tcx/ingress", ProgramKind::Tc),
            ("classifier", ProgramKind::Tc),
            ("tp/syscalls/sys_enter_write", ProgramKind::Tracepoint),
            ("tracepoint/sched/sched_switch", ProgramKind::Tracepoint),
            ("raw_tp/sys_enter", ProgramKind::RawTracepoint),
            ("tp_btf/sched_switch", ProgramKind::BtfTracepoint),
            ("fentry/bpf_prog_test_run_xdp", ProgramKind::Fentry),
            ("fexit/do_exit", ProgramKind::Fexit),
            ("kprobe/do_sys_open", ProgramKind::Kprobe),
            ("uprobe//bin/sh:main", ProgramKind::Uprobe),
            ("socket", ProgramKind::SocketFilter),
            ("socket1", ProgramKind::SocketFilter),
            ("cgroup_skb/ingress", ProgramKind::Cgroup),
            ("struct_ops.s/x", ProgramKind::StructOps),
        ] {
            assert_eq!(ProgramKind::of_section(section), kind, "{section}");
        }
        // A prefix only counts up to a `/`: `tpx` is no tracepoint, `fentryfoo` no fentry.
        assert_eq!(ProgramKind::of_section("tpx"), ProgramKind::Xdp);
        assert_eq!(ProgramKind::of_section("fentryfoo"), ProgramKind::Xdp);
    }

    #[test]
    fn non_xdp_programs_are_refused_by_name_section_and_kind() {
        let mut program =
            Program::from_instructions("on_write", "tp/syscalls/sys_enter_write", &[]);
        let err = program
            .require_xdp("run", "executes XDP programs")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`on_write` is a tracepoint program (section tp/syscalls/sys_enter_write): run \
             executes XDP programs"
        );
        program.section = "iter/task".into();
        assert!(program
            .require_xdp("cost", "prices XDP programs")
            .unwrap_err()
            .to_string()
            .starts_with("`on_write` is an iterator program (section iter/task): cost"));
        program.section = "xdp".into();
        assert!(program.require_xdp("run", "").is_ok());
    }
}
