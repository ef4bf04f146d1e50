//! `polisd status` (to be written).

pub fn run(_args: crate::cli::JsonPolisArg) -> anyhow::Result<u8> {
    anyhow::bail!("not implemented yet")
}
