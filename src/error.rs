//! The errors a command ends with, and the one place where they become exit codes
//! (0 ok · 1 runtime failure · 2 bad usage · 3 a latency threshold was exceeded: the last is an
//! outcome of a finished run, see `RunResult::exit_code`).

/// Why a command could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Bad usage or input, found before anything was measured or written: one sentence naming
    /// the value and the fix.
    #[error("{0}")]
    Usage(String),
    /// A failure while running (the outputs that could be written were).
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    /// The process exit code of this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Runtime(_) => 1,
        }
    }
}

/// A usage error found while validating arguments: one sentence naming the bad value and the
/// fix (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Self {
        Error::Usage(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_runtime_errors_exit_1() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Runtime("x".into()).exit_code(), 1);
        assert_eq!(Error::from(UsageError("bad".into())).to_string(), "bad");
    }
}
