//! Reproducible tar members (GNU headers, root:root, fixed mtime, `./` names) and safe reading.
