//! The integration tests of `cli`, one module per concern, linked into one test binary
//! (one link against the workspace and Z3 instead of one per file).

mod common;

mod bad_input;
mod bound_command;
mod calibrate_command;
mod colocate_command;
mod cost_command;
mod html_pages;
mod hxdp_command;
mod inputs_and_text;
mod json_contracts;
mod jumbo_packets;
mod kfuncs;
mod measure_command;
mod model_host;
mod objdump_releases;
mod optimize_command;
mod p4_command;
mod p4_compiled;
mod program_kinds;
mod readme_commands;
mod report_command;
mod seeding;
mod source_lines;
