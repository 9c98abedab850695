//! Objects calling kernel functions (kfuncs): `inspect` and `cost` work on any of them; `run`
//! executes the modelled ones and refuses the others at run time naming the kfunc and the
//! instruction; `run --kernel` refuses a kfunc the running kernel lacks, naming it and the BTF
//! (vmlinux's, the modules') it was looked for in.

use crate::common;

use common::*;

const PACKET: &str = "02000000000202000000000108004500001c000040004011b6cdc0000201c0000202";

/// Calls `bpf_missing_kfunc`, which no kernel has and linerate does not model, at insn 1.
fn missing_kfunc_object() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bpf/tests/fixtures/extern_kfunc.o")
}

#[test]
fn inspect_and_cost_work_on_an_unmodelled_kfunc() {
    let object = missing_kfunc_object();
    let text = run(["inspect".as_ref(), object.as_os_str()])
        .ok()
        .to_string();
    assert!(
        text.contains("call kfunc 0x0 <bpf_missing_kfunc>"),
        "{text}"
    );
    let cost = run(["cost".as_ref(), object.as_os_str(), "--json".as_ref()]).json();
    assert!(cost.is_object(), "{cost}");
}

#[test]
fn the_interpreter_refuses_an_unmodelled_kfunc_at_run_time() {
    let object = missing_kfunc_object();
    let out = run([
        "run".as_ref(),
        object.as_os_str(),
        "--packet".as_ref(),
        PACKET.as_ref(),
    ]);
    let line = expect_error(&out, &["kfunc bpf_missing_kfunc is not modelled (insn 1)"]);
    assert_eq!(line.matches("not modelled").count(), 1, "{line}");
}

#[test]
fn the_kernel_runner_names_a_kfunc_the_kernel_lacks() {
    if !linerate_kernel::usable_or_skip("the_kernel_runner_names_a_kfunc_the_kernel_lacks") {
        return;
    }
    let object = missing_kfunc_object();
    let out = run([
        "run".as_ref(),
        object.as_os_str(),
        "--kernel".as_ref(),
        "--packet".as_ref(),
        PACKET.as_ref(),
    ]);
    // The error says which BTF was searched: vmlinux, then every module with BTF (the
    // `/sys/kernel/btf` entries besides vmlinux).
    let modules = std::fs::read_dir("/sys/kernel/btf")
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != "vmlinux")
        .count();
    let searched = if modules == 0 {
        "(not in /sys/kernel/btf/vmlinux, and no kernel module has BTF)".to_string()
    } else {
        "(not in /sys/kernel/btf/vmlinux nor in the BTF of ".to_string()
    };
    expect_error(
        &out,
        &[
            "calls kfunc `bpf_missing_kfunc`, which the running kernel lacks",
            &searched,
        ],
    );
}

#[test]
fn inspect_shows_the_kfuncs_and_kconfig_values_of_the_example() {
    let out = run(["inspect", example("xdp_kfunc.o").to_str().unwrap()]);
    let text = out.ok();
    for name in [
        "bpf_iter_num_new",
        "bpf_iter_num_next",
        "bpf_iter_num_destroy",
    ] {
        assert!(text.contains(&format!("<{name}>")), "{name}: {text}");
    }
    // LINUX_KERNEL_VERSION of the running kernel (KERNEL_VERSION(a, b, c) of `uname -r`),
    // little-endian, after the weak CONFIG_ extern no kernel has (0).
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let numbers: Vec<u32> = release
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|n| n.parse().unwrap())
        .collect();
    let version = (numbers[0] << 16) | (numbers[1] << 8) | numbers[2].min(255);
    let value = format!("00000000{}", hex(&version.to_le_bytes()));
    assert!(text.contains(&value), "{value}: {text}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
