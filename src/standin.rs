//! The stand-in stock ROCm 7.2.4 package set (real shapes, tiny gcc-built libraries) used by
//! the tests and `rocm-pin demo` until a real ROCm host is at hand.
