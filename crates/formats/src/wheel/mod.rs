//! The Python wheel format (PEP 427 and the PyPA "binary distribution format" and "recording
//! installed projects" specifications): a reproducible zip writer
//! ([`zip_write`]), a bounded zip reader for wheels nobody vouches for ([`zip_read`]), `RECORD`
//! ([`record`]) and the `METADATA` / `WHEEL` header files and names ([`metadata`]).

pub mod metadata;
pub mod record;
pub mod zip_read;
pub mod zip_write;

pub use metadata::{
    escape_name, normalize_name, wheel_file_name, CoreMetadata, WheelFile, MAX_METADATA_BYTES,
};
pub use record::{Record, RecordEntry};
pub use zip_read::{ZipLimits, ZipReader};
pub use zip_write::ZipWriter;
