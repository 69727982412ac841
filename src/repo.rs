//! Apt repository writer and OpenPGP signing. (Issue 6.)
