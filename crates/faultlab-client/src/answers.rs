//! How the reference client answers a server that asks back: `elicitation/create`, `sampling/createMessage`,
//! `roots/list`. Each is scripted (`accept`, `decline`, `never`); a feature with no script is not declared in the
//! client's capabilities, and a request for it is answered `Method not found`, as the spec asks of a client that
//! lacks the feature.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The root the client lists when it accepts `roots/list`.
pub const ROOT_URI: &str = "file:///faultlab-root";

/// One scripted way to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Answer as a cooperative user would: elicitation `accept` with every requested property filled (booleans
    /// true, strings `"faultlab"`, numbers 0, the first of an enum), a one-line sampling reply, one root.
    Accept,
    /// Elicitation `decline`; sampling and roots an error (code -1, the user rejected it).
    Decline,
    /// Never answer (the request is counted as unanswered).
    Never,
}

/// The scripted answers, by feature; a feature left out is not declared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Answers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Answer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Answer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Answer>,
    /// Declare the tasks extension (`io.modelcontextprotocol/tasks`): set by the runner for a scenario with task
    /// steps, not written in `answers`.
    #[serde(skip)]
    #[schemars(skip)]
    pub tasks: bool,
}

/// What the client does with one server request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reaction {
    /// Send this answer (a result or an error object, keyed `result` / `error`).
    Reply(Value),
    /// Send nothing.
    Silence,
}

impl Answers {
    /// The `capabilities` object the client declares.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        if self.elicitation.is_some() {
            caps.insert("elicitation".into(), json!({"form": {}, "url": {}}));
        }
        if self.sampling.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": false}));
        }
        if self.tasks {
            caps.insert("extensions".into(), json!({crate::tasks::TASKS_EXTENSION: {}}));
        }
        Value::Object(caps)
    }

    /// How to react to a server request `method` with `params` (not `ping`, which is always answered).
    pub fn react(&self, method: &str, params: Option<&Value>) -> Reaction {
        let script = match method {
            "elicitation/create" => self.elicitation,
            "sampling/createMessage" => self.sampling,
            "roots/list" => self.roots,
            _ => None,
        };
        let Some(script) = script else {
            return Reaction::Reply(json!({"error": {"code": -32601, "message": "Method not found"}}));
        };
        match (script, method) {
            (Answer::Never, _) => Reaction::Silence,
            (Answer::Decline, "elicitation/create") => Reaction::Reply(json!({"result": {"action": "decline"}})),
            (Answer::Decline, _) => {
                Reaction::Reply(json!({"error": {"code": -1, "message": "The user rejected the request"}}))
            }
            (Answer::Accept, "elicitation/create") => Reaction::Reply(json!({"result": accept_elicitation(params)})),
            (Answer::Accept, "sampling/createMessage") => Reaction::Reply(json!({"result": {
                "role": "assistant",
                "content": {"type": "text", "text": "ok"},
                "model": "faultlab-scripted",
                "stopReason": "endTurn"
            }})),
            (Answer::Accept, _) => {
                Reaction::Reply(json!({"result": {"roots": [{"uri": ROOT_URI, "name": "faultlab"}]}}))
            }
        }
    }
}

impl Answers {
    /// The `inputResponses` for a 2026-07-28 `input_required` result's `inputRequests`, each answered as the
    /// same request sent during a call would be; the error names the request the script cannot answer (one it
    /// refuses, or never answers: a retry cannot wait for ever).
    pub fn fulfil(&self, input_requests: Option<&Value>) -> Result<Map<String, Value>, String> {
        let mut responses = Map::new();
        for (key, request) in input_requests.and_then(Value::as_object).into_iter().flatten() {
            let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
            match self.react(method, request.get("params")) {
                Reaction::Reply(answer) => match answer.get("result") {
                    Some(result) => {
                        responses.insert(key.clone(), result.clone());
                    }
                    None => {
                        let why = answer.pointer("/error/message").and_then(Value::as_str).unwrap_or("refused");
                        return Err(format!("inputRequests.{key} ({method}) cannot be fulfilled: {why}"));
                    }
                },
                Reaction::Silence => {
                    return Err(format!("inputRequests.{key} ({method}) is never answered by the client's script"));
                }
            }
        }
        Ok(responses)
    }
}

/// An `accept` filling each property of a form's flat `requestedSchema`; URL mode accepts without content.
fn accept_elicitation(params: Option<&Value>) -> Value {
    let Some(params) = params else { return json!({"action": "accept"}) };
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return json!({"action": "accept"});
    }
    let mut content = Map::new();
    let properties = params.pointer("/requestedSchema/properties").and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        let value = if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
            first.clone()
        } else {
            match schema.get("type").and_then(Value::as_str) {
                Some("boolean") => Value::Bool(true),
                Some("string") => Value::from("faultlab"),
                Some("number" | "integer") => Value::from(0),
                // Not a primitive the spec allows in a form: left out rather than guessed.
                _ => continue,
            }
        };
        content.insert(name.clone(), value);
    }
    json!({"action": "accept", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scripted_features_are_declared_and_others_are_refused() {
        let answers = Answers { sampling: Some(Answer::Accept), ..Answers::default() };
        assert_eq!(answers.capabilities(), json!({"sampling": {}}));
        let refused = answers.react("roots/list", None);
        assert_eq!(refused, Reaction::Reply(json!({"error": {"code": -32601, "message": "Method not found"}})));
    }

    #[test]
    fn input_requests_are_fulfilled_as_scripted_or_named_when_they_cannot_be() {
        let requests = json!({"confirm": {"method": "elicitation/create", "params": {"mode": "form",
            "message": "ok?", "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}}}}});
        let accept = Answers { elicitation: Some(Answer::Accept), ..Answers::default() };
        let responses = accept.fulfil(Some(&requests)).unwrap();
        assert_eq!(Value::Object(responses), json!({"confirm": {"action": "accept", "content": {"confirm": true}}}));
        let decline = Answers { elicitation: Some(Answer::Decline), ..Answers::default() };
        assert_eq!(decline.fulfil(Some(&requests)).unwrap()["confirm"], json!({"action": "decline"}));
        let never = Answers { elicitation: Some(Answer::Never), ..Answers::default() };
        assert!(never.fulfil(Some(&requests)).unwrap_err().contains("inputRequests.confirm"));
        let undeclared = Answers::default().fulfil(Some(&requests)).unwrap_err();
        assert!(undeclared.contains("elicitation/create") && undeclared.contains("Method not found"), "{undeclared}");
    }

    #[test]
    fn accept_fills_the_form_and_never_stays_silent() {
        let answers = Answers { elicitation: Some(Answer::Accept), roots: Some(Answer::Never), ..Answers::default() };
        let params = json!({"mode": "form", "message": "ok?", "requestedSchema": {"type": "object", "properties": {
            "confirm": {"type": "boolean"}, "who": {"type": "string"}, "nested": {"type": "object"}}}});
        let Reaction::Reply(reply) = answers.react("elicitation/create", Some(&params)) else { panic!() };
        assert_eq!(reply["result"]["content"], json!({"confirm": true, "who": "faultlab"}));
        assert_eq!(answers.react("roots/list", None), Reaction::Silence);
    }
}
