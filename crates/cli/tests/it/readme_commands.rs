//! Every command in README.md's ```sh blocks runs and exits 0.
//!
//! README.md is read when the test runs, so edits to it are checked as they are made. Commands
//! (lines joined at a trailing `\`, `#` comments dropped) run block by block with `bash`, each
//! block in a scratch directory of its own that links every top-level entry of the repository
//! except `target/`, so relative paths resolve as from the repository root and files the commands
//! write (`-o host.json`, `> out.txt`) land in the scratch directory, where only later lines of
//! the same block see them. `target/release/linerate` is replaced by the binary under test.
//!
//! Not run: the set-up lines `bash scripts/setup.sh && ...` (what CI runs, and this test is part
//! of it), `cargo` commands (`cargo build --release` built the binary this test runs; a nested
//! cargo would rebuild the binaries other tests are executing), and the commands another test
//! takes from README.md, runs with [`run_readme_command`] and checks more closely
//! ([`RUN_BY_OTHER_TESTS`]). Kernel-backed commands (`--kernel`, `calibrate`) go through
//! [`linerate_kernel::usable_or_skip`]; a command whose program is not installed prints
//! `SKIPPED:`. Either way the rest of its block is skipped too, since later lines may read what it
//! writes.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, output, TempDir};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One command of a ```sh block, with the README line it starts on.
#[derive(Debug)]
struct ReadmeCommand {
    line: usize,
    text: String,
}

/// The text before an unquoted `#` that starts a word.
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// The commands of each ```sh block of `readme`, block by block.
fn sh_blocks(readme: &str) -> Vec<Vec<ReadmeCommand>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<ReadmeCommand>> = None;
    let mut pending: Option<ReadmeCommand> = None;
    for (i, raw) in readme.lines().enumerate() {
        let fence = raw.trim_start();
        if fence.starts_with("```") {
            match current.take() {
                Some(block) => {
                    assert!(
                        pending.is_none(),
                        "README.md line {}: a command continues past its block",
                        i + 1
                    );
                    blocks.push(block);
                }
                None if fence.trim_end() == "```sh" => current = Some(Vec::new()),
                None => {}
            }
            continue;
        }
        let Some(block) = current.as_mut() else {
            continue;
        };
        let line = strip_comment(raw).trim_end();
        let (line, continues) = match line.strip_suffix('\\') {
            Some(head) => (head.trim_end(), true),
            None => (line, false),
        };
        let command = match pending.take() {
            Some(mut c) => {
                c.text.push(' ');
                c.text.push_str(line.trim());
                c
            }
            None if line.trim().is_empty() => continue,
            None => ReadmeCommand {
                line: i + 1,
                text: line.trim().to_string(),
            },
        };
        if continues {
            pending = Some(command);
        } else {
            block.push(command);
        }
    }
    assert!(current.is_none(), "README.md ends inside a code block");
    blocks
}

/// The README's host co-location profile: it keeps both cores busy for half a minute, so it runs
/// once in the suite, in `colocate_command::host_profile_train_predict`, which trains and predicts
/// from what it writes.
pub(crate) const HOST_PROFILE: &str =
    "target/release/linerate colocate profile examples/xdp_flow_huge.o --backend host";

/// README commands (by how they start) that another test runs from README.md's text, each with
/// the test that does.
const RUN_BY_OTHER_TESTS: &[(&str, &str)] =
    &[(HOST_PROFILE, "colocate_command::host_profile_train_predict")];

/// Why a command is not run here at all, if it is not.
fn not_run(text: &str) -> Option<String> {
    if text.starts_with("bash scripts/setup.sh") {
        Some("set-up line (what CI runs)".to_string())
    } else if text.starts_with("cargo ") {
        Some("cargo command (it built the binary under test)".to_string())
    } else {
        RUN_BY_OTHER_TESTS
            .iter()
            .find(|(start, _)| text.starts_with(start))
            .map(|(_, test)| format!("run and checked by {test}"))
    }
}

/// Runs the one README command that starts with `start`, as [`every_readme_command_runs`]
/// would, in a scratch directory it returns; panics naming the command if it is missing, not
/// alone, or fails.
pub(crate) fn run_readme_command(start: &str) -> TempDir {
    let matching: Vec<ReadmeCommand> = readme_blocks()
        .into_iter()
        .flatten()
        .filter(|c| c.text.starts_with(start))
        .collect();
    let [command] = &matching[..] else {
        panic!(
            "README.md should hold one command starting `{start}`, holds {}",
            matching.len()
        );
    };
    let dir = scratch_root();
    let out = run_with_bash(&dir, &under_test(&command.text));
    assert_eq!(
        out.code,
        Some(0),
        "README.md line {}: `{}`: {}",
        command.line,
        command.text,
        out.stderr.trim()
    );
    dir
}

