//! `polisd check` (to be written).

pub fn run(_args: crate::cli::CheckArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not implemented yet")
}
