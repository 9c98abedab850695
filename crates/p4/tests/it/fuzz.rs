//! Property test standing in for a fuzzer: random bytes and random token-level mutations of the
//! shipped programs go through the whole front end, which must answer Ok or Err, never panic
//! (this runs in debug builds too, where arithmetic overflow would panic).

use linerate_p4::error::SourceMap;
use linerate_p4::lexer::lex;
use linerate_p4::load_str;
use proptest::prelude::*;
use std::path::PathBuf;

const PROGRAMS: [&str; 4] = [
    "l3_fwd.p4",
    "l3_fwd_firewall.p4",
    "vlan_acl_switch.p4",
    "ipip_tunnel.p4",
];

/// Token texts that mutations insert: keywords, punctuation that the parser forks on, literals.
const INSERTIONS: [&str; 40] = [
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    ">>",
    ";",
    ":",
    ",",
    ".",
    "=",
    "&&&",
    "..",
    "_",
    "default",
    "bit<8>",
    "bit<200>",
    "int",
    "header",
    "struct",
    "state",
    "transition",
    "select",
    "table",
    "key",
    "actions",
    "apply",
    "if",
    "else",
    "switch",
    "hdr",
    "0",
    "8w300",
    "0xffffffffffffffffffffffffffffffffff",
    "#include <xdp.p4>",
    "error.NoError",
    "/*",
];

fn source(name: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/p4")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    (path.display().to_string(), text)
}

/// Byte ranges of the tokens of `text`.
fn token_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut sources = SourceMap::default();
    let file = sources.add(String::from("m.p4"), text.to_string());
    lex(&sources, file, text)
        .map(|tokens| {
            tokens
                .iter()
                .map(|t| (t.span.start as usize, t.span.end as usize))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, count: usize },
    Insert { at: usize, what: usize },
    Swap { a: usize, b: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1usize..4).prop_map(|(at, count)| Mutation::Delete { at, count }),
        (any::<usize>(), 0..INSERTIONS.len()).prop_map(|(at, what)| Mutation::Insert { at, what }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap { a, b }),
    ]
}

/// Applies one mutation at token granularity.
fn mutate(text: &str, m: &Mutation) -> String {
    let ranges = token_ranges(text);
    if ranges.is_empty() {
        return text.to_string();
    }
    let pick = |i: usize| ranges[i % ranges.len()];
    let slice = |a: usize, b: usize| text.get(a..b).unwrap_or("");
    match m {
        Mutation::Delete { at, count } => {
            let first = pick(*at);
            let last = pick(at.saturating_add(count.saturating_sub(1)));
            let end = last.1.max(first.1);
            format!("{}{}", slice(0, first.0), slice(end, text.len()))
        }
        Mutation::Insert { at, what } => {
            let (start, _) = pick(*at);
            format!(
                "{} {} {}",
                slice(0, start),
                INSERTIONS[*what],
                slice(start, text.len())
            )
        }
        Mutation::Swap { a, b } => {
            let (x, y) = (pick(*a), pick(*b));
            let (first, second) = if x.0 <= y.0 { (x, y) } else { (y, x) };
            if first.1 > second.0 {
                return text.to_string();
            }
            format!(
                "{}{}{}{}{}",
                slice(0, first.0),
                slice(second.0, second.1),
                slice(first.1, second.0),
                slice(first.0, first.1),
                slice(second.1, text.len())
            )
        }
    }
}

/// The front end turns a panic on its thread into an "internal error"; the properties treat that
/// as the failure it is.
fn answered_without_panic(name: &str, text: &str) -> bool {
    match load_str(name, text) {
        Ok(_) => true,
        Err(e) => !e.to_string().contains("internal error"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        prop_assert!(answered_without_panic("random.p4", &text));
    }

    #[test]
    fn random_p4_like_text_never_panics(
        text in "(#include <xdp.p4>\n)?[a-z_ (){}<>\\[\\];:.,=&|+*/%^~!?0-9xw@\"#-]{0,300}"
    ) {
        prop_assert!(answered_without_panic("random.p4", &text));
    }

    #[test]
    fn mutated_programs_never_panic(
        which in 0..PROGRAMS.len(),
        mutations in proptest::collection::vec(mutation(), 1..5),
    ) {
        let (name, original) = source(PROGRAMS[which]);
        prop_assert!(!original.is_empty());
        let mut text = original;
        for m in &mutations {
            text = mutate(&text, m);
        }
        prop_assert!(answered_without_panic(&name, &text));
    }
}

#[test]
fn mutations_change_the_outcome_sometimes() {
    // Guards the property test against mutating nothing: deleting the first `{` of a program
    // must make it fail.
    let (name, text) = source("l3_fwd.p4");
    assert!(load_str(&name, &text).is_ok());
    let brace = text.find('{').unwrap_or(0);
    let broken = format!("{}{}", &text[..brace], &text[brace + 1..]);
    assert!(load_str(&name, &broken).is_err());
    let swapped = mutate(&text, &Mutation::Swap { a: 10, b: 20 });
    assert_ne!(swapped, text);
}
