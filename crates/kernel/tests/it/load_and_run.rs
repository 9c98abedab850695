//! Loading hand-built objects into the kernel and running them with `BPF_PROG_TEST_RUN`: return
//! values, packet writes, every map kind the loader handles, tail calls and verifier rejections.
//! Each test prints `SKIPPED: ...` and returns when this process cannot use BPF, or fails under
//! `LINERATE_REQUIRE_BPF=1`.

use crate::common;

use common::*;
use linerate_bpf::insn::{Cond, Size};
use linerate_bpf::program::MapOrigin;
use linerate_bpf::{MapDef, MapType, Object, Program};
use linerate_kernel::{load_entry, KernelError, TestRunInput};

/// Every kernel-backed test trusts `check_access` to decide whether to skip, so it must answer yes
/// exactly when a program loads and runs, and a no must be one line saying what is missing.
#[test]
fn check_access_tells_whether_programs_load_and_run() {
    let obj = single(&[mov64(0, XDP_PASS as i32), exit()], vec![]);
    match linerate_kernel::check_access() {
        Ok(()) => {
            let loaded = load_entry(&obj, 0).expect("check_access said BPF works: a program loads");
            let out = loaded
                .test_run(0, &TestRunInput::new(packet(64)))
                .expect("check_access said BPF works: a program runs");
            assert_eq!(out.retval, XDP_PASS);
        }
        Err(e) => {
            assert!(matches!(e, KernelError::Unavailable { .. }), "{e:?}");
            let reason = e.to_string();
            assert!(
                reason.starts_with("BPF not available") && !reason.contains('\n'),
                "{reason}"
            );
            assert!(
                load_entry(&obj, 0).is_err(),
                "check_access said `{reason}`, but a program loads"
            );
            linerate_kernel::skip_or_fail(&format!(
                "check_access_tells_whether_programs_load_and_run: {reason}"
            ));
        }
    }
}

#[test]
fn pass_returns_packet_unchanged() {
    if !bpf_available() {
        return;
    }
    let obj = single(&[mov64(0, XDP_PASS as i32), exit()], vec![]);
    let loaded = load_entry(&obj, 0).unwrap();
    assert_eq!(loaded.program_index("xdp_test"), Some(0));
    assert_eq!(loaded.program_index("nope"), None);
    assert!(loaded.program_id(0).unwrap() > 0);
    let pkt = packet(64);
    let out = loaded.test_run(0, &TestRunInput::new(pkt.clone())).unwrap();
    assert_eq!(out.retval, XDP_PASS);
    assert_eq!(out.packet, pkt);
    assert!(out.meta.is_empty());
    assert_eq!(out.data_size_out, 64);
}

#[test]
fn packet_write_changes_output() {
    if !bpf_available() {
        return;
    }
    let mut insns = load_bounds();
    insns.extend([
        mov64_reg(4, 2),
        add64(4, 1),
        jmp_reg(Cond::Gt, 4, 3, 1),
        st(Size::B, 2, 0, 0xff),
        mov64(0, XDP_TX as i32),
        exit(),
    ]);
    let loaded = load_entry(&single(&insns, vec![]), 0).unwrap();
    let out = loaded.test_run(0, &TestRunInput::new(packet(20))).unwrap();
    assert_eq!(out.retval, XDP_TX);
    let mut expected = packet(20);
    expected[0] = 0xff;
    assert_eq!(out.packet, expected);
}

#[test]
fn array_map_counter() {
    if !bpf_available() {
        return;
    }
    let obj = single(
        &counter_program(),
        vec![MapDef::new("counts", MapType::ARRAY, 4, 8, 4)],
    );
    let loaded = load_entry(&obj, 0).unwrap();
    for _ in 0..3 {
        let out = loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
        assert_eq!(out.retval, XDP_PASS);
    }
    let entries = loaded.entries(0).unwrap();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (0u32..4)
        .map(|k| {
            let v: u64 = if k == 0 { 3 } else { 0 };
            (k.to_le_bytes().to_vec(), v.to_le_bytes().to_vec())
        })
        .collect();
    assert_eq!(entries, expected);
    assert_eq!(
        loaded.lookup(0, &0u32.to_le_bytes()).unwrap(),
        Some(3u64.to_le_bytes().to_vec())
    );
}

