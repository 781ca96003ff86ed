//! An OAuth 2.1 resource server: access tokens are JWTs (RFC 9068) signed by the issuer,
//! checked against the issuer's published keys (JWKS). The signature checks are
//! jsonwebtoken's; this module only decides which key, which algorithms and which claims.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::framework::access::{Principal, ScopeNames};
use crate::identity::User;
use crate::locks::lock;

/// Clock skew allowed on `exp`, `nbf` and `iat`.
pub const LEEWAY: Duration = Duration::from_secs(60);

/// The least time between two fetches of the key set caused by an unknown `kid`: a stream
/// of forged tokens must not turn the server into a load on the issuer.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// How long a key set counts as fresh when the issuer's answer does not say
/// (`Cache-Control: max-age`), and the longest it does even when it says more: a key taken out
/// of the set stops being trusted within this, plus one fetch.
pub const KEYS_FRESH_FOR: Duration = Duration::from_secs(300);

/// The shortest an issuer's `max-age` makes a key set fresh for: fetches are made only as
/// requests come, one at a time, so an issuer asking for less gets one fetch a second at most.
const KEYS_FRESH_AT_LEAST: Duration = Duration::from_secs(1);

/// How long after a failed fetch for freshness the next is tried.
const KEYS_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Most verified tokens remembered (by their hash).
const VERIFIED_CACHE: usize = 10_000;

/// How long a verified token is remembered at most (less when it expires sooner), so that
/// a key taken out of the set stops being trusted within this time once it is refetched.
const VERIFIED_FOR: Duration = Duration::from_secs(300);

/// The algorithms accepted: asymmetric ones only. `none` and HMAC never are, whatever a
/// token's header says: HMAC with a public key as the secret is the classic forgery.
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Where the keys come from and what the tokens must say.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// The authorization server; tokens' `iss` must equal it.
    pub issuer: String,
    /// The key set's URL; `None` finds it in the issuer's metadata.
    pub jwks_url: Option<String>,
    /// What tokens' `aud` must hold; `None` is the resource `<public-url>/mcp`, which the
    /// HTTP server sets once it knows its address.
    pub audience: Option<String>,
    /// The application's scope names, which tokens' `scope` or `scp` claims carry.
    pub scopes: ScopeNames,
}

/// Why a [`JwtVerifier`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum OAuthStartError {
    /// Neither RFC 8414's nor OpenID Connect's metadata of the issuer names a key set: each
    /// place looked at and what went wrong there.
    #[error("cannot find the issuer's keys ({0}); give the key set's URL")]
    NoKeySet(String),
    /// The key set, or an HTTP client to fetch it with, could not be had.
    #[error("{0}")]
    Keys(String),
}

/// Checks access tokens against the issuer's keys.
pub struct JwtVerifier {
    settings: OAuthSettings,
    subjects: SubjectUsers,
    audience: OnceLock<String>,
    keys: Arc<IssuerKeys>,
    /// When an unknown `kid` last made the set be fetched again; the fetch at start does
    /// not count, so a key added just after it is found at once.
    last_refetch: Mutex<Option<Instant>>,
    /// Serialises refetches, so many tokens with a new `kid` fetch the set once.
    refetching: tokio::sync::Mutex<()>,
}

/// The issuer's key set as last fetched, and the tokens verified with it; shared with the
/// task that fetches it again once it is no longer fresh, so that a key the issuer withdrew
/// (a leaked one) stops being trusted within minutes, not at the next restart.
struct IssuerKeys {
    /// Where the set is fetched from; `None` for a set the server holds itself (its own
    /// authorization server's), which never changes while it runs.
    source: Option<KeySource>,
    set: RwLock<Arc<JwkSet>>,
    /// When the set stops being fresh: its `max-age` (within bounds) after it was fetched.
    stale_at: Mutex<Instant>,
    /// Whether a fetch for freshness is under way.
    refreshing: AtomicBool,
    /// Tokens verified with the set, `(principal, until)` by the token's hash; forgotten with
    /// each new set.
    verified: Mutex<HashMap<[u8; 32], (Verified, u64)>>,
}

/// Where an issuer's key set is fetched from.
struct KeySource {
    url: String,
    client: reqwest::Client,
}

/// Which user a token's subject is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubjectUsers {
    /// The pair (`iss`, `sub`): another issuer's subjects are its own users.
    OfTheIssuer,
    /// The account `sub` names, which is the same user as the token of that name: the
    /// server's own authorization server's tokens.
    Accounts,
}

/// What a verified token says beyond its principal.
#[derive(Debug, Clone)]
pub(crate) struct Verified {
    /// Whose data, and what the token allows.
    pub principal: Principal,
    /// The `sub` claim.
    pub subject: String,
    /// The `grant` claim that PKB's own authorization server writes: the grant (the family
    /// of tokens of one approval) the token belongs to.
    pub grant: Option<String>,
}

