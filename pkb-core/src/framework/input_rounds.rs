//! Multi-round-trip requests (2026-07-28): a handler that needs the client's input (a sample
//! of its model) asks the [`Context`](super::context::Context) as on any revision; on the
//! stateless revision the framework answers the call with an `InputRequiredResult` naming
//! what it needs and a sealed state, and runs the handler again when the client retries with
//! the answers. Handlers never see the rounds.

// Sampling is deprecated only for the stateless revision this module serves it on.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::context::lock;

/// The shortest state key accepted, in bytes.
pub const MIN_STATE_KEY_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

/// Seals and opens the `requestState` of input rounds with an HMAC key. Servers behind one
/// balancer that share the key accept each other's states.
#[derive(Clone, Debug)]
pub struct RoundStates {
    codec: RequestStateCodec,
}

impl RoundStates {
    /// States sealed with `key`, at least [`MIN_STATE_KEY_BYTES`] long.
    pub fn with_key(key: &[u8]) -> Result<Self, String> {
        RequestStateCodec::try_new(key.to_vec())
            .map(|codec| Self { codec })
            .map_err(|error| format!("the request state key is unusable: {error}"))
    }

    /// States sealed with a random key made now: only this process accepts them.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        // A process that cannot read the system's randomness cannot do TLS or tokens
        // either; the key then still differs per process through the clock and address.
        if getrandom::fill(&mut key).is_err() {
            let fallback = Sha256::digest(format!("{:?}{:p}", std::time::SystemTime::now(), &key));
            key.copy_from_slice(&fallback);
        }
        Self::with_key(&key).expect("32 bytes is a valid key")
    }

    /// The state of a call that must come back with answers: what it was (`call`), for whom
    /// (`user_key`, bound as associated data, so another user's state fails), until `ttl`.
    pub fn seal(
        &self,
        call: &CallIdentity,
        user_key: &str,
        ttl: Duration,
    ) -> Result<String, String> {
        let options = SealOptions::new()
            .associated_data(user_key.as_bytes())
            .ttl(ttl);
        self.codec
            .seal_json_with(call, &options)
            .map_err(|error| error.to_string())
    }

    /// `value` sealed for `user_key` alone, with no expiry: an opaque token such as a list
    /// cursor, which every server sharing the key accepts.
    pub fn seal_token<T: Serialize>(&self, value: &T, user_key: &str) -> Result<String, String> {
        let options = SealOptions::new().associated_data(user_key.as_bytes());
        self.codec
            .seal_json_with(value, &options)
            .map_err(|error| error.to_string())
    }

    /// What [`RoundStates::seal_token`] sealed for `user_key`, or `None` for a token this key
    /// did not seal for that user.
    pub fn open_token<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        user_key: &str,
    ) -> Option<T> {
        self.codec
            .open_json_with::<T>(token, user_key.as_bytes())
            .ok()
    }

    /// Whether `state` was sealed by this key for `call` and `user_key`, and has not expired.
    pub fn verify(&self, state: &str, call: &CallIdentity, user_key: &str) -> bool {
        self.codec
            .open_json_with::<CallIdentity>(state, user_key.as_bytes())
            .is_ok_and(|sealed| &sealed == call)
    }
}

/// What a sealed state names: the method's target (a tool, say) and a digest of its
/// arguments, so that a state cannot complete another call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallIdentity {
    /// The tool, prompt or resource called.
    pub target: String,
    /// SHA-256 (hex) of the arguments, keys sorted.
    pub arguments: String,
}

impl CallIdentity {
    /// The identity of a call of `target` with `arguments`.
    pub fn new(target: &str, arguments: Option<&serde_json::Map<String, Value>>) -> Self {
        let canonical = arguments
            .map(|arguments| sorted(&Value::Object(arguments.clone())).to_string())
            .unwrap_or_default();
        let digest = Sha256::digest(canonical.as_bytes());
        Self {
            target: target.to_owned(),
            arguments: digest.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

/// `value` with every object's keys in order, so equal arguments give equal text.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// One round of a call on the stateless revision: the answers the client brought (with a
/// state that verified), and what the handler asked for that has no answer yet.
#[derive(Debug, Default)]
pub struct InputRound {
    answers: InputResponses,
    asked: Mutex<InputRequests>,
    samples: Mutex<usize>,
}

/// What [`InputRound::sample`] found.
pub enum RoundSample {
    /// The client's model answered in an earlier round.
    Answered(Box<CreateMessageResult>),
    /// The client answered with something that is not a sampling result.
    Unreadable(String),
    /// No answer yet: the request is recorded for this round's `InputRequiredResult`.
    Asked,
}

impl InputRound {
    /// A round with the client's `answers` (empty on the first round).
    pub fn new(answers: InputResponses) -> Self {
        Self {
            answers,
            ..Self::default()
        }
    }

    /// The answer to the handler's next sampling request, or that request recorded. The
    /// handler's requests are keyed by their order, which is the same in every round.
    pub fn sample(&self, params: CreateMessageRequestParams) -> RoundSample {
        let key = {
            let mut samples = lock(&self.samples);
            *samples += 1;
            format!("sample-{}", *samples)
        };
        match self.answers.get(&key) {
            Some(answer) => match serde_json::from_value::<CreateMessageResult>(answer.clone()) {
                Ok(result) => RoundSample::Answered(Box::new(result)),
                Err(error) => RoundSample::Unreadable(format!(
                    "the client's answer is not a sampling result: {error}"
                )),
            },
            None => {
                lock(&self.asked).insert(
                    key,
                    InputRequest::CreateMessage(CreateMessageRequest::new(params)),
                );
                RoundSample::Asked
            }
        }
    }

    /// What the handler asked for without an answer; `None` when it needed nothing more, so
    /// its own result stands.
    pub fn unanswered(&self) -> Option<InputRequests> {
        let asked = std::mem::take(&mut *lock(&self.asked));
        (!asked.is_empty()).then_some(asked)
    }
}

/// The answer to a call that still needs the client's input.
pub fn input_required(asked: InputRequests, state: String) -> InputRequiredResult {
    InputRequiredResult::new(Some(asked), Some(state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_bind_the_call_the_user_and_the_key() {
        let states = RoundStates::with_key(&[7; 32]).unwrap();
        let call = CallIdentity::new("summarize", serde_json::json!({"id": "a"}).as_object());
        let state = states
            .seal(&call, "alice", Duration::from_secs(60))
            .unwrap();
        assert!(states.verify(&state, &call, "alice"));
        assert!(!states.verify(&state, &call, "bob"), "another user's state");
        let other = CallIdentity::new("summarize", serde_json::json!({"id": "b"}).as_object());
        assert!(
            !states.verify(&state, &other, "alice"),
            "another note's state"
        );
        let mut tampered: Vec<char> = state.chars().collect();
        tampered[10] = if tampered[10] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert!(!states.verify(&tampered, &call, "alice"));
        let stranger = RoundStates::with_key(&[8; 32]).unwrap();
        assert!(!stranger.verify(&state, &call, "alice"), "another key");
        let expired = states
            .seal(&call, "alice", Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(!states.verify(&expired, &call, "alice"));
        assert!(
            RoundStates::with_key(&[1; 16]).is_err(),
            "short keys are refused"
        );
    }

    #[test]
    fn argument_order_does_not_change_the_identity() {
        let one = serde_json::json!({"a": 1, "b": {"y": 2, "x": 1}});
        let two = serde_json::json!({"b": {"x": 1, "y": 2}, "a": 1});
        assert_eq!(
            CallIdentity::new("t", one.as_object()),
            CallIdentity::new("t", two.as_object())
        );
    }
}
