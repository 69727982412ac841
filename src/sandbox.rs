//! Throwaway chroots for acceptance tests and `rocm-pin demo`: a cached `mmdebstrap
//! --variant=apt` tarball, unpacked fresh per scenario, with helpers to run commands inside.
