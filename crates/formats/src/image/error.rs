//! Image unpacking's refusals: limits, digests, and a signal that ended the run.

/// Why an image was not (fully) unpacked; its temporary root is removed.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Unpacking an image would pass one of its limits ([`super::ImageLimits`]).
    #[error(
        "{place}: {entry:?} would pass the image limit {limit}={max} (it needs {needed}); refused \
         before writing it. If the image is trusted, raise the limit: --image-limit {limit}=N"
    )]
    ImageLimit {
        /// What was being unpacked: "the image archive", "layer 2 of 5 (sha256:…)".
        place: String,
        /// The entry (or blob) that would pass the limit.
        entry: String,
        /// The limit's `--image-limit` key.
        limit: &'static str,
        max: u64,
        needed: u64,
    },
    /// A blob of an image does not hash to the digest that names it.
    #[error(
        "{blob} does not match its digest {expected} (got {actual}): the image is corrupt or was \
         tampered with"
    )]
    ImageDigestMismatch {
        /// Which blob: "layer 2 of 5 (sha256:…)", "the config", "layer 1's diff_id".
        blob: String,
        expected: String,
        actual: String,
    },
    /// SIGINT, SIGTERM or SIGHUP ended the run; its temporary files were removed (exit
    /// 128+signal).
    #[error("interrupted by signal {signal}; the temporary image root was removed")]
    Interrupted { signal: i32 },
    /// A malformed image layout, config or layer, in the words of the check that refused it.
    #[error("{0}")]
    Invalid(String),
}

impl ImageError {
    /// Whether the error names the layer or archive it is about (limits, digests and signals
    /// do; the unpacker adds the place to the others).
    pub fn names_its_place(&self) -> bool {
        !matches!(self, ImageError::Invalid(_))
    }
}

/// The first [`ImageError`] in `err`'s chain: whether it already names its place.
pub(crate) fn find(err: &anyhow::Error) -> Option<&ImageError> {
    err.chain()
        .find_map(|link| link.downcast_ref::<ImageError>())
}

/// A malformed image, as an `anyhow::Error` carrying [`ImageError::Invalid`].
pub(crate) fn invalid(message: impl Into<String>) -> anyhow::Error {
    ImageError::Invalid(message.into()).into()
}
