//! Reading the dpkg database under a root: status, info/<pkg>.list, .md5sums, .conffiles, scripts.
