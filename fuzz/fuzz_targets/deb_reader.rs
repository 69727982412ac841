//! Fuzz the .deb reader: ar container, decompressors, control.tar and data.tar parsing.
//! Any input must give Ok or a clean error — never a panic, hang or unbounded allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocm_pin_core::deb::reader::{for_each_data_entry_from, read_deb_from};
use rocm_pin_core::deb::ReadLimits;

fuzz_target!(|data: &[u8]| {
    // Small limits keep a compressed bomb from turning into a slow input.
    let limits = ReadLimits {
        max_member_uncompressed: 32 << 20,
        max_control_file: 1 << 20,
        ..ReadLimits::default()
    };
    let _ = read_deb_from(data, data.len() as u64, "fuzz.deb", &limits);
    let _ = for_each_data_entry_from(data, data.len() as u64, "fuzz.deb", &limits, &mut |_, r| {
        std::io::copy(r, &mut std::io::sink())?;
        Ok(())
    });
});
