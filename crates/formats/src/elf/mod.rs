//! ELF facts a packager needs: SONAME, NEEDED, and exported dynamic symbols with their
//! symbol versions (versym joined with verdef, so `memcpy@@GLIBC_2.14`).
//!
//! The version tables are located the way the dynamic loader finds them, through the dynamic
//! section (`DT_VERSYM`, `DT_VERDEF`, `DT_VERDEFNUM`), falling back to the section headers
//! (`.gnu.version`, `.gnu.version_d`). So a file whose section headers were removed entirely
//! (sstrip) still reports its versions; `strip` keeps both.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use anyhow::Context;
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::section_header::{SectionHeader, SHT_GNU_VERDEF, SHT_GNU_VERSYM};
use goblin::elf::sym::{STB_GLOBAL, STB_GNU_UNIQUE, STB_WEAK, STV_DEFAULT, STV_PROTECTED};
use goblin::elf::symver::{VerdefSection, VersymSection, VERSYM_HIDDEN, VERSYM_VERSION};
use goblin::elf::Elf;

mod error;

use error::invalid;
pub use error::ElfError;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportedSymbol {
    pub name: String,
    /// The symbol version (e.g. "GLIBC_2.14"), None for unversioned symbols.
    pub version: Option<String>,
    /// True for the default version (`@@`), false for a hidden one (`@`).
    /// Unversioned symbols are the default (only) definition of their name: true.
    pub default: bool,
    /// A function (`STT_FUNC`, `STT_GNU_IFUNC`), not data: a stand-in that re-exports the
    /// symbol needs to know which to define.
    #[serde(skip)]
    pub function: bool,
    /// `st_size`: for data, the bytes a program's copy relocation takes.
    #[serde(skip)]
    pub size: u64,
}

