//! Checks → `VerifyReport` (human + JSON). Read-only. (Issue 5.)
