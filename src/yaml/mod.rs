//! YAML as the protocol needs it: PyYAML-compatible typing on read, PyYAML-identical bytes on
//! write. See README "Why not serde_yaml" for why this is our own layer over yaml-rust2.

mod emit;
mod load;
mod plain;
mod quote;
mod resolve;
mod strict;
mod value;

pub use emit::{dump, DumpOptions, EmitError};
pub use load::{load, load_full, YamlError, MAX_DEPTH, MAX_NODES};
pub use quote::{excerpt, quoted, QUOTED_CHARS};
pub use resolve::common_timestamp;
pub use value::{python_float_repr, Mapping, Timestamp, Value};
