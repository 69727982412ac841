//! Container images built by real OCI tools: the Dockerfile recipe with buildah and BuildKit, adopting in-place patched images, the rocm-pin tool image, the recipe's build script in chroots, and docs/ci.md's CI jobs against the loopback registry.
//! Hostile images crafted byte by byte (`hostile`): limits, digests, whiteouts, signals.
//! ROCm as Python wheels in an image (`wheels`): docs/docker/wheels.Dockerfile and a hand-patched /opt/rocm.
//!
//! One test binary per area (`cargo test --test images`); a module per former test file.

mod util;

mod adopt;
mod buildah;
mod buildkit;
mod ci_doc;
mod debian;
mod docker_recipe;
mod guard_image;
mod hostile;
mod rccl;
mod tool;
mod wheels;
