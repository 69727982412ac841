//! This process's name (`argv[0]`'s last component), for what the crate shows of the program
//! using it without knowing which program that is: the temporary files it creates while it
//! works (`.<program>-deb.*` beside an output, `<program>-image-*` in the temporary directory)
//! and the last line it prints when a signal ends the process.

use std::path::Path;
use std::sync::OnceLock;

/// The running program's name, e.g. `dpkg-tool` for `/usr/bin/dpkg-tool`; `program` when
/// `argv[0]` is missing or empty.
pub fn name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        std::env::args_os()
            .next()
            .and_then(|arg| {
                Path::new(&arg)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "program".to_string())
    })
}
