//! OpenPGP through rpgp.

use std::path::Path;

use anyhow::Context;
use pgp::composed::{
    ArmorOptions, CleartextSignedMessage, Deserializable, DetachedSignature, KeyType,
    SecretKeyParamsBuilder, SignedSecretKey, SubpacketConfig,
};
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::{SignatureConfig, SignatureType, Subpacket, SubpacketData};
use pgp::ser::Serialize;
use pgp::types::{KeyDetails, Password, Timestamp};

use super::{refused, KeyValidityProblem};

/// A v4 Ed25519 (EdDSA legacy) primary key that certifies and signs.
pub(crate) fn generate(user_id: &str) -> anyhow::Result<SignedSecretKey> {
    let mut params = SecretKeyParamsBuilder::default();
    params
        .key_type(KeyType::Ed25519Legacy)
        .can_certify(true)
        .can_sign(true)
        .primary_user_id(user_id.to_string())
        .preferred_hash_algorithms(
            [HashAlgorithm::Sha256, HashAlgorithm::Sha512]
                .into_iter()
                .collect(),
        );
    let params = params.build().context("key parameters")?;
    let key = params
        .generate(rand::thread_rng())
        .context("generating the key")?;
    Ok(key)
}

pub(crate) fn load_secret_key(path: &Path) -> anyhow::Result<SignedSecretKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the signing key {}", path.display()))?;
    let (key, _) = SignedSecretKey::from_string(&text).with_context(|| {
        format!(
            "{} is not an armored OpenPGP secret key (make one with `rocm-pin repo keygen --out KEY.asc`)",
            path.display()
        )
    })?;
    key.verify_bindings().with_context(|| {
        format!(
            "{}: the key's self-signatures do not verify",
            path.display()
        )
    })?;
    // apt (gpgv) judges the key at the time it verifies, so the clock decides, not
    // SOURCE_DATE_EPOCH: a key that is expired, revoked or not yet valid now would make every
    // `apt-get update` fail with EXPKEYSIG/REVKEYSIG.
    if let Some(problem) = validity_problem(&key, Timestamp::now().as_secs()) {
        return Err(crate::ops::repo::RepoError::SigningKeyUnusable {
            path: path.to_path_buf(),
            fingerprint: fingerprint(&key),
            problem,
        }
        .into());
    }
    // Fail now, not half-way through writing, if the key cannot sign without a passphrase.
    DetachedSignature::sign_binary_data(
        rand::thread_rng(),
        &key.primary_key,
        &Password::empty(),
        HashAlgorithm::Sha256,
        &b"probe"[..],
    )
    .with_context(|| {
        format!(
            "{}: cannot sign with this key (passphrase-protected keys are not supported)",
            path.display()
        )
    })?;
    Ok(key)
}

/// Why the primary key (the one that signs) cannot make signatures apt accepts at `now`
/// (seconds since the epoch), or None. Its expiry is the one its newest self-signature gives,
/// as GnuPG reads it; any verified revocation signature revokes it.
pub(crate) fn validity_problem(key: &SignedSecretKey, now: u32) -> Option<KeyValidityProblem> {
    let created = key.primary_key.created_at().as_secs();
    if let Some(revocation) = key.details.revocation_signatures.first() {
        return Some(KeyValidityProblem::Revoked {
            at: revocation.created().map(|t| i64::from(t.as_secs())),
        });
    }
    if created > now {
        return Some(KeyValidityProblem::NotYetValid {
            from: i64::from(created),
        });
    }
    let newest_self_signature = key
        .details
        .users
        .iter()
        .flat_map(|u| &u.signatures)
        .chain(&key.details.direct_signatures)
        .max_by_key(|sig| sig.created().map(|t| t.as_secs()).unwrap_or(0))?;
    let lifetime = newest_self_signature.key_expiration_time()?.as_secs();
    // A zero lifetime means the key does not expire (RFC 9580 §5.2.3.13).
    if lifetime == 0 {
        return None;
    }
    let expires = u64::from(created) + u64::from(lifetime);
    (expires <= u64::from(now)).then_some(KeyValidityProblem::Expired { at: expires as i64 })
}

pub(crate) fn fingerprint(key: &SignedSecretKey) -> String {
    hex::encode_upper(key.fingerprint().as_bytes())
}

/// (InRelease: cleartext-signed Release, Release.gpg: armored detached signature), both
/// created at `created` (seconds since the epoch; Release's Date) — or at the key's own
/// creation time if that is later, since gpgv (and so apt) refuses a signature older than
/// its key ("Time conflict"). The subpackets are the ones rpgp writes by default (issuer
/// fingerprint, creation time; issuer key id unhashed), with the creation time given instead
/// of the clock, so equal inputs and key give equal bytes.
pub(crate) fn sign_release(
    key: &SignedSecretKey,
    release: &str,
    created: i64,
) -> anyhow::Result<(String, String)> {
    let created = u32::try_from(created).map_err(|_| {
        refused(format!("signature time {created} is outside OpenPGP's range (1970..2106): check SOURCE_DATE_EPOCH"))
    })?;
    let created = created.max(key.primary_key.created_at().as_secs());
    let hashed = vec![
        Subpacket::regular(SubpacketData::IssuerFingerprint(key.fingerprint()))?,
        Subpacket::regular(SubpacketData::SignatureCreationTime(Timestamp::from_secs(
            created,
        )))?,
    ];
    let unhashed = vec![Subpacket::regular(SubpacketData::IssuerKeyId(
        key.legacy_key_id(),
    ))?];
    // In a cleartext signature the line break before the signature block belongs to the
    // framing, not the text (RFC 9580 §7.1): sign the text without its final newline so the
    // InRelease layout and what gpgv verifies are exactly Release, as `gpg --clearsign` does.
    let mut config = SignatureConfig::v4(
        SignatureType::Text,
        key.primary_key.algorithm(),
        HashAlgorithm::Sha256,
    );
    config.hashed_subpackets = hashed.clone();
    config.unhashed_subpackets = unhashed.clone();
    let clear = CleartextSignedMessage::new(
        release.strip_suffix('\n').unwrap_or(release),
        config,
        &key.primary_key,
        &Password::empty(),
    )
    .context("signing InRelease")?
    .to_armored_string(ArmorOptions::default())
    .context("armoring InRelease")?;
    let detached = DetachedSignature::sign_binary_data_with_subpackets(
        rand::thread_rng(),
        &key.primary_key,
        &Password::empty(),
        HashAlgorithm::Sha256,
        release.as_bytes(),
        SubpacketConfig::UserDefined { hashed, unhashed },
    )
    .context("signing Release.gpg")?
    .to_armored_string(ArmorOptions::default())
    .context("armoring Release.gpg")?;
    Ok((clear, detached))
}

/// (armored, binary) public key.
pub(crate) fn public_key_bytes(key: &SignedSecretKey) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let public = key.to_public_key();
    let asc = public
        .to_armored_bytes(ArmorOptions::default())
        .context("armoring the public key")?;
    let gpg = public.to_bytes().context("serializing the public key")?;
    Ok((asc, gpg))
}
