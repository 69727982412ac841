//! ELF facts the pipeline needs: SONAME, NEEDED, and exported dynamic symbols with their
//! symbol versions (versym joined with verdef, so `hsa_amd_signal_create_v2@@ROCR_1`).
//! Knows nothing of ROCm.

use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportedSymbol {
    pub name: String,
    /// The symbol version (e.g. "ROCR_1"), None for unversioned symbols.
    pub version: Option<String>,
    /// True for the default version (`@@`), false for a hidden one (`@`).
    pub default: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ElfInfo {
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// Defined (not undefined), global or weak, dynamic symbols.
    pub exports: Vec<ExportedSymbol>,
    /// True for ET_DYN objects.
    pub shared_object: bool,
}

impl ElfInfo {
    pub fn export(&self, name: &str) -> Option<&ExportedSymbol> {
        self.exports.iter().find(|s| s.name == name)
    }
}

/// True when `bytes` starts with the ELF magic.
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

/// Parse an ELF image held in memory (or mapped). Errors on malformed input, never panics.
pub fn parse_elf(_bytes: &[u8]) -> anyhow::Result<ElfInfo> {
    todo!("elf: parse")
}

/// Map and parse the file at `path` (follows symlinks). The error names the path.
pub fn read_elf(_path: &Path) -> anyhow::Result<ElfInfo> {
    todo!("elf: read file")
}