impl IssuerKeys {
    /// Fetches the set and takes it in place of the one held.
    async fn fetch(&self) -> Result<usize, String> {
        let Some(source) = &self.source else {
            return Ok(crate::locks::read(&self.set).keys.len());
        };
        let (set, fresh_for) = fetch_keys(&source.client, &source.url).await?;
        let count = set.keys.len();
        *crate::locks::write(&self.set) = Arc::new(set);
        *lock(&self.stale_at) = Instant::now() + fresh_for;
        // A key may have left the set: what it signed is checked again.
        lock(&self.verified).clear();
        Ok(count)
    }

    /// Starts a fetch in the background when the set is no longer fresh and none is under way;
    /// the requests meanwhile are checked against the set held.
    fn refresh_if_stale(self: &Arc<Self>) {
        if self.source.is_none()
            || Instant::now() < *lock(&self.stale_at)
            || self.refreshing.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let keys = Arc::clone(self);
        tokio::spawn(async move {
            match keys.fetch().await {
                Ok(count) => tracing::debug!(
                    keys = count,
                    "fetched the issuer's keys, as they went stale"
                ),
                Err(error) => {
                    tracing::warn!(%error, "cannot fetch the issuer's keys again; the set held is kept");
                    *lock(&keys.stale_at) = Instant::now() + KEYS_RETRY_AFTER;
                }
            }
            keys.refreshing.store(false, Ordering::SeqCst);
        });
    }
}

#[derive(Deserialize)]
struct Metadata {
    jwks_uri: Option<String>,
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    iss: String,
    exp: NumericDate,
    #[serde(default)]
    iat: Option<NumericDate>,
    #[serde(default)]
    nbf: Option<NumericDate>,
    #[serde(default)]
    scope: Option<ScopeClaim>,
    #[serde(default)]
    scp: Option<ScopeClaim>,
    #[serde(default)]
    grant: Option<String>,
}

/// RFC 7519's NumericDate: seconds since the epoch as a JSON number, which may have a
/// fraction (`1733400000.5`). `exp`, `nbf` and `iat` are read alike, here rather than by the
/// JWT library, which takes whole seconds only for `exp` and `nbf`.
#[derive(Clone, Copy, Deserialize)]
#[serde(transparent)]
struct NumericDate(f64);

/// A claim naming scopes, in either form identity providers write: space-separated names
/// (RFC 9068's `scope`, Azure AD's `scp`) or a list (Okta's `scp`). Anything else fails the
/// token, as a claim of the wrong type does.
#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Spaced(String),
    Listed(Vec<String>),
}

impl ScopeClaim {
    fn names(&self) -> Vec<&str> {
        match self {
            ScopeClaim::Spaced(names) => names.split_whitespace().collect(),
            ScopeClaim::Listed(names) => names.iter().map(String::as_str).collect(),
        }
    }
}

