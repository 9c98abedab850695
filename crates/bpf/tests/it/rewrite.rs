//! The ELF writer of `linerate optimize` on every example object and every program in it: an
//! identity rewrite gives the input bytes back; inserting a `ja +0` into a program's entry
//! function gives an object that reads as the same program with that slot inserted (calls,
//! jumps, functions, func_info and line_info shifted) and every other program, map and BTF as
//! they were; removing the inserted slot again gives the input bytes back. Removing a slot moves
//! its line_info record to the next slot; malformed objects and replacements are refused by name.

#[path = "support/insert_ja.rs"]
mod insert_ja;

use insert_ja::{insert_ja, JA0};
use linerate_bpf::rewrite::{pinned_slots, rewrite_object, Replacement, RewriteError};
use linerate_bpf::{read_object, Object, RawInsn};

fn examples() -> Vec<(String, Vec<u8>, Object)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    paths.sort();
    for path in paths {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let object = read_object(&bytes, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        out.push((name, bytes, object));
    }
    assert!(out.len() >= 40, "only {} examples", out.len());
    out
}

fn identity<'a>(
    object: &'a Object,
    program: usize,
    map: &'a mut Vec<Option<usize>>,
) -> Replacement<'a> {
    let p = &object.programs[program];
    let len = p.functions[0].len;
    *map = (0..len).map(Some).collect();
    Replacement {
        program: &p.name,
        insns: &p.insns[..len],
        slot_map: map,
    }
}

#[test]
fn identity_rewrites_give_the_input_bytes() {
    let mut programs = 0;
    for (name, bytes, object) in examples() {
        for (i, p) in object.programs.iter().enumerate() {
            let mut map = Vec::new();
            let out = rewrite_object(&bytes, &[identity(&object, i, &mut map)])
                .unwrap_or_else(|e| panic!("{name}/{}: {e}", p.name));
            assert!(
                out == bytes,
                "{name}/{}: identity rewrite changed bytes",
                p.name
            );
            programs += 1;
        }
        let mut maps = vec![Vec::new(); object.programs.len()];
        let all: Vec<Replacement> = maps
            .iter_mut()
            .enumerate()
            .map(|(i, m)| identity(&object, i, m))
            .collect();
        assert!(
            rewrite_object(&bytes, &all).unwrap() == bytes,
            "{name}: all programs"
        );
    }
    assert!(programs >= 45, "{programs} programs");
}