#[test]
fn percpu_array_counter_reports_cpu0() {
    if !bpf_available() {
        return;
    }
    let obj = single(
        &counter_program(),
        vec![MapDef::new("pcpu", MapType::PERCPU_ARRAY, 4, 8, 2)],
    );
    let loaded = load_entry(&obj, 0).unwrap();
    assert!(loaded.possible_cpus() >= 1);
    for _ in 0..5 {
        loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
    }
    let entries = loaded.entries(0).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].1, 5u64.to_le_bytes().to_vec());
    assert_eq!(entries[1].1, 0u64.to_le_bytes().to_vec());

    // A value_size value is stored on every CPU; the program then sees it on CPU 0.
    loaded
        .update(0, &0u32.to_le_bytes(), &100u64.to_le_bytes())
        .unwrap();
    let mut repeat = TestRunInput::new(packet(64));
    repeat.repeat = 10;
    loaded.test_run(0, &repeat).unwrap();
    assert_eq!(
        loaded.lookup(0, &0u32.to_le_bytes()).unwrap(),
        Some(110u64.to_le_bytes().to_vec())
    );
    // Wrong sizes are refused with a clear message.
    let err = loaded
        .update(0, &0u32.to_le_bytes(), &[1, 2, 3])
        .unwrap_err();
    assert!(err.to_string().contains("per-CPU"), "{err}");
}

#[test]
fn hash_map_seeded_by_update_is_read_by_program() {
    if !bpf_available() {
        return;
    }
    // key 7 -> action; XDP_ABORTED when absent.
    let insns = [
        st(Size::W, 10, -4, 7),
        mov64_reg(2, 10),
        add64(2, -4),
        ld_map(1, 0),
        call_helper(MAP_LOOKUP_ELEM),
        jmp(Cond::Eq, 0, 0, 2),
        ldx(Size::W, 0, 0, 0),
        exit(),
        mov64(0, XDP_ABORTED as i32),
        exit(),
    ];
    let obj = single(
        &insns,
        vec![MapDef::new("actions", MapType::HASH, 4, 4, 16)],
    );
    let loaded = load_entry(&obj, 0).unwrap();
    let run = || {
        loaded
            .test_run(0, &TestRunInput::new(packet(64)))
            .unwrap()
            .retval
    };
    assert_eq!(run(), XDP_ABORTED);
    assert!(loaded.entries(0).unwrap().is_empty());

    let key = 7u32.to_le_bytes();
    loaded.update(0, &key, &XDP_TX.to_le_bytes()).unwrap();
    loaded
        .update(0, &9u32.to_le_bytes(), &XDP_DROP.to_le_bytes())
        .unwrap();
    assert_eq!(run(), XDP_TX);
    loaded.update(0, &key, &XDP_DROP.to_le_bytes()).unwrap();
    assert_eq!(run(), XDP_DROP);

    let mut entries = loaded.entries(0).unwrap();
    entries.sort();
    assert_eq!(
        entries,
        vec![
            (key.to_vec(), XDP_DROP.to_le_bytes().to_vec()),
            (9u32.to_le_bytes().to_vec(), XDP_DROP.to_le_bytes().to_vec()),
        ]
    );
    assert!(loaded.delete(0, &key).unwrap());
    assert!(!loaded.delete(0, &key).unwrap());
    assert_eq!(loaded.lookup(0, &key).unwrap(), None);
    assert_eq!(run(), XDP_ABORTED);

    let err = loaded.update(0, &[1, 2], &[0; 4]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "map `actions`: key is 2 bytes, the map's key size is 4"
    );
}

fn global(name: &str, size: u32, init: Vec<u8>, read_only: bool) -> MapDef {
    MapDef {
        origin: MapOrigin::GlobalData {
            section: name.to_string(),
            read_only,
        },
        initial_value: Some(init),
        ..MapDef::new(name, MapType::ARRAY, 4, size, 1)
    }
}

#[test]
fn rodata_is_initialised_frozen_and_readable() {
    if !bpf_available() {
        return;
    }
    // return *(u32 *)(.rodata + 4)
    let insns = [ld_map_value(1, 0, 4), ldx(Size::W, 0, 1, 0), exit()];
    let rodata = global(".rodata", 8, vec![0, 0, 0, 0, 3, 0, 0, 0], true);
    let loaded = load_entry(&single(&insns, vec![rodata]), 0).unwrap();
    let out = loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
    assert_eq!(out.retval, XDP_TX);
    assert_eq!(
        loaded.entries(0).unwrap(),
        vec![(0u32.to_le_bytes().to_vec(), vec![0, 0, 0, 0, 3, 0, 0, 0])]
    );
    // Frozen: user space can no longer write it.
    let err = loaded.update(0, &0u32.to_le_bytes(), &[0; 8]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("BPF_MAP_UPDATE_ELEM on map `.rodata` failed: "),
        "{err}"
    );
}

