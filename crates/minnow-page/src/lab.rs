//! # The course labs' "not written yet" error
//!
//! minnow doubles as course material: `cargo xtask lab start N DIR` writes a student workspace
//! in which the bodies of lab N's functions (marked in the engine's source between
//! `// lab N begin` and `// lab N end` comments) are replaced by starter code that compiles and
//! returns this error, never `todo!()`. The engine's own code is the reference solution, so
//! nothing in this repository ever returns it; each crate that hosts a lab wraps it in its
//! error enum so that a half-written workspace still compiles, runs and fails its graded tests
//! with a message saying which function is missing. docs/labs/ has the handouts.

/// A lab function the student has not written yet (only a lab starter workspace returns this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("lab {lab}: `{function}` is not written yet (docs/labs/ has the handout)")]
pub struct NotWritten {
    /// The lab's number (1-6).
    pub lab: u8,
    /// The function whose body the student writes.
    pub function: &'static str,
}

impl NotWritten {
    /// The error for lab `lab`'s function `function`.
    pub const fn new(lab: u8, function: &'static str) -> Self {
        NotWritten { lab, function }
    }
}

#[cfg(test)]
mod tests {
    use super::NotWritten;

    #[test]
    fn names_the_lab_and_the_function() {
        let e = NotWritten::new(3, "parse_group");
        assert_eq!(
            e.to_string(),
            "lab 3: `parse_group` is not written yet (docs/labs/ has the handout)"
        );
    }
}
