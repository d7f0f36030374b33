//! `GET /v1/models` and `GET /v1/models/{id}`: the model list several OpenAI- and Anthropic-compatible clients ask
//! for before their first request, naming the model the script serves. A request with an `anthropic-version`
//! header gets the Anthropic shapes, any other the OpenAI ones. Not a model request: nothing is recorded.

use crate::api::{Api, error_body};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

/// The name listed when the script names no model (the endpoint then answers as whatever model a request names).
pub const DEFAULT_MODEL: &str = "faultlab-model";

/// Whether `path` is the model list or one model.
pub fn is_models_path(path: &str) -> bool {
    // `/v1/models/{model}:generateContent` is a Gemini request, not a model's entry.
    path == "/v1/models" || (path.starts_with("/v1/models/") && !path.contains(':'))
}

/// The answer to a request on a models path; `served` is the script's `model`.
pub fn answer(method: &Method, path: &str, headers: &HeaderMap, served: Option<&str>) -> Response {
    let anthropic = headers.contains_key("anthropic-version");
    let api = if anthropic { Api::Messages } else { Api::ChatCompletions };
    if method != Method::GET && method != Method::HEAD {
        let mut refused = error(api, StatusCode::METHOD_NOT_ALLOWED, "the model list is read with GET");
        refused.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET"));
        return refused;
    }
    let body = match path.strip_prefix("/v1/models/") {
        None => {
            let id = served.unwrap_or(DEFAULT_MODEL);
            if anthropic {
                json!({"data": [model(id, true)], "has_more": false, "first_id": id, "last_id": id})
            } else {
                json!({"object": "list", "data": [model(id, false)]})
            }
        }
        Some(id) => match served {
            Some(served) if served != id => {
                let message = format!("model `{id}` is not served here; faultlab model serves `{served}`");
                return error(api, StatusCode::NOT_FOUND, &message);
            }
            // With no model in the script, the endpoint answers as any model a request names.
            _ => model(id, anthropic),
        },
    };
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// One model object: OpenAI's `Model` (`created` in seconds; 0, as the script has no release date) or
/// Anthropic's `ModelInfo` (`created_at` the epoch, which its API gives for an unknown release date).
fn model(id: &str, anthropic: bool) -> Value {
    if anthropic {
        json!({"type": "model", "id": id, "display_name": id, "created_at": "1970-01-01T00:00:00Z"})
    } else {
        json!({"id": id, "object": "model", "created": 0, "owned_by": "faultlab"})
    }
}

fn error(api: Api, status: StatusCode, message: &str) -> Response {
    let mut response = (status, error_body(api, status.as_u16(), message).to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