/// The commands of README.md's ```sh blocks, read now.
fn readme_blocks() -> Vec<Vec<ReadmeCommand>> {
    let readme =
        std::fs::read_to_string(repo_root().join("README.md")).expect("README.md is readable");
    sh_blocks(&readme)
}

/// A README command's text with the binary under test for `target/release/linerate`.
fn under_test(text: &str) -> String {
    text.replace("target/release/linerate", bin())
}

/// Runs `text` with `bash` in `dir` as a reader's shell would, stopping at the first failure of
/// a pipeline.
fn run_with_bash(dir: &TempDir, text: &str) -> common::Out {
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-o", "pipefail", "-c", text])
        .current_dir(dir.path());
    output(cmd)
}

/// Whether `program` can be started: a path that exists or a name found in `PATH`.
fn installed(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A scratch directory that looks like the repository root: a link to every top-level entry but
/// `target/` and `.git`.
fn scratch_root() -> TempDir {
    let dir = TempDir::new("readme");
    let root = repo_root();
    for entry in std::fs::read_dir(&root).expect("list the repository root") {
        let entry = entry.expect("entry");
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        std::os::unix::fs::symlink(root.join(&name), dir.path().join(&name))
            .expect("link a repository entry");
    }
    dir
}

/// Runs one block's commands in order in a scratch directory of its own; returns how many ran
/// and the failure that stopped the block, if one did.
fn run_block(block: &[ReadmeCommand]) -> (usize, Option<String>) {
    let dir = scratch_root();
    let mut ran = 0;
    for command in block {
        if let Some(why) = not_run(&command.text) {
            println!(
                "not run: README.md line {}: {} ({why})",
                command.line, command.text
            );
            continue;
        }
        let text = under_test(&command.text);
        let program = text.split_whitespace().next().unwrap_or_default();
        let skip = if !installed(program) {
            println!(
                "SKIPPED: README.md line {}: {program} is not installed",
                command.line
            );
            true
        } else if text.contains(" --kernel") || text.contains(" calibrate") {
            !linerate_kernel::usable_or_skip(&format!("README.md line {}", command.line))
        } else {
            false
        };
        if skip {
            println!("  (and the rest of its block)");
            break;
        }
        let out = run_with_bash(&dir, &text);
        ran += 1;
        if out.code != Some(0) {
            // Later lines of the block may read what this one should have written.
            let failure = format!(
                "README.md line {}: `{}` exited with {:?}:\n{}",
                command.line,
                command.text,
                out.code,
                out.stderr.trim()
            );
            return (ran, Some(failure));
        }
    }
    (ran, None)
}

/// Blocks are run two at a time, each in its own directory: a reader copies one block, so no
/// block may need files another wrote, and the README's two slowest blocks (the host
/// co-location profile, the default report) need not wait for each other.
#[test]
fn every_readme_command_runs() {
    let blocks = readme_blocks();
    assert!(!blocks.is_empty(), "README.md has no ```sh block");
    let results = linerate_testkit::map_in_parallel(&blocks, 2, |block| run_block(block));
    let ran: usize = results.iter().map(|(ran, _)| ran).sum();
    let failures: Vec<&str> = results
        .iter()
        .filter_map(|(_, failure)| failure.as_deref())
        .collect();
    assert!(
        failures.is_empty(),
        "README commands fail:\n{}",
        failures.join("\n")
    );
    assert!(ran > 0, "no README command ran");
    println!("{ran} README commands ran");
}

#[test]
fn commands_are_read_like_a_shell_reads_them() {
    let text = "\
intro
```sh
# a comment line
cmd one   # trailing comment
cmd two \\
    --flag x  # after a continuation
echo 'not # a comment' \"nor # this\"
```
```json
{\"not\": \"run\"}
```
```sh
last
```
";
    let blocks = sh_blocks(text);
    let texts: Vec<Vec<&str>> = blocks
        .iter()
        .map(|b| b.iter().map(|c| c.text.as_str()).collect())
        .collect();
    assert_eq!(
        texts,
        vec![
            vec![
                "cmd one",
                "cmd two --flag x",
                "echo 'not # a comment' \"nor # this\""
            ],
            vec!["last"],
        ]
    );
    assert_eq!(blocks[0][1].line, 5);
}
