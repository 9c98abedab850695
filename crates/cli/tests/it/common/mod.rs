//! Helpers shared by the `linerate` binary's integration tests: running the binary, checking the
//! one-line error contract, scratch directories, a minimal ELF section-table reader (to patch
//! example objects at known places) and kernel availability.

#![allow(dead_code)]

pub mod browser;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The `linerate` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_linerate")
}

/// The workspace's `examples/` directory.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// An example file by name, e.g. `example("xdp_router.o")`.
pub fn example(name: &str) -> PathBuf {
    examples().join(name)
}

/// What one invocation of the binary produced.
#[derive(Debug)]
pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Panics with the whole invocation unless it succeeded; returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "expected success, got {self:#?}");
        assert!(!self.stderr.contains("panicked"), "{self:#?}");
        &self.stdout
    }

    /// Parses stdout as JSON after checking success.
    pub fn json(&self) -> serde_json::Value {
        let text = self.ok();
        serde_json::from_str(text).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {text}"))
    }
}

/// Runs `linerate` with `args` in `dir` (the current directory when `None`).
pub fn run_in<I, S>(dir: Option<&Path>, args: I) -> Out
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new(bin());
    cmd.args(args);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    output(cmd)
}

/// Runs `linerate` with `args`.
pub fn run<I, S>(args: I) -> Out
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    run_in(None, args)
}

/// The `XDG_CACHE_HOME` every command under test runs with unless it sets its own: a cache of
/// host models holding the shipped x86 prices under this host's fingerprint. So `--target x86`
/// gives the figures the tests were written against, on any host, and no test calibrates by
/// accident (`model_host.rs` tests the real first use with empty caches of its own). Written
/// once per test binary, atomically, under the target directory.
pub fn test_cache_home() -> &'static Path {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-test-xdg-cache");
        let dir = home.join("linerate");
        std::fs::create_dir_all(&dir).expect("create the test model cache");
        let fingerprint = linerate_calibrate::fingerprint::current();
        let mut file = linerate_cost::Model::builtin_file("x86").expect("shipped x86 model");
        file.device.fingerprint = Some(fingerprint.clone());
        let text = serde_json::to_string_pretty(&file).expect("model encodes");
        let path = linerate_calibrate::cache::path_in(&dir, &fingerprint);
        let tmp = dir.join(format!(".seed.{}", std::process::id()));
        std::fs::write(&tmp, text).expect("write the test model cache");
        std::fs::rename(&tmp, &path).expect("place the test model cache");
        home
    })
}

