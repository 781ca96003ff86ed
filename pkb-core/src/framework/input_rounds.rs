//! Multi-round-trip requests (2026-07-28): a handler that needs the client's input (a sample
//! of its model, an answer of its user, its roots) asks the
//! [`Context`](super::context::Context) as on any revision; on the stateless revision the
//! framework answers the call with an `InputRequiredResult` naming what it needs and a sealed
//! state, and runs the handler again when the client retries with the answers. The state
//! carries the answers of earlier rounds, so a handler may ask again after an answer. Handlers
//! never see the rounds.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    InputRequest, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec,
    SealOptions,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::locks::lock;

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

    /// The state of a call that must come back with answers: what it was and the answers it
    /// has had so far (`round`), for whom (`user_key`, bound as associated data, so another
    /// user's state fails), until `ttl`.
    pub fn seal(
        &self,
        round: &RoundState,
        user_key: &str,
        ttl: Duration,
    ) -> Result<String, String> {
        let options = SealOptions::new()
            .associated_data(user_key.as_bytes())
            .ttl(ttl);
        self.codec
            .seal_json_with(round, &options)
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

    /// The answers of earlier rounds that `state` carries, when this key sealed it for `call`
    /// and `user_key` and it has not expired; `None` otherwise.
    pub fn open(&self, state: &str, call: &CallIdentity, user_key: &str) -> Option<InputResponses> {
        self.codec
            .open_json_with::<RoundState>(state, user_key.as_bytes())
            .ok()
            .filter(|sealed| &sealed.call == call)
            .map(|sealed| sealed.answers)
    }
}

/// What a sealed `requestState` holds: the call it belongs to, and the client's answers of
/// its earlier rounds, which the client does not send again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundState {
    /// The call.
    pub call: CallIdentity,
    /// Every answer the call has used so far, by key.
    pub answers: InputResponses,
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

/// One round of a call on the stateless revision: the answers the client brought (with those
/// of earlier rounds, from a state that verified), and what the handler asked for that has no
/// answer yet.
#[derive(Debug, Default)]
pub struct InputRound {
    answers: InputResponses,
    progress: Mutex<Progress>,
}

/// What the handler did in one round.
#[derive(Debug, Default)]
struct Progress {
    /// How many requests the handler made under each name: their keys.
    asked_by_name: BTreeMap<String, usize>,
    /// The requests with no answer yet.
    asked: InputRequests,
    /// The answers the handler used.
    used: InputResponses,
    /// The first answer that was not what its request asks for.
    unreadable: Option<String>,
}

/// What [`InputRound::answer`] found.
pub enum RoundAnswer<T> {
    /// The client answered in an earlier round.
    Answered(T),
    /// No answer yet, or one that could not be read: the request is recorded for this
    /// round's `InputRequiredResult`, or the call fails with what was wrong.
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

    /// The answer to the handler's next request of `kind` (`"sampling"`, `"elicitation"`,
    /// `"roots"`) made under `name` (the kind, unless the handler named its requests), or
    /// that request recorded. A handler's requests are keyed by name and order (`sampling`,
    /// `sampling-2`, ...), which are the same in every round.
    pub fn answer<T: DeserializeOwned>(
        &self,
        kind: &'static str,
        name: &str,
        request: InputRequest,
    ) -> RoundAnswer<T> {
        let mut progress = lock(&self.progress);
        let count = progress.asked_by_name.entry(name.to_owned()).or_default();
        *count += 1;
        let key = match *count {
            1 => name.to_owned(),
            n => format!("{name}-{n}"),
        };
        let Some(answer) = self.answers.get(&key) else {
            progress.asked.insert(key, request);
            return RoundAnswer::Asked;
        };
        match serde_json::from_value::<T>(answer.clone()) {
            Ok(result) => {
                progress.used.insert(key, answer.clone());
                RoundAnswer::Answered(result)
            }
            Err(error) => {
                progress.unreadable.get_or_insert(format!(
                    "inputResponses.{key} is not a {kind} result: {error}"
                ));
                RoundAnswer::Asked
            }
        }
    }

    /// How the round ended: the handler's own result stands, the call needs more input, or
    /// an answer was unreadable. `call` is asked for only when a state is to be sealed: it
    /// hashes the arguments, which a call that completes never needs.
    pub fn outcome(&self, call: impl FnOnce() -> CallIdentity) -> RoundOutcome {
        let mut progress = lock(&self.progress);
        if let Some(problem) = progress.unreadable.take() {
            return RoundOutcome::Unreadable(problem);
        }
        if progress.asked.is_empty() {
            return RoundOutcome::Complete;
        }
        RoundOutcome::NeedsInput {
            asked: std::mem::take(&mut progress.asked),
            state: RoundState {
                call: call(),
                answers: std::mem::take(&mut progress.used),
            },
        }
    }
}

