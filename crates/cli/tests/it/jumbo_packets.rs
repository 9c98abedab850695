//! `linerate run` on packets above the 3,520 bytes of one XDP buffer: the example `xdp_jumbo`
//! (section `xdp.frags`) on a 9,000-byte jumbo frame given with `--packet`, and on frames up to
//! the largest `BPF_PROG_TEST_RUN` takes given in a pcap file, in the interpreter and in the
//! kernel with the same result; a longer frame is refused with one line by both engines.

use crate::common;

use common::*;
use linerate_io::pcap::encode_pcap;
use linerate_io::to_hex;

/// A frame of `len` bytes as xdp_jumbo expects: EtherType 0x88B5, trailer "JMBO".
fn jumbo(len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.extend((14..len - 4).map(|i| (i * 13) as u8));
    f.extend_from_slice(b"JMBO");
    f
}

/// `run --json` of xdp_jumbo with `input` in each engine this machine has.
fn both_engines(dir: &TempDir, input: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["run", "xdp_jumbo.o", "--json"];
    args.extend_from_slice(input);
    let mut runs = vec![run_in(Some(dir.path()), &args).json()];
    match kernel_available() {
        Ok(()) => {
            args.push("--kernel");
            runs.push(run_in(Some(dir.path()), &args).json());
        }
        Err(reason) => println!("SKIPPED (--kernel half): {reason}"),
    }
    runs
}

fn scratch() -> TempDir {
    let dir = TempDir::new("jumbo");
    std::fs::copy(example("xdp_jumbo.o"), dir.path().join("xdp_jumbo.o")).unwrap();
    dir
}

#[test]
fn a_jumbo_frame_on_the_command_line_runs_in_both_engines() {
    let dir = scratch();
    let frame = jumbo(9000);
    let hex = to_hex(&frame);
    let runs = both_engines(&dir, &["--packet", &hex]);
    // The trailer replaced by "JMB2" and the original length, the hop counter at 3,516
    // incremented: 9,004 bytes out, XDP_TX.
    let mut expected = frame.clone();
    expected.truncate(8996);
    expected.extend_from_slice(b"JMB2");
    expected.extend_from_slice(&9000u32.to_be_bytes());
    let hops = u64::from_be_bytes(frame[3516..3524].try_into().unwrap()) + 1;
    expected[3516..3524].copy_from_slice(&hops.to_be_bytes());
    for run in &runs {
        assert_eq!(run["action"], "XDP_TX", "{}", run["engine"]);
        assert_eq!(run["packet"], to_hex(&expected), "{}", run["engine"]);
    }
    assert!(runs.windows(2).all(|w| w[0]["maps"] == w[1]["maps"]));
}

#[test]
fn pcap_frames_up_to_the_largest_run_in_both_engines() {
    let dir = scratch();
    let frames = vec![jumbo(3521), jumbo(7621), jumbo(73152)];
    std::fs::write(dir.path().join("jumbo.pcap"), encode_pcap(&frames)).unwrap();
    let runs = both_engines(&dir, &["--pcap", "jumbo.pcap"]);
    let actions = |run: &serde_json::Value| -> Vec<String> {
        run.as_array()
            .unwrap()
            .iter()
            .map(|r| r["action"].as_str().unwrap().to_string())
            .collect()
    };
    // 3,521: no room for the new trailer; 7,621: rewritten; 73,152: the trailer lies past the
    // 0xffff offsets bpf_xdp_load_bytes takes.
    for run in &runs {
        assert_eq!(actions(run), ["XDP_PASS", "XDP_TX", "XDP_ABORTED"]);
    }
    if let [vm, kernel] = &runs[..] {
        for (v, k) in vm
            .as_array()
            .unwrap()
            .iter()
            .zip(kernel.as_array().unwrap())
        {
            for field in ["return_value", "packet", "meta", "maps"] {
                assert_eq!(v[field], k[field], "{field}");
            }
        }
    }
}

#[test]
fn a_frame_above_the_largest_is_refused_in_one_line_by_both_engines() {
    let dir = scratch();
    std::fs::write(dir.path().join("long.pcap"), encode_pcap(&[jumbo(73153)])).unwrap();
    let mut commands = vec![vec!["run", "xdp_jumbo.o", "--pcap", "long.pcap"]];
    if kernel_available().is_ok() {
        commands.push(vec![
            "run",
            "xdp_jumbo.o",
            "--pcap",
            "long.pcap",
            "--kernel",
        ]);
    }
    for args in &commands {
        expect_error_in(
            &dir,
            args,
            &["packet 0: 73153 bytes is larger than the 73152 bytes BPF_PROG_TEST_RUN takes"],
        );
    }
}
