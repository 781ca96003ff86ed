//! The key PKB signs its access tokens with: ES256 (P-256), made once by ring and kept in the
//! data directory as PKCS#8 PEM, so tokens outlive a restart and every server on the
//! directory signs alike. Signing and the public JWK are jsonwebtoken's; nothing here is
//! cryptography of its own.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use serde::Serialize;

use crate::auth::data_file;

/// The key's file in the data directory.
pub const SIGNING_KEY_FILE: &str = "oauth-signing-key.pem";

const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";

/// The signing key and its public half as a JWK.
pub struct SigningKey {
    encoding: EncodingKey,
    jwk: Jwk,
    kid: String,
}

impl SigningKey {
    /// The key of the data directory `dir`, made there first when it has none.
    pub fn load_or_create(dir: &Path) -> Result<Self, String> {
        let path = dir.join(SIGNING_KEY_FILE);
        let what = |error: std::io::Error| format!("{}: {error}", path.display());
        // Two servers starting together must not make two keys.
        let _lock = data_file::lock(dir, "oauth-signing-key.lock").map_err(what)?;
        let der = match data_file::read_if_exists(&path).map_err(what)? {
            Some(pem) => decode_pem(&pem)
                .ok_or_else(|| format!("{} is not a PKCS#8 PEM private key", path.display()))?,
            None => {
                let der = EcdsaKeyPair::generate_pkcs8(
                    &ECDSA_P256_SHA256_FIXED_SIGNING,
                    &SystemRandom::new(),
                )
                .map_err(|_| "cannot make a signing key: no randomness".to_owned())?
                .as_ref()
                .to_vec();
                data_file::replace(dir, SIGNING_KEY_FILE, &encode_pem(&der)).map_err(what)?;
                tracing::info!(path = %path.display(), "made the authorization server's signing key");
                der
            }
        };
        Self::from_pkcs8(&der).map_err(|error| format!("{}: {error}", path.display()))
    }

    fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        // Parsed by ring first: jsonwebtoken takes any bytes and fails only when signing.
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &SystemRandom::new())
            .map_err(|error| format!("not a P-256 key: {error}"))?;
        let encoding = EncodingKey::from_ec_der(der);
        let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256)
            .map_err(|error| format!("no public key: {error}"))?;
        // RFC 7638's thumbprint names the key: a new key gets a new `kid` of itself.
        let kid = jwk
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|error| format!("no thumbprint: {error}"))?;
        jwk.common.key_id = Some(kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        Ok(Self { encoding, jwk, kid })
    }

    /// The key set to publish at the metadata's `jwks_uri`.
    pub fn key_set(&self) -> JwkSet {
        JwkSet {
            keys: vec![self.jwk.clone()],
        }
    }

    /// `claims` as a JWT typed `at+jwt` (RFC 9068), signed with the key.
    pub fn sign(&self, claims: &impl Serialize) -> Result<String, String> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("at+jwt".to_owned());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
            .map_err(|error| format!("cannot sign an access token: {error}"))
    }
}

fn encode_pem(der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut pem = format!("{PEM_BEGIN}\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(PEM_END);
    pem.push('\n');
    pem
}

fn decode_pem(pem: &str) -> Option<Vec<u8>> {
    let body = pem
        .trim()
        .strip_prefix(PEM_BEGIN)?
        .strip_suffix(PEM_END)?
        .split_whitespace()
        .collect::<String>();
    STANDARD.decode(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_and_signs_verifiable_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::load_or_create(dir.path()).unwrap();
        let again = SigningKey::load_or_create(dir.path()).unwrap();
        assert_eq!(key.kid, again.kid, "the key is kept");
        let token = key.sign(&serde_json::json!({"sub": "alice"})).unwrap();
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&again.key_set().keys[0]).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<serde_json::Value>(&token, &decoding, &validation);
        assert_eq!(data.unwrap().claims["sub"], "alice");
    }
}