/// How one round of a call ended.
pub enum RoundOutcome {
    /// The handler needed nothing more: its result is the answer.
    Complete,
    /// The handler asked for what the client has not answered: the call is answered with an
    /// `InputRequiredResult` asking for it, with `state` sealed.
    NeedsInput {
        /// The requests without an answer.
        asked: InputRequests,
        /// What the next round must bring back.
        state: RoundState,
    },
    /// An answer was not what its request asks for: an invalid-params error.
    Unreadable(String),
}

/// The answer to a call that still needs the client's input.
pub fn input_required(asked: InputRequests, state: String) -> InputRequiredResult {
    InputRequiredResult::new(Some(asked), Some(state))
}

#[cfg(test)]
// Roots are deprecated only for the stateless revision that asks for them in rounds.
#[allow(deprecated)]
mod tests {
    use super::*;

    #[test]
    fn states_bind_the_call_the_user_and_the_key() {
        let states = RoundStates::with_key(&[7; 32]).unwrap();
        let call = CallIdentity::new("summarize", serde_json::json!({"id": "a"}).as_object());
        let answers: InputResponses = [("sampling".to_owned(), serde_json::json!({"x": 1}))]
            .into_iter()
            .collect();
        let round = RoundState {
            call: call.clone(),
            answers: answers.clone(),
        };
        let state = states
            .seal(&round, "alice", Duration::from_secs(60))
            .unwrap();
        assert_eq!(states.open(&state, &call, "alice"), Some(answers));
        assert_eq!(
            states.open(&state, &call, "bob"),
            None,
            "another user's state"
        );
        let other = CallIdentity::new("summarize", serde_json::json!({"id": "b"}).as_object());
        assert_eq!(
            states.open(&state, &other, "alice"),
            None,
            "another note's state"
        );
        let mut tampered: Vec<char> = state.chars().collect();
        tampered[10] = if tampered[10] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        assert_eq!(states.open(&tampered, &call, "alice"), None);
        let stranger = RoundStates::with_key(&[8; 32]).unwrap();
        assert_eq!(stranger.open(&state, &call, "alice"), None, "another key");
        let expired = states
            .seal(&round, "alice", Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(states.open(&expired, &call, "alice"), None);
        assert!(
            RoundStates::with_key(&[1; 16]).is_err(),
            "short keys are refused"
        );
    }

    fn roots_request() -> InputRequest {
        InputRequest::ListRoots(rmcp::model::ListRootsRequest::default())
    }

    #[test]
    fn a_round_keys_requests_by_kind_and_order_and_keeps_the_answers_it_used() {
        let call = || CallIdentity::new("t", None);
        let first = InputRound::new(InputResponses::default());
        assert!(matches!(
            first.answer::<Value>("roots", "roots", roots_request()),
            RoundAnswer::Asked
        ));
        assert!(matches!(
            first.answer::<Value>("roots", "roots", roots_request()),
            RoundAnswer::Asked
        ));
        let RoundOutcome::NeedsInput { asked, state } = first.outcome(call) else {
            panic!("the first round needs input");
        };
        assert_eq!(asked.keys().collect::<Vec<_>>(), ["roots", "roots-2"]);
        assert!(state.answers.is_empty());

        let answers: InputResponses = [
            ("roots".to_owned(), serde_json::json!({"roots": []})),
            ("unasked".to_owned(), serde_json::json!(1)),
        ]
        .into_iter()
        .collect();
        let second = InputRound::new(answers);
        assert!(matches!(
            second.answer::<Value>("roots", "roots", roots_request()),
            RoundAnswer::Answered(_)
        ));
        assert!(matches!(
            second.answer::<Value>("roots", "roots", roots_request()),
            RoundAnswer::Asked
        ));
        let RoundOutcome::NeedsInput { asked, state } = second.outcome(call) else {
            panic!("the second answer is missing");
        };
        assert_eq!(asked.keys().collect::<Vec<_>>(), ["roots-2"]);
        assert_eq!(
            state.answers.keys().collect::<Vec<_>>(),
            ["roots"],
            "the state keeps the answer used, not the unasked one"
        );
    }

    #[test]
    fn an_unreadable_answer_ends_the_round_with_what_was_wrong() {
        let answers: InputResponses = [("client_roots".to_owned(), serde_json::json!(12345))]
            .into_iter()
            .collect();
        let round = InputRound::new(answers);
        assert!(matches!(
            round.answer::<rmcp::model::ListRootsResult>("roots", "client_roots", roots_request()),
            RoundAnswer::Asked
        ));
        let RoundOutcome::Unreadable(problem) = round.outcome(|| CallIdentity::new("t", None))
        else {
            panic!("an unreadable answer fails the round");
        };
        assert!(
            problem.starts_with("inputResponses.client_roots is not a roots result"),
            "{problem}"
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