#[test]
fn an_inserted_slot_reads_back_shifted_and_removing_it_restores_the_input() {
    let mut rewritten = 0;
    let cases = examples();
    for ((name, bytes, object), front) in cases.iter().flat_map(|e| [(e, false), (e, true)]) {
        for (index, p) in object.programs.iter().enumerate() {
            let at = format!("{name}/{} (front {front})", p.name);
            let pinned = pinned_slots(bytes, &p.name).unwrap();
            let Some(ins) = insert_ja(p, &pinned, front) else {
                continue;
            };
            let out = rewrite_object(
                bytes,
                &[Replacement {
                    program: &p.name,
                    insns: &ins.insns,
                    slot_map: &ins.slot_map,
                }],
            )
            .unwrap_or_else(|e| panic!("{at}: {e}"));
            let again = read_object(&out, name).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(again.programs.len(), object.programs.len(), "{at}");
            for (j, (a, b)) in again.programs.iter().zip(&object.programs).enumerate() {
                let want = if j == index { &ins.expected } else { b };
                assert!(a == want, "{at}: program {} read back differs", b.name);
            }
            assert_eq!(
                format!("{:?}", again.maps),
                format!("{:?}", object.maps),
                "{at}"
            );
            assert_eq!(again.kfuncs, object.kfuncs, "{at}");
            assert_eq!(again.license, object.license, "{at}");
            let (a, b) = (again.btf.as_ref(), object.btf.as_ref());
            assert_eq!(a.map(|b| &b.btf), b.map(|b| &b.btf), "{at}: BTF");
            assert_eq!(
                a.map(|b| &b.kernel_bytes),
                b.map(|b| &b.kernel_bytes),
                "{at}"
            );
            assert_eq!(a.and_then(|b| b.ext_error.clone()), None, "{at}");

            // Back out: remove the inserted slot. The other slots are the original ones but
            // the pinned, which are as the rewritten object links them.
            let len = ins.insns.len();
            let mut back = p.insns[..len - 1].to_vec();
            let repinned = pinned_slots(&out, &p.name).unwrap();
            assert_eq!(repinned.len(), pinned.len(), "{at}");
            for &q in &repinned {
                let old = if q > ins.at { q - 1 } else { q };
                back[old] = again.programs[index].insns[q];
            }
            let slot_map: Vec<Option<usize>> = (0..len)
                .map(|j| match j.cmp(&ins.at) {
                    std::cmp::Ordering::Less => Some(j),
                    std::cmp::Ordering::Equal => None,
                    std::cmp::Ordering::Greater => Some(j - 1),
                })
                .collect();
            assert_eq!(again.programs[index].insns[ins.at], JA0, "{at}");
            let restored = rewrite_object(
                &out,
                &[Replacement {
                    program: &p.name,
                    insns: &back,
                    slot_map: &slot_map,
                }],
            )
            .unwrap_or_else(|e| panic!("{at}: removing: {e}"));
            assert!(
                &restored == bytes,
                "{at}: removing the inserted slot does not restore the input"
            );
            rewritten += 1;
        }
    }
    assert!(rewritten >= 45, "{rewritten} programs rewritten");
}

/// An example program and an entry-function slot `i` (not pinned, not part of an `ld_imm64`,
/// not a jump target, not the first) that has a line_info record while the next slot has none.
fn removable_with_line(object: &Object, pinned: &[usize], program: usize) -> Option<usize> {
    let p = &object.programs[program];
    let len = p.functions[0].len;
    let has_line = |s: usize| p.line_info.iter().any(|l| l.slot == s);
    let targets: Vec<i64> = (0..len)
        .filter_map(|s| {
            let r = p.insns[s];
            let jump = matches!(r.code & 7, 5 | 6) && !matches!(r.code & 0xf0, 0x80 | 0x90);
            jump.then(|| s as i64 + i64::from(r.off) + 1)
        })
        .collect();
    (1..len.saturating_sub(2)).find(|&i| {
        !pinned.contains(&i)
            && !p.insns[i].is_wide()
            && !p.insns[i - 1].is_wide()
            && p.insns[i].code & 7 != 5
            && has_line(i)
            && !has_line(i + 1)
            && !targets.contains(&(i as i64))
    })
}

