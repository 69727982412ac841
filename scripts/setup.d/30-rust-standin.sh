#!/usr/bin/env bash
# The crates of Cargo.lock, vendored for the stand-in Rust image that tests/images/tool.rs builds
# docs/docker/tool.Dockerfile on (scripts/lib/standin-rust-image.sh). Idempotent; keyed on
# Cargo.lock. Network (crates.io) only for crates missing from ~/.cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec scripts/lib/standin-rust-image.sh vendor