impl ExportedSymbol {
    /// The name as `readelf --dyn-syms` and `nm -D` print it: `name`, `name@@VER` (default)
    /// or `name@VER` (hidden, kept for old binaries).
    pub fn versioned_name(&self) -> String {
        match (&self.version, self.default) {
            (None, _) => self.name.clone(),
            (Some(v), true) => format!("{}@@{}", self.name, v),
            (Some(v), false) => format!("{}@{}", self.name, v),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ElfInfo {
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// Defined (not undefined), global or weak, dynamic symbols.
    /// (`STB_GNU_UNIQUE` counts as global: such symbols are exported too.) Symbols with hidden or
    /// internal visibility are not exported and are left out, and so are the absolute marker
    /// symbols ld emits for each version name. In dynamic symbol table order.
    pub exports: Vec<ExportedSymbol>,
    /// True for ET_DYN objects.
    pub shared_object: bool,
}

impl ElfInfo {
    /// The default (or only) definition of `name`, else the first hidden one.
    pub fn export(&self, name: &str) -> Option<&ExportedSymbol> {
        self.exports
            .iter()
            .find(|s| s.name == name && s.default)
            .or_else(|| self.exports.iter().find(|s| s.name == name))
    }
}

/// True when `bytes` starts with the ELF magic.
pub fn is_elf(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\x7fELF")
}

/// Parse an ELF image held in memory (or mapped). Errors on malformed input, never panics.
pub fn parse_elf(bytes: &[u8]) -> anyhow::Result<ElfInfo> {
    if !is_elf(bytes) {
        return Err(invalid("not an ELF file (no \\x7fELF magic)"));
    }
    // goblin is written to return errors on malformed input; this is a backstop so a bug in a
    // dependency cannot take the whole process down on hostile input.
    match std::panic::catch_unwind(|| parse_checked(bytes)) {
        Ok(result) => result,
        Err(_) => Err(invalid("malformed ELF file (the ELF parser gave up on it)")),
    }
}

/// Map and parse the file at `path` (follows symlinks). The error names the path.
pub fn read_elf(path: &Path) -> anyhow::Result<ElfInfo> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    read_elf_file(&file, path)
}

/// Map and parse an already opened file (opened inside a root by `Root::open_regular`);
/// `path` names it in errors.
pub fn read_elf_file(file: &File, path: &Path) -> anyhow::Result<ElfInfo> {
    let meta = file
        .metadata()
        .with_context(|| format!("cannot stat {}", path.display()))?;
    if !meta.is_file() {
        return Err(invalid(format!("{} is not a regular file", path.display())));
    }
    if meta.len() == 0 {
        return Err(invalid(format!(
            "{}: empty file, not an ELF object",
            path.display()
        )));
    }
    // SAFETY: the map is read-only and private; a concurrent writer truncating the file could
    // fault us, which is the same risk every ELF tool (readelf, ld.so) takes.
    let map = unsafe { memmap2::Mmap::map(file) }
        .with_context(|| format!("cannot map {}", path.display()))?;
    parse_elf(&map).with_context(|| format!("{}: cannot read ELF facts", path.display()))
}

fn parse_checked(bytes: &[u8]) -> anyhow::Result<ElfInfo> {
    let elf = Elf::parse(bytes).map_err(|e| invalid(format!("malformed ELF file: {e}")))?;
    let shared_object = elf.header.e_type == goblin::elf::header::ET_DYN;

    let soname = match (&elf.dynamic, elf.soname) {
        (_, Some(s)) => Some(s.to_string()),
        (Some(d), None) if d.info.soname != 0 => {
            return Err(invalid(format!(
                "malformed ELF file: DT_SONAME points outside the dynamic string table (offset {})",
                d.info.soname
            )))
        }
        _ => None,
    };
    let needed = needed_entries(&elf)?;

    let ctx = Ctx::new(
        if elf.is_64 {
            Container::Big
        } else {
            Container::Little
        },
        if elf.little_endian {
            Endian::Little
        } else {
            Endian::Big
        },
    );
    let versions = VersionTables::locate(bytes, &elf, ctx)?;

    let mut exports = Vec::new();
    for (index, sym) in elf.dynsyms.iter().enumerate() {
        if index == 0 || sym.st_shndx == goblin::elf::section_header::SHN_UNDEF as usize {
            continue;
        }
        let bind = sym.st_bind();
        if bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE {
            continue;
        }
        let vis = sym.st_visibility();
        if vis != STV_DEFAULT && vis != STV_PROTECTED {
            continue;
        }
        let name = elf.dynstrtab.get_at(sym.st_name).ok_or_else(|| {
            invalid(format!("malformed ELF file: dynamic symbol {index} has a name offset ({}) outside the string table", sym.st_name))
        })?;
        let (version, default) = versions.version_of(index, name)?;
        // ld emits one absolute symbol per version it defines, named after the version
        // (`GLIBC_2.2.5`, value 0). It marks the version, it is not an interface: readelf prints it
        // without a version and nm lists it as `A`. Leave it out.
        if sym.st_shndx == goblin::elf::section_header::SHN_ABS as usize
            && version.as_deref() == Some(name)
        {
            continue;
        }
        let kind = sym.st_type();
        exports.push(ExportedSymbol {
            name: name.to_string(),
            version,
            default,
            function: kind == goblin::elf::sym::STT_FUNC || kind == goblin::elf::sym::STT_GNU_IFUNC,
            size: sym.st_size,
        });
    }

    Ok(ElfInfo {
        soname,
        needed,
        exports,
        shared_object,
    })
}

/// The dynamic section's loader facts of an object: what ld.so reads to find its
/// dependencies. Read from the program headers (`PT_DYNAMIC`, `PT_LOAD`) only, the way ld.so
/// reads them, so a file of any size costs a few pages and no symbol table is parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DynamicPaths {
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// DT_RPATH entries, split at `:`, in order (unexpanded: `$ORIGIN/../lib`).
    pub rpath: Vec<String>,
    /// DT_RUNPATH entries, split at `:`, in order. When present ld.so ignores DT_RPATH.
    pub runpath: Vec<String>,
}

/// The most dynamic entries read from one object (a real library has a few dozen; the
/// count is bounded by `PT_DYNAMIC`'s size, this caps what a hostile header can ask for).
const MAX_DYNAMIC_ENTRIES: usize = 65_536;

/// [`DynamicPaths`] of an ELF image held in memory. Errors on malformed input, never panics.
pub fn parse_dynamic_paths(bytes: &[u8]) -> anyhow::Result<DynamicPaths> {
    if !is_elf(bytes) {
        return Err(invalid("not an ELF file (no \\x7fELF magic)"));
    }
    match std::panic::catch_unwind(|| dynamic_paths_checked(bytes)) {
        Ok(result) => result,
        Err(_) => Err(invalid("malformed ELF file (the ELF parser gave up on it)")),
    }
}

/// Map an opened file and read its [`DynamicPaths`]; `path` names it in errors.
pub fn read_dynamic_paths(file: &File, path: &Path) -> anyhow::Result<DynamicPaths> {
    let map = map_file(file, path)?;
    parse_dynamic_paths(&map).with_context(|| format!("{}: cannot read ELF facts", path.display()))
}

fn dynamic_paths_checked(bytes: &[u8]) -> anyhow::Result<DynamicPaths> {
    use goblin::elf::dynamic::{Dynamic, DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_SONAME};
    use goblin::elf::program_header::ProgramHeader;
    let malformed = |e: goblin::error::Error| invalid(format!("malformed ELF file: {e}"));
    let header = Elf::parse_header(bytes).map_err(malformed)?;
    let ctx = Ctx::new(
        header.container().map_err(malformed)?,
        header.endianness().map_err(malformed)?,
    );
    let phnum = usize::from(header.e_phnum);
    let phoff = usize::try_from(header.e_phoff)
        .map_err(|_| invalid("malformed ELF file: program header offset out of range"))?;
    let phdrs = ProgramHeader::parse(bytes, phoff, phnum, ctx).map_err(malformed)?;
    let Some(dynamic) = Dynamic::parse(bytes, &phdrs, ctx).map_err(malformed)? else {
        return Ok(DynamicPaths::default());
    };
    if dynamic.dyns.len() > MAX_DYNAMIC_ENTRIES {
        return Err(invalid(format!(
            "malformed ELF file: {} dynamic entries (more than {MAX_DYNAMIC_ENTRIES})",
            dynamic.dyns.len()
        )));
    }
    let (strtab, strsz) = (dynamic.info.strtab, dynamic.info.strsz);
    let table = strtab
        .checked_add(strsz)
        .filter(|end| strtab != 0 && *end <= bytes.len())
        .map(|end| &bytes[strtab..end]);
    let string_at = |tag: &str, offset: u64| -> anyhow::Result<String> {
        let found = table.and_then(|t| {
            let start = usize::try_from(offset).ok().filter(|o| *o < t.len())?;
            let rest = &t[start..];
            let end = rest.iter().position(|b| *b == 0)?;
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        });
        found.ok_or_else(|| {
            invalid(format!(
                "malformed ELF file: a {tag} entry points outside the dynamic string table (offset {offset})"
            ))
        })
    };
    let mut out = DynamicPaths::default();
    let split = |text: String| -> Vec<String> {
        text.split(':')
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .collect()
    };
    for d in &dynamic.dyns {
        match d.d_tag {
            DT_NEEDED => out.needed.push(string_at("DT_NEEDED", d.d_val)?),
            DT_SONAME => out.soname = Some(string_at("DT_SONAME", d.d_val)?),
            DT_RPATH => out.rpath.extend(split(string_at("DT_RPATH", d.d_val)?)),
            DT_RUNPATH => out.runpath.extend(split(string_at("DT_RUNPATH", d.d_val)?)),
            _ => {}
        }
    }
    Ok(out)
}

/// What a dynamic object asks of the objects it links against, and the version nodes it
/// defines: enough to tell, without running it, whether ld.so would bind it to a given set of
/// libraries ("undefined symbol: …, version …", "version `…' not found").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Linkage {
    pub needed: Vec<String>,
    /// DT_VERDEF names (the object's own base entry included).
    pub defined_versions: Vec<String>,
    /// DT_VERNEED: each file named and the version nodes needed of it.
    pub version_needs: Vec<(String, Vec<String>)>,
    /// Undefined dynamic symbols, in dynamic symbol table order.
    pub undefined: Vec<UndefinedSymbol>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndefinedSymbol {
    pub name: String,
    /// A weak reference: ld.so leaves it 0 when nothing defines it.
    pub weak: bool,
    /// `(file, version node)` from DT_VERNEED when the reference is versioned.
    pub version: Option<(String, String)>,
}

/// The [`Linkage`] of an ELF image held in memory. Version facts come from the section
/// headers (`.gnu.version*`); an object without them reports unversioned references.
pub fn parse_linkage(bytes: &[u8]) -> anyhow::Result<Linkage> {
    if !is_elf(bytes) {
        return Err(invalid("not an ELF file (no \\x7fELF magic)"));
    }
    match std::panic::catch_unwind(|| linkage_checked(bytes)) {
        Ok(result) => result,
        Err(_) => Err(invalid("malformed ELF file (the ELF parser gave up on it)")),
    }
}

/// Map an opened file and read its [`ElfInfo`] and [`Linkage`]; `path` names it in errors.
pub fn read_elf_and_linkage(file: &File, path: &Path) -> anyhow::Result<(ElfInfo, Linkage)> {
    let map = map_file(file, path)?;
    let info =
        parse_elf(&map).with_context(|| format!("{}: cannot read ELF facts", path.display()))?;
    let linkage = parse_linkage(&map)
        .with_context(|| format!("{}: cannot read ELF facts", path.display()))?;
    Ok((info, linkage))
}

/// Map an opened file and read its [`Linkage`] only: a program's copy-relocated definitions
/// (`stdout@GLIBC_2.2.5`) carry versions it needs rather than defines, which
/// [`parse_elf`] refuses.
pub fn read_linkage(file: &File, path: &Path) -> anyhow::Result<Linkage> {
    let map = map_file(file, path)?;
    parse_linkage(&map).with_context(|| format!("{}: cannot read ELF facts", path.display()))
}

fn map_file(file: &File, path: &Path) -> anyhow::Result<memmap2::Mmap> {
    let meta = file
        .metadata()
        .with_context(|| format!("cannot stat {}", path.display()))?;
    if !meta.is_file() || meta.len() == 0 {
        return Err(invalid(format!(
            "{}: not a regular non-empty file",
            path.display()
        )));
    }
    // SAFETY: as in read_elf_file: read-only private map.
    unsafe { memmap2::Mmap::map(file) }.with_context(|| format!("cannot map {}", path.display()))
}

fn linkage_checked(bytes: &[u8]) -> anyhow::Result<Linkage> {
    let elf = Elf::parse(bytes).map_err(|e| invalid(format!("malformed ELF file: {e}")))?;
    let name_at = |off: usize| -> anyhow::Result<String> {
        elf.dynstrtab
            .get_at(off)
            .map(str::to_string)
            .ok_or_else(|| invalid(format!("malformed ELF file: a version entry names offset {off}, outside the dynamic string table")))
    };
    let mut linkage = Linkage {
        needed: needed_entries(&elf)?,
        ..Linkage::default()
    };
    if let Some(verdef) = &elf.verdef {
        for def in verdef.iter() {
            if let Some(aux) = def.iter().next() {
                linkage.defined_versions.push(name_at(aux.vda_name)?);
            }
        }
    }
    // versym index → (file, version) of the needs.
    let mut needs: HashMap<u16, (String, String)> = HashMap::new();
    if let Some(verneed) = &elf.verneed {
        for need in verneed.iter() {
            let file = name_at(need.vn_file)?;
            let mut versions = Vec::new();
            for aux in need.iter() {
                let version = name_at(aux.vna_name)?;
                needs.insert(
                    aux.vna_other & VERSYM_VERSION,
                    (file.clone(), version.clone()),
                );
                versions.push(version);
            }
            linkage.version_needs.push((file, versions));
        }
    }
    for (index, sym) in elf.dynsyms.iter().enumerate() {
        if index == 0 || sym.st_shndx != goblin::elf::section_header::SHN_UNDEF as usize {
            continue;
        }
        let name = elf.dynstrtab.get_at(sym.st_name).unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        let version = elf
            .versym
            .as_ref()
            .and_then(|v| v.get_at(index))
            .and_then(|v| needs.get(&(v.vs_val & VERSYM_VERSION)).cloned());
        linkage.undefined.push(UndefinedSymbol {
            name: name.to_string(),
            weak: sym.st_bind() == STB_WEAK,
            version,
        });
    }
    Ok(linkage)
}

/// DT_NEEDED entries in dynamic-section order; a name outside the string table is an error
/// rather than a silently shorter list.
fn needed_entries(elf: &Elf<'_>) -> anyhow::Result<Vec<String>> {
    let Some(dynamic) = &elf.dynamic else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for d in &dynamic.dyns {
        if d.d_tag == goblin::elf::dynamic::DT_NEEDED {
            let name = usize::try_from(d.d_val)
                .ok()
                .and_then(|off| elf.dynstrtab.get_at(off))
                .ok_or_else(|| {
                    invalid(format!("malformed ELF file: a DT_NEEDED entry points outside the dynamic string table (offset {})", d.d_val))
                })?;
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// The symbol-version index per dynamic symbol (versym) and the version names defined by this
/// object (verdef, by `vd_ndx`).
struct VersionTables<'a> {
    versym: Option<VersymSection<'a>>,
    defined: HashMap<u16, String>,
}

impl<'a> VersionTables<'a> {
    fn locate(bytes: &'a [u8], elf: &Elf<'a>, ctx: Ctx) -> anyhow::Result<Self> {
        let info = elf.dynamic.as_ref().map(|d| &d.info);
        let file_len = bytes.len() as u64;

        // versym: one u16 per dynamic symbol.
        let versym = match info.filter(|i| i.versym != 0) {
            Some(i) => {
                let size = (elf.dynsyms.len() as u64).saturating_mul(2);
                let shdr = synthetic_section(SHT_GNU_VERSYM, i.versym, size, 0, file_len)
                    .ok_or_else(|| {
                        invalid("malformed ELF file: DT_VERSYM table lies outside the file")
                    })?;
                VersymSection::parse(bytes, &[shdr], ctx)
            }
            None => VersymSection::parse(bytes, &elf.section_headers, ctx),
        }
        .map_err(|e| {
            invalid(format!(
                "malformed ELF file: symbol version table (.gnu.version): {e}"
            ))
        })?;

        // verdef: DT_VERDEFNUM entries; its size is not recorded, so allow up to the file end
        // (the iterator stops at vd_next == 0 or after `count` entries).
        let verdef = match info.filter(|i| i.verdef != 0) {
            Some(i) => {
                let size = file_len.saturating_sub(i.verdef);
                let count = u32::try_from(i.verdefnum).unwrap_or(u32::MAX);
                let shdr = synthetic_section(SHT_GNU_VERDEF, i.verdef, size, count, file_len)
                    .ok_or_else(|| {
                        invalid("malformed ELF file: DT_VERDEF table lies outside the file")
                    })?;
                VerdefSection::parse(bytes, &[shdr], ctx)
            }
            None => VerdefSection::parse(bytes, &elf.section_headers, ctx),
        }
        .map_err(|e| {
            invalid(format!(
                "malformed ELF file: version definitions (.gnu.version_d): {e}"
            ))
        })?;

        let mut defined = HashMap::new();
        if let Some(verdef) = &verdef {
            for def in verdef.iter() {
                // The first aux entry names the version; later ones name its parents.
                let Some(aux) = def.iter().next() else {
                    return Err(invalid(format!(
                        "malformed ELF file: version definition {} has no name",
                        def.vd_ndx
                    )));
                };
                let name = elf.dynstrtab.get_at(aux.vda_name).ok_or_else(|| {
                    invalid(format!("malformed ELF file: version definition {} has a name offset ({}) outside the dynamic string table", def.vd_ndx, aux.vda_name))
                })?;
                defined.insert(def.vd_ndx, name.to_string());
            }
        }
        Ok(VersionTables { versym, defined })
    }

    /// (version, default) for dynamic symbol `index`.
    fn version_of(&self, index: usize, name: &str) -> anyhow::Result<(Option<String>, bool)> {
        let Some(versym) = &self.versym else {
            return Ok((None, true));
        };
        let entry = versym.get_at(index).ok_or_else(|| {
            invalid(format!("malformed ELF file: the symbol version table has no entry for symbol {index} ({name})"))
        })?;
        let hidden = entry.vs_val & VERSYM_HIDDEN != 0;
        let ndx = entry.vs_val & VERSYM_VERSION;
        // 0 = local, 1 = global: unversioned. (Index 1's verdef is the object's base name,
        // which readelf does not print either.)
        if ndx <= 1 {
            return Ok((None, true));
        }
        let version = self.defined.get(&ndx).ok_or_else(|| {
            invalid(format!("malformed ELF file: defined symbol {name} has version index {ndx}, which the object does not define (.gnu.version_d)"))
        })?;
        Ok((Some(version.clone()), !hidden))
    }
}

/// A section header standing in for a table found through the dynamic section, or None when it
/// does not fit in the file.
fn synthetic_section(
    sh_type: u32,
    offset: u64,
    size: u64,
    info: u32,
    file_len: u64,
) -> Option<SectionHeader> {
    if offset.checked_add(size)? > file_len {
        return None;
    }
    Some(SectionHeader {
        sh_type,
        sh_offset: offset,
        sh_size: size,
        sh_info: info,
        ..SectionHeader::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_elf() {
        assert!(parse_elf(b"").is_err());
        assert!(parse_elf(b"!<arch>\n").is_err());
        assert!(parse_elf(b"\x7fELF").is_err());
    }

    #[test]
    fn versioned_name_forms() {
        let mut s = ExportedSymbol {
            name: "f".into(),
            version: Some("V1".into()),
            default: true,
            function: true,
            size: 0,
        };
        assert_eq!(s.versioned_name(), "f@@V1");
        s.default = false;
        assert_eq!(s.versioned_name(), "f@V1");
        s.version = None;
        assert_eq!(s.versioned_name(), "f");
    }

    #[test]
    fn export_prefers_default_version() {
        let info = ElfInfo {
            soname: None,
            needed: vec![],
            exports: vec![
                ExportedSymbol {
                    name: "f".into(),
                    version: Some("V0".into()),
                    default: false,
                    function: true,
                    size: 0,
                },
                ExportedSymbol {
                    name: "f".into(),
                    version: Some("V1".into()),
                    default: true,
                    function: true,
                    size: 0,
                },
            ],
            shared_object: true,
        };
        assert_eq!(
            info.export("f").and_then(|s| s.version.as_deref()),
            Some("V1")
        );
        assert!(info.export("g").is_none());
    }
}
