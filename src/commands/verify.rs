//! `polisd verify` (to be written).

pub fn run(_args: crate::cli::VerifyArgs) -> anyhow::Result<u8> {
    anyhow::bail!("not implemented yet")
}
