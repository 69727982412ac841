//! Who packaged the stock runtime (docs/flavours.md); what the flavours differ in is data in
//! `rocm`'s STOCK_FLAVOURS. A leaf of `rocm`, so the family data can name a flavour.

/// Which packaging the stock ROCm runtime on a host comes from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StockFlavour {
    /// AMD's packages from repo.radeon.com: `hsa-rocr`, `hip-runtime-amd` under `/opt/rocm-*`.
    Amd,
    /// Debian's (and Ubuntu's) packages: `libhsa-runtime64-1`, `libamdhip64-<N>`, … under
    /// `/usr/lib/<triplet>/`.
    Debian,
}
