//! dpkg's path-exclude / path-include configuration (dpkg.cfg.d): excluded files are absent by design.
