//! The dynamic loader: ld.so.conf.d entries, ldconfig, and which file a soname resolves to.
