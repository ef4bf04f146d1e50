//! Frontmatter splitting and parsing: never panics, and the split pieces are consistent with
//! the text they came from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use polisd::protocol::frontmatter;
use polisd::yaml::Value;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let normal = frontmatter::normalise(&text);
    assert!(!normal.contains('\r'));
    let split = frontmatter::split(&normal);
    assert!(
        normal.ends_with(split.body),
        "the body is the end of the text"
    );
    assert!(split.body_line >= 1 && split.yaml_line >= 1);
    if let Some(yaml) = split.yaml {
        assert!(normal.starts_with("---"));
        assert!(split.body_line > split.yaml_line);
        assert!(normal.contains(yaml));
    } else {
        assert_eq!(split.body, &*normal);
        assert_eq!(split.body_line, 1);
    }
    match frontmatter::parse(&text) {
        Ok(record) => {
            assert!(matches!(record.fields, Value::Map(_)));
            assert_eq!(record.body, split.body);
            assert_eq!(record.body_line, split.body_line);
        }
        Err(e) => {
            assert!(e.line() >= 1, "error lines are 1-based: {e:?}");
            let _ = e.to_string();
        }
    }
});
