//! The outer ar container of a .deb (debian-binary, control.tar.*, data.tar.*).
