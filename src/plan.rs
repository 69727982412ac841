//! Stock facts + staging → `ReplacementPlan` (files, aliases, relations, scripts) → package
//! trees for the deb writer. (Issue 4.)
