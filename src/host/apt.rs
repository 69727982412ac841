//! Running apt-get / dpkg / dpkg-query, apt preferences and sources.
