//! polisd: keeps a Polis Protocol folder (`_polis/`) current while AI agents edit plain files.
//!
//! The folders are the layers, and each depends only on those above it in this list
//! (`tests/architecture.rs` holds it so; `docs/ARCHITECTURE.md` is the map):
//!
//! - [`yaml`]: PyYAML-compatible reading and writing. Pure.
//! - [`protocol`]: every rule of the Polis Protocol, as functions over text and parsed values
//!   that return findings and outputs. Pure: no file, clock, socket or thread.
//! - [`fs`]: the shell's hands: reading a polis from disk, the one writer, machine-local state.
//! - [`operations`]: the application layer. Each protocol action (reconcile, route, tally,
//!   deliver a notice, edit an agent's file) is written once here, and every front end calls it.
//! - [`daemon`]: watching a polis and reacting to its changes; configuration and the user service.
//! - [`bench`]: the routing simulation behind `polisd bench routing`.
//! - [`dashboard`]: the read-only web view with live updates (`polisd run`, `polisd serve`).
//! - [`mcp`]: the MCP server (`polisd mcp`), a front end over `operations` on the `rmcp` SDK.
//! - [`commands`]: the command line: argument types, one module per command, the demo.

pub mod yaml;

pub mod protocol;

pub mod fs;

pub mod operations;

pub mod daemon;

pub mod bench;

pub mod dashboard;
pub mod mcp;

pub mod commands;

pub use commands::run;
