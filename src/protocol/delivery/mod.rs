//! What reaches an agent's session: inbox notifications, the read cursor, the primer served at
//! session start, and the agent CLIs' hook configurations.

pub mod agent_hooks;
pub mod agent_text;
pub mod aider;
pub mod catch_up;
pub mod codex_trust;
pub mod gemini_trust;
pub mod inbox;
pub mod index_state;
pub mod jsonc;
pub mod notice;
pub mod primer;
pub mod settings_check;