impl JwtVerifier {
    /// Finds the key set (from `jwks_url`, or the issuer's RFC 8414 or OpenID metadata) and
    /// fetches it. Fails when neither can be had: a server that could accept no token should
    /// say so at start, not at the first request.
    pub async fn start(settings: OAuthSettings) -> Result<Self, OAuthStartError> {
        crate::crypto_provider::install();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| OAuthStartError::Keys(format!("cannot make an HTTP client: {e}")))?;
        let jwks_url = match &settings.jwks_url {
            Some(url) => url.clone(),
            None => discover_jwks_url(&client, &settings.issuer).await?,
        };
        let (set, fresh_for) = fetch_keys(&client, &jwks_url)
            .await
            .map_err(OAuthStartError::Keys)?;
        tracing::info!(jwks_url, keys = set.keys.len(), "fetched the issuer's keys");
        let source = KeySource {
            url: jwks_url,
            client,
        };
        Ok(Self::with_keys(
            settings,
            Some(source),
            set,
            fresh_for,
            SubjectUsers::OfTheIssuer,
        ))
    }

    /// Checks the tokens of the server's own authorization server: signed with a key of
    /// `set`, which it holds, their subjects its accounts.
    pub(crate) fn own(settings: OAuthSettings, set: JwkSet) -> Self {
        Self::with_keys(settings, None, set, KEYS_FRESH_FOR, SubjectUsers::Accounts)
    }

    fn with_keys(
        settings: OAuthSettings,
        source: Option<KeySource>,
        set: JwkSet,
        fresh_for: Duration,
        subjects: SubjectUsers,
    ) -> Self {
        let audience = OnceLock::new();
        if let Some(explicit) = &settings.audience {
            let _ = audience.set(explicit.clone());
        }
        Self {
            settings,
            subjects,
            audience,
            keys: Arc::new(IssuerKeys {
                source,
                set: RwLock::new(Arc::new(set)),
                stale_at: Mutex::new(Instant::now() + fresh_for),
                refreshing: AtomicBool::new(false),
                verified: Mutex::new(HashMap::new()),
            }),
            last_refetch: Mutex::new(None),
            refetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The settings it checks against.
    pub fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// Takes `resource` as the audience tokens must name, unless one was set explicitly.
    pub fn default_audience(&self, resource: &str) {
        let _ = self.audience.set(resource.to_owned());
    }

    /// The principal of a valid access token; `None` for any other.
    pub async fn verify(&self, token: &str) -> Option<Principal> {
        self.verify_claims(token)
            .await
            .map(|verified| verified.principal)
    }

    /// What a valid access token says; `None` for any other token.
    pub(crate) async fn verify_claims(&self, token: &str) -> Option<Verified> {
        self.keys.refresh_if_stale();
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = unix_now();
        if let Some((verified, until)) = lock(&self.keys.verified).get(&hash)
            && *until > now
        {
            return Some(verified.clone());
        }
        let header = jsonwebtoken::decode_header(token).ok()?;
        if !ACCEPTED.contains(&header.alg)
            || !header.typ.as_deref().is_none_or(types_an_access_token)
        {
            return None;
        }
        let jwk = match self.find_key(header.kid.as_deref(), header.alg) {
            Some(jwk) => jwk,
            None => {
                self.refetch().await;
                self.find_key(header.kid.as_deref(), header.alg)?
            }
        };
        let (checked, exp) = self.check(token, header.alg, &jwk)?;
        let until = exp
            .saturating_add(LEEWAY.as_secs())
            .min(now.saturating_add(VERIFIED_FOR.as_secs()));
        let mut verified = lock(&self.keys.verified);
        if verified.len() >= VERIFIED_CACHE {
            verified.retain(|_, (_, until)| *until > now);
            if verified.len() >= VERIFIED_CACHE {
                verified.clear();
            }
        }
        verified.insert(hash, (checked.clone(), until));
        Some(checked)
    }

    fn check(&self, token: &str, alg: Algorithm, jwk: &Jwk) -> Option<(Verified, u64)> {
        let audience = self.audience.get()?;
        let key = DecodingKey::from_jwk(jwk).ok()?;
        let mut validation = Validation::new(alg);
        // The dates are checked below, with their fractions; `exp` is required by `Claims`.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = true;
        validation.set_audience(&[audience]);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_required_spec_claims(&["iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).ok()?;
        let claims = data.claims;
        if claims.iss != self.settings.issuer || !dates_hold(&claims, unix_now_exact()) {
            return None;
        }
        let subject = claims.sub.filter(|s| !s.is_empty())?;
        let scopes = claims
            .scope
            .as_ref()
            .or(claims.scp.as_ref())
            .map(|claim| self.settings.scopes.scopes_of(claim.names()))
            .unwrap_or_default();
        let user = match self.subjects {
            SubjectUsers::OfTheIssuer => User::oauth_user(&claims.iss, &subject),
            SubjectUsers::Accounts => User::token_user(&subject),
        };
        let verified = Verified {
            principal: Principal { user, scopes },
            subject,
            grant: claims.grant,
        };
        // Whole seconds for the cache of verified tokens; `as` saturates.
        let NumericDate(exp) = claims.exp;
        Some((verified, exp.floor() as u64))
    }

    /// The key a token names: by `kid`, or the one key of the algorithm's type when the
    /// token names none. The key's own `alg`, when it states one, must be the token's.
    fn find_key(&self, kid: Option<&str>, alg: Algorithm) -> Option<Jwk> {
        let keys = Arc::clone(&crate::locks::read(&self.keys.set));
        let fits = |jwk: &&Jwk| key_fits(jwk, alg);
        match kid {
            Some(kid) => keys.find(kid).filter(|jwk| key_fits(jwk, alg)).cloned(),
            None => {
                let mut candidates = keys.keys.iter().filter(fits);
                let only = candidates.next()?;
                candidates.next().is_none().then(|| only.clone())
            }
        }
    }

    /// Fetches the key set again, unless that was done less than [`REFETCH_INTERVAL`] ago.
    async fn refetch(&self) {
        if self.keys.source.is_none() {
            return;
        }
        let _one_at_a_time = self.refetching.lock().await;
        {
            let mut last = lock(&self.last_refetch);
            if last.is_some_and(|at| at.elapsed() < REFETCH_INTERVAL) {
                return;
            }
            *last = Some(Instant::now());
        }
        match self.keys.fetch().await {
            Ok(count) => tracing::info!(keys = count, "fetched the issuer's keys again"),
            Err(error) => tracing::warn!(%error, "cannot fetch the issuer's keys again"),
        }
    }
}

/// Whether a JWT's `typ` lets it be an access token: RFC 9068's `at+jwt` (or
/// `application/at+jwt`), or the plain `JWT` that many issuers still send. A JWT typed as
/// another kind (a logout token, a DPoP proof, a security event) is not one, whatever its
/// claims say.
fn types_an_access_token(typ: &str) -> bool {
    let typ = typ.strip_prefix("application/").unwrap_or(typ);
    typ.eq_ignore_ascii_case("at+jwt") || typ.eq_ignore_ascii_case("jwt")
}

/// Whether `jwk` is a key for `alg`: of its type and curve, and of its stated algorithm.
fn key_fits(jwk: &Jwk, alg: Algorithm) -> bool {
    let type_fits = match (&jwk.algorithm, alg) {
        (
            AlgorithmParameters::RSA(_),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512,
        ) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES384) => {
            ec.curve == EllipticCurve::P384
        }
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    };
    let stated_fits = match jwk.common.key_algorithm {
        None => true,
        Some(stated) => key_algorithm(stated) == Some(alg),
    };
    type_fits && stated_fits
}

fn key_algorithm(stated: KeyAlgorithm) -> Option<Algorithm> {
    Some(match stated {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// The `jwks_uri` of the issuer's metadata: RFC 8414's, else OpenID Connect's.
async fn discover_jwks_url(
    client: &reqwest::Client,
    issuer: &str,
) -> Result<String, OAuthStartError> {
    let base = issuer.trim_end_matches('/');
    let mut failures = Vec::new();
    for well_known in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let url = format!("{base}{well_known}");
        match get_json::<Metadata>(client, &url).await {
            Ok(Metadata {
                jwks_uri: Some(jwks_uri),
            }) => return Ok(jwks_uri),
            Ok(Metadata { jwks_uri: None }) => failures.push(format!("{url}: no jwks_uri")),
            Err(error) => failures.push(error),
        }
    }
    Err(OAuthStartError::NoKeySet(failures.join("; ")))
}

/// The key set at `url`, and how long it is fresh for: its `Cache-Control: max-age` within
/// [`KEYS_FRESH_AT_LEAST`] and [`KEYS_FRESH_FOR`], else the latter.
async fn fetch_keys(client: &reqwest::Client, url: &str) -> Result<(JwkSet, Duration), String> {
    let response = get(client, url).await?;
    let fresh_for = response
        .headers()
        .get_all(reqwest::header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(max_age)
        .map_or(KEYS_FRESH_FOR, |max_age| {
            max_age.clamp(KEYS_FRESH_AT_LEAST, KEYS_FRESH_FOR)
        });
    let set = response
        .json::<JwkSet>()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    Ok((set, fresh_for))
}

/// The `max-age` of a `Cache-Control` value; `no-cache` and `no-store` count as none at all.
fn max_age(cache_control: &str) -> Option<Duration> {
    cache_control.split(',').find_map(|directive| {
        let directive = directive.trim();
        if directive.eq_ignore_ascii_case("no-cache") || directive.eq_ignore_ascii_case("no-store")
        {
            return Some(Duration::ZERO);
        }
        let (name, value) = directive.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("max-age")
            .then(|| value.trim().trim_matches('"').parse().ok())
            .flatten()
            .map(Duration::from_secs)
    })
}

async fn get(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, String> {
    let response = client
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    Ok(response)
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
) -> Result<T, String> {
    get(client, url)
        .await?
        .json::<T>()
        .await
        .map_err(|e| format!("{url}: {e}"))
}

/// Whether the token's dates hold at `now` (seconds since the epoch), each with
/// [`LEEWAY`] for clocks that disagree: not expired, not before its `nbf`, not issued in the
/// future.
fn dates_hold(claims: &Claims, now: f64) -> bool {
    let leeway = LEEWAY.as_secs_f64();
    let NumericDate(exp) = claims.exp;
    exp >= now - leeway
        && claims
            .nbf
            .is_none_or(|NumericDate(nbf)| nbf <= now + leeway)
        && claims
            .iat
            .is_none_or(|NumericDate(iat)| iat <= now + leeway)
}

/// The current time in seconds since the epoch, with its fraction.
fn unix_now_exact() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::max_age;

    #[test]
    fn cache_control_says_how_long_a_key_set_is_fresh() {
        assert_eq!(
            max_age("public, max-age=600"),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age("Max-Age = \"30\""), Some(Duration::from_secs(30)));
        assert_eq!(max_age("no-store"), Some(Duration::ZERO));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=soon"), None);
    }
}