/// Runs any command and collects its output, with [`test_cache_home`] as its cache unless it
/// names one.
pub fn output(mut cmd: Command) -> Out {
    if !cmd
        .get_envs()
        .any(|(name, _)| name == linerate_calibrate::cache::XDG_CACHE_HOME)
    {
        cmd.env(linerate_calibrate::cache::XDG_CACHE_HOME, test_cache_home());
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Checks the error contract: exit status 1, nothing on stdout, exactly one line on stderr that
/// starts with `error: ` and contains every one of `parts`, no panic. Returns the line.
pub fn expect_error(out: &Out, parts: &[&str]) -> String {
    assert!(!out.stderr.contains("panicked"), "panic: {out:#?}");
    assert!(
        !out.stdout.contains("panicked"),
        "panic on stdout: {out:#?}"
    );
    assert_eq!(out.code, Some(1), "expected exit status 1: {out:#?}");
    assert!(out.stdout.is_empty(), "stdout not empty on error: {out:#?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr: {out:#?}");
    let line = lines[0];
    assert!(line.starts_with("error: "), "no `error: ` prefix: {line}");
    assert!(
        line.len() > "error: ".len() + 10,
        "error line says nothing: {line}"
    );
    for part in parts {
        assert!(line.contains(part), "error line lacks `{part}`:\n  {line}");
    }
    line.to_string()
}

/// Runs `linerate` in a scratch directory holding the inputs and checks the error contract and
/// that the failed run left no file behind.
pub fn expect_error_in(dir: &TempDir, args: &[&str], parts: &[&str]) -> String {
    let before = dir.listing();
    let out = run_in(Some(dir.path()), args);
    let line = expect_error(&out, parts);
    assert_eq!(
        dir.listing(),
        before,
        "`linerate {}` left files behind",
        args.join(" ")
    );
    line
}

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

/// A scratch directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = NEXT_DIR.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!(
            "linerate-cli-test-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create scratch directory");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `bytes` to `name` inside the directory and returns the path.
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write scratch file");
        path
    }

    /// The names of the files in the directory (hidden ones included).
    pub fn listing(&self) -> BTreeSet<String> {
        std::fs::read_dir(&self.0)
            .expect("list scratch directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One section header of a little-endian ELF64 file.
#[derive(Clone, Debug)]
pub struct Section {
    pub index: usize,
    pub name: String,
    /// File offset of this section's header (in the section header table).
    pub header_offset: usize,
    pub offset: usize,
    pub size: usize,
}

fn u16_at(d: &[u8], at: usize) -> usize {
    u16::from_le_bytes([d[at], d[at + 1]]) as usize
}

fn u32_at(d: &[u8], at: usize) -> usize {
    u32::from_le_bytes(d[at..at + 4].try_into().unwrap()) as usize
}

fn u64_at(d: &[u8], at: usize) -> usize {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap()) as usize
}

/// The section headers of a well-formed little-endian ELF64 file (test inputs only).
pub fn sections(d: &[u8]) -> Vec<Section> {
    assert_eq!(&d[..4], b"\x7fELF");
    let shoff = u64_at(d, 0x28);
    let shentsize = u16_at(d, 0x3a);
    let shnum = u16_at(d, 0x3c);
    let shstrndx = u16_at(d, 0x3e);
    let strtab = u64_at(d, shoff + shstrndx * shentsize + 0x18);
    (0..shnum)
        .map(|index| {
            let h = shoff + index * shentsize;
            let name_at = strtab + u32_at(d, h);
            let end = d[name_at..].iter().position(|&b| b == 0).unwrap() + name_at;
            Section {
                index,
                name: String::from_utf8_lossy(&d[name_at..end]).into_owned(),
                header_offset: h,
                offset: u64_at(d, h + 0x18),
                size: u64_at(d, h + 0x20),
            }
        })
        .collect()
}

/// The section named `name`.
pub fn section(d: &[u8], name: &str) -> Section {
    sections(d)
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no section {name}"))
}

/// Whether this process runs as root (uid 0).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// `Ok(())` when `linerate run --kernel` works here, else the reason to give
/// [`linerate_kernel::skip_or_fail`].
pub fn kernel_available() -> Result<(), String> {
    let out = run([
        "run".as_ref(),
        example("xdp_reflector.o").as_os_str(),
        "--kernel".as_ref(),
        "--packet".as_ref(),
        "0200000000020200000000010800".as_ref(),
    ]);
    if out.code == Some(0) {
        Ok(())
    } else if out.stderr.contains("BPF not available") {
        Err(out.stderr.trim().to_string())
    } else {
        panic!("`linerate run --kernel` failed for another reason than BPF access: {out:#?}")
    }
}

/// The packets of an example's `.packets` file with the action each is expected to produce
/// (from its `# [i] expect XDP_...` comment) and the program named in its header.
pub struct ExamplePackets {
    pub program: Option<String>,
    pub packets: Vec<(String, Vec<u8>)>,
}

pub fn example_packets(stem: &str) -> ExamplePackets {
    let text = std::fs::read_to_string(example(&format!("{stem}.packets"))).unwrap();
    let mut program = None;
    let mut expect = None;
    let mut packets = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(p) = line.strip_prefix("# program:") {
            program = p.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("# [") {
            let action = rest
                .split_once("expect ")
                .map(|(_, a)| a.split(':').next().unwrap().trim().to_string());
            expect = action;
        } else if !line.is_empty() && !line.starts_with('#') {
            let bytes = (0..line.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
                .collect();
            packets.push((expect.take().expect("packet without expectation"), bytes));
        }
    }
    ExamplePackets { program, packets }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why this test process cannot run `linerate` as `nobody` with no capabilities (see
/// [`unprivileged`]), if it cannot: not root, no `setpriv`, or `nobody` cannot execute the binary.
pub fn cannot_drop_privileges() -> Option<String> {
    if !is_root() {
        return Some("not root, so privileges cannot be dropped".into());
    }
    let setpriv = Command::new("setpriv").arg("--version").output();
    if !matches!(setpriv, Ok(ref o) if o.status.success()) {
        return Some("setpriv (util-linux) is not installed".into());
    }
    let probe = unprivileged(Path::new("/"), &["--version"]);
    (probe.code != Some(0)).then(|| {
        format!(
            "`nobody` cannot execute {} ({})",
            bin(),
            probe.stderr.trim()
        )
    })
}

/// Runs `linerate args` in `dir` as `nobody` (uid and gid 65534) with no capabilities.
pub fn unprivileged(dir: &Path, args: &[&str]) -> Out {
    unprivileged_with(dir, args, |_| {})
}

/// [`unprivileged`], the command adjusted by `adjust` (environment, ...) first.
pub fn unprivileged_with(dir: &Path, args: &[&str], adjust: impl FnOnce(&mut Command)) -> Out {
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        bin(),
    ])
    .args(args)
    .current_dir(dir);
    adjust(&mut cmd);
    output(cmd)
}
