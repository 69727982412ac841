//! Why an ELF file could not be read.

/// Why an ELF file could not be read as a shared library.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    /// Not an ELF file, or one whose headers or tables do not hold together.
    #[error("{0}")]
    Invalid(String),
}

/// A malformed ELF file, as an `anyhow::Error` carrying [`ElfError::Invalid`].
pub(super) fn invalid(message: impl Into<String>) -> anyhow::Error {
    ElfError::Invalid(message.into()).into()
}