#[test]
fn a_removed_slots_line_info_moves_to_the_next_slot() {
    let mut checked = 0;
    for (name, bytes, object) in examples() {
        for (index, p) in object.programs.iter().enumerate() {
            let pinned = pinned_slots(&bytes, &p.name).unwrap();
            let Some(i) = removable_with_line(&object, &pinned, index) else {
                continue;
            };
            // Removing slot i changes what the program does; reading only needs its shape.
            let len = p.functions[0].len;
            let mut insns: Vec<RawInsn> = p.insns[..len].to_vec();
            let mut slot_map: Vec<Option<usize>> = Vec::with_capacity(len);
            for (s, r) in insns.iter_mut().enumerate() {
                slot_map.push(match s.cmp(&i) {
                    std::cmp::Ordering::Less => Some(s),
                    std::cmp::Ordering::Equal => None,
                    std::cmp::Ordering::Greater => Some(s - 1),
                });
                let jump = matches!(r.code & 7, 5 | 6) && !matches!(r.code & 0xf0, 0x80 | 0x90);
                if jump && s < i && s as i64 + i64::from(r.off) + 1 > i as i64 {
                    r.off -= 1;
                }
                if jump && s > i && s as i64 + i64::from(r.off) + 1 < i as i64 {
                    r.off += 1;
                }
            }
            insns.remove(i);
            let at = format!("{name}/{} slot {i}", p.name);
            let out = rewrite_object(
                &bytes,
                &[Replacement {
                    program: &p.name,
                    insns: &insns,
                    slot_map: &slot_map,
                }],
            )
            .unwrap_or_else(|e| panic!("{at}: {e}"));
            let again = read_object(&out, &name).unwrap_or_else(|e| panic!("{at}: {e}"));
            let q = &again.programs[index];
            let moved = p.line_info.iter().find(|l| l.slot == i).unwrap();
            let now = q.line_info.iter().find(|l| l.slot == i);
            assert_eq!(now.map(|l| &l.source), Some(&moved.source), "{at}");
            assert_eq!(
                q.line_info.len(),
                p.line_info.len(),
                "{at}: one record moved, none lost"
            );
            assert_eq!(q.insns.len(), p.insns.len() - 1, "{at}");
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} programs");
}

#[test]
fn malformed_objects_and_replacements_are_refused_by_name() {
    let (name, bytes, object) = examples()
        .into_iter()
        .find(|(n, _, _)| n == "xdp_mixed")
        .unwrap();
    let p = &object.programs[0];
    let len = p.functions[0].len;
    let pinned = pinned_slots(&bytes, &p.name).unwrap();
    assert!(!pinned.is_empty(), "{name}: {} has map references", p.name);
    let identity: Vec<Option<usize>> = (0..len).map(Some).collect();
    let run = |insns: &[RawInsn], slot_map: &[Option<usize>]| {
        rewrite_object(
            &bytes,
            &[Replacement {
                program: &p.name,
                insns,
                slot_map,
            }],
        )
        .unwrap_err()
        .to_string()
    };
    let entry = &p.insns[..len];
    assert!(run(entry, &identity[1..]).contains("slot_map has"));
    let mut past = identity.clone();
    past[len - 1] = Some(len);
    assert!(run(entry, &past).contains("past the"));
    let mut swapped = identity.clone();
    swapped.swap(0, 1);
    assert!(run(entry, &swapped).contains("order of slots"));
    let first = pinned[0];
    let mut removed = identity.clone();
    removed[first] = None;
    let err = run(entry, &removed);
    assert!(err.contains(&format!("slot {first}")), "{err}");
    let mut changed = entry.to_vec();
    changed[first].imm ^= 1;
    let err = run(&changed, &identity);
    assert!(
        err.contains(&format!("pinned slot {first}")) && err.contains("changed"),
        "{err}"
    );
    let mut call = entry.to_vec();
    let free = (0..len)
        .find(|s| !pinned.contains(s) && !entry[*s].is_wide())
        .unwrap();
    call[free] = RawInsn {
        code: 0x85,
        src: 1,
        imm: 3,
        ..RawInsn::default()
    };
    assert!(run(&call, &identity).contains("no relocation"));

    let unknown = rewrite_object(
        &bytes,
        &[Replacement {
            program: "nope",
            insns: entry,
            slot_map: &identity,
        }],
    );
    assert_eq!(unknown, Err(RewriteError::UnknownProgram("nope".into())));
    let twice = Replacement {
        program: &p.name,
        insns: entry,
        slot_map: &identity,
    };
    assert!(rewrite_object(&bytes, &[twice, twice])
        .unwrap_err()
        .to_string()
        .contains("replaced twice"));

    for cut in (0..bytes.len()).step_by(97) {
        let truncated = &bytes[..cut];
        assert!(pinned_slots(truncated, &p.name).is_err(), "prefix {cut}");
        assert!(rewrite_object(truncated, &[twice]).is_err(), "prefix {cut}");
    }
    let mut garbled = bytes.clone();
    for at in (64..garbled.len()).step_by(13) {
        garbled[at] ^= 0x5a;
    }
    let _ = rewrite_object(&garbled, &[twice]);
}
