//! A map that refuses a seed entry fails every command that seeds maps the same way: one line
//! naming the map, the entry and the errno, whichever engine and whichever mode (maps persisting
//! in `run`, fresh per packet in `cost --packets`).

use crate::common;

use common::*;

const PACKET: &str = "02000000000202000000000108004500001c000040004011b6cdc0000201c0000202";

#[test]
fn a_refused_seed_entry_fails_run_and_cost_alike() {
    let dir = TempDir::new("seeding");
    for name in ["xdp_router.o", "xdp_router.packets"] {
        dir.write(name, std::fs::read(example(name)).unwrap());
    }
    // `router_stats` is an array of 4 entries: index 9 has the right size but no slot.
    dir.write(
        "past_end.json",
        r#"{"router_stats": [{"key": "00000000", "value": "0100000000000000"},
                             {"key": "09000000", "value": "0100000000000000"}]}"#,
    );
    let refused = "cannot seed map `router_stats` with key 09000000 (entry 1): error -7";
    let mut commands = vec![
        vec![
            "run",
            "xdp_router.o",
            "--packet",
            PACKET,
            "--maps",
            "past_end.json",
        ],
        vec![
            "cost",
            "xdp_router.o",
            "--packets",
            "xdp_router.packets",
            "--maps",
            "past_end.json",
        ],
    ];
    match kernel_available() {
        Ok(()) => commands.push(vec![
            "run",
            "xdp_router.o",
            "--kernel",
            "--packet",
            PACKET,
            "--maps",
            "past_end.json",
        ]),
        Err(reason) => println!("SKIPPED (run --kernel half): {reason}"),
    }
    for args in &commands {
        let line = expect_error_in(&dir, args, &[refused]);
        assert_eq!(line, format!("error: {refused}"), "`{}`", args.join(" "));
    }
}