#[test]
fn data_section_is_writable_by_program() {
    if !bpf_available() {
        return;
    }
    // .data: u32 counter at offset 0 (initial 40), incremented per run; initial value shorter than
    // the section is zero-padded.
    let insns = [
        ld_map_value(1, 0, 0),
        ldx(Size::W, 2, 1, 0),
        add64(2, 1),
        stx(Size::W, 1, 0, 2),
        mov64(0, XDP_PASS as i32),
        exit(),
    ];
    let data = global(".data", 8, vec![40, 0, 0, 0], false);
    let loaded = load_entry(&single(&insns, vec![data]), 0).unwrap();
    loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
    loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
    assert_eq!(
        loaded.entries(0).unwrap(),
        vec![(0u32.to_le_bytes().to_vec(), vec![42, 0, 0, 0, 0, 0, 0, 0])]
    );
}

#[test]
fn tail_call_through_prog_array() {
    if !bpf_available() {
        return;
    }
    // Program 0: tail_call(ctx, jmp_table, 1); return XDP_DROP when the slot is empty.
    let entry = Program::from_instructions(
        "entry",
        "xdp",
        &[
            ld_map(2, 0),
            mov64(3, 1),
            call_helper(TAIL_CALL),
            mov64(0, XDP_DROP as i32),
            exit(),
        ],
    );
    let target = Program::from_instructions("target", "xdp", &[mov64(0, XDP_TX as i32), exit()]);
    let mut table = MapDef::new("jmp_table", MapType::PROG_ARRAY, 4, 4, 4);
    table.origin = MapOrigin::Legacy;
    table.initial_programs = vec![(1, 1)];
    let loaded = load_entry(
        &Object::with_programs("test", vec![entry, target], vec![table]),
        0,
    )
    .unwrap();
    assert_eq!(loaded.num_programs(), 2);
    assert_eq!(loaded.program_index("target"), Some(1));

    let run = || {
        loaded
            .test_run(0, &TestRunInput::new(packet(64)))
            .unwrap()
            .retval
    };
    assert_eq!(run(), XDP_TX);
    assert_eq!(
        loaded.entries(0).unwrap(),
        vec![(1u32.to_le_bytes().to_vec(), 1u32.to_le_bytes().to_vec())]
    );

    assert!(loaded.delete(0, &1u32.to_le_bytes()).unwrap());
    assert!(loaded.entries(0).unwrap().is_empty());
    assert_eq!(run(), XDP_DROP);

    // update() takes a program index.
    loaded
        .update(0, &1u32.to_le_bytes(), &1u32.to_le_bytes())
        .unwrap();
    assert_eq!(run(), XDP_TX);
    let err = loaded
        .update(0, &2u32.to_le_bytes(), &7u32.to_le_bytes())
        .unwrap_err();
    assert!(err.to_string().contains("no program with index 7"), "{err}");
}

#[test]
fn lpm_trie_gets_no_prealloc_and_iterates() {
    if !bpf_available() {
        return;
    }
    // Key: u32 prefix length + 4 address bytes. flags 0 in the definition: the loader adds
    // BPF_F_NO_PREALLOC.
    let trie = MapDef::new("prefixes", MapType::LPM_TRIE, 8, 4, 16);
    let loaded = load_entry(&single(&[mov64(0, 2), exit()], vec![trie]), 0).unwrap();
    let mut key = 24u32.to_le_bytes().to_vec();
    key.extend([10, 1, 2, 0]);
    loaded.update(0, &key, &5u32.to_le_bytes()).unwrap();
    assert_eq!(
        loaded.entries(0).unwrap(),
        vec![(key, 5u32.to_le_bytes().to_vec())]
    );
}

#[test]
fn verifier_rejection_carries_the_log() {
    if !bpf_available() {
        return;
    }
    // r0 = r2 reads an uninitialised register.
    let obj = single(&[mov64_reg(0, 2), exit()], vec![]);
    let err = load_entry(&obj, 0).unwrap_err();
    let KernelError::Rejected {
        program,
        errno,
        log,
    } = &err
    else {
        panic!("expected a rejection, got {err}");
    };
    assert_eq!(program, "xdp_test");
    assert_eq!(errno.0, libc_eacces());
    assert!(log.contains("R2 !read_ok"), "log: {log}");
    assert!(log.contains("r0 = r2"), "log: {log}");
    let text = err.to_string();
    assert_eq!(
        text,
        "kernel verifier rejected program `xdp_test`: Permission denied (EACCES) (see log)"
    );
    assert!(!text.contains('\n'));
    assert_eq!(err.verifier_log(), Some(log.as_str()));
}

fn libc_eacces() -> i32 {
    13
}

