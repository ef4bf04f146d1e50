//! The `polisd` command: parse arguments, run, map the result to an exit code.

fn main() -> std::process::ExitCode {
    polisd::run()
}
