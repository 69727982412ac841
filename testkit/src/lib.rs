//! Test machinery shared by rocm-pin's integration tests. Nothing here ships in the product.

pub mod http;
pub mod scratch;