#[test]
fn map_index_out_of_range_is_refused_before_loading() {
    if !bpf_available() {
        return;
    }
    let obj = single(&[ld_map(1, 3), mov64(0, 2), exit()], vec![]);
    let err = load_entry(&obj, 0).unwrap_err();
    assert!(
        err.to_string()
            .contains("references map index 3 at insn 0, but the object has 0 maps"),
        "{err}"
    );
}

#[test]
fn map_create_failure_names_the_map() {
    if !bpf_available() {
        return;
    }
    let bad = MapDef::new("flows", MapType::HASH, 0, 8, 1024);
    let err = load_entry(&single(&[mov64(0, 2), exit()], vec![bad]), 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "BPF_MAP_CREATE for map `flows` (hash, key 0, value 8, 1024 entries) failed: \
         Invalid argument (EINVAL)"
    );
}

/// The counter program with its one-element `counts` array, loaded.
fn load_counter() -> linerate_kernel::LoadedObject {
    load_entry(
        &single(
            &counter_program(),
            vec![MapDef::new("counts", MapType::ARRAY, 4, 8, 1)],
        ),
        0,
    )
    .unwrap()
}

#[test]
fn repeat_reports_a_duration() {
    if !bpf_available() {
        return;
    }
    let loaded = load_counter();
    let mut input = TestRunInput::new(packet(64));
    input.repeat = 1000;
    let out = loaded.test_run(0, &input).unwrap();
    assert!(out.duration_ns > 0);
    assert_eq!(
        loaded.lookup(0, &0u32.to_le_bytes()).unwrap(),
        Some(1000u64.to_le_bytes().to_vec())
    );
}

extern "C" fn ignore_signal(_: libc::c_int) {}

/// A signal arriving between repeated runs makes the kernel stop the call with `EINTR` (it did so
/// once in CI on a 3-run call); the runner issues the call again, so the caller sees a result.
#[test]
fn a_signal_during_repeated_runs_is_retried() {
    if !bpf_available() {
        return;
    }
    let loaded = load_counter();
    // SAFETY: the handler does nothing, which is async-signal-safe; no other test uses SIGUSR1.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore_signal as extern "C" fn(libc::c_int) as usize;
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
    // SAFETY: `pthread_self` has no preconditions.
    let runner = unsafe { libc::pthread_self() } as usize;
    let signaller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        // SAFETY: the runner thread is alive: it joins this thread before returning.
        unsafe { libc::pthread_kill(runner as libc::pthread_t, libc::SIGUSR1) }
    });
    // Several milliseconds of runs at any plausible speed, so the signal lands inside the call.
    let mut input = TestRunInput::new(packet(64));
    input.repeat = 5_000_000;
    let out = loaded.test_run(0, &input);
    assert_eq!(signaller.join().unwrap(), 0);
    let out = out.unwrap();
    assert!(out.duration_ns > 0);
    let count = loaded.lookup(0, &0u32.to_le_bytes()).unwrap().unwrap();
    let count = u64::from_le_bytes(count.try_into().unwrap());
    assert!(count > 5_000_000, "the interrupted call ran too: {count}");
}

#[test]
fn test_run_restores_thread_affinity() {
    if !bpf_available() {
        return;
    }
    let before = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let allowed = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("Cpus_allowed_list"))
            .map(str::to_string)
    };
    let loaded = load_entry(&single(&[mov64(0, 2), exit()], vec![]), 0).unwrap();
    loaded.test_run(0, &TestRunInput::new(packet(64))).unwrap();
    let after = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    assert_eq!(allowed(&before), allowed(&after));
}

#[test]
fn bad_program_index_is_an_error() {
    if !bpf_available() {
        return;
    }
    let loaded = load_entry(&single(&[mov64(0, 2), exit()], vec![]), 0).unwrap();
    let err = loaded
        .test_run(5, &TestRunInput::new(packet(64)))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no program with index 5 (the object has 1)"
    );
}

#[test]
fn long_verifier_logs_are_complete() {
    if !bpf_available() {
        return;
    }
    // 10000 instructions before the faulty one: the level-1 log (one line per instruction) is far
    // larger than the initial 64 KiB buffer, so the loader must grow it.
    let mut insns: Vec<_> = (0..10_000).map(|i| mov64(1, i)).collect();
    insns.extend([mov64_reg(0, 2), exit()]);
    let err = load_entry(&single(&insns, vec![]), 0).unwrap_err();
    let log = err.verifier_log().expect("a rejection");
    assert!(log.len() > 1 << 16, "log is only {} bytes", log.len());
    assert!(log.contains("0: (b7) r1 = 0"), "log start missing");
    assert!(log.contains("10000: (bf) r0 = r2"), "log end missing");
    assert!(log.contains("R2 !read_ok"));
}
