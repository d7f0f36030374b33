//! `GET /v1/models`: what OpenAI- and Anthropic-compatible clients ask first, answered with the model the script
//! serves.

use crate::{Endpoint, SCRIPT};
use serde_json::{Value, json};

async fn get(endpoint: &Endpoint, path: &str, anthropic: bool) -> (u16, Value) {
    let mut request = endpoint.client.get(format!("{}{path}", endpoint.base));
    if anthropic {
        request = request.header("anthropic-version", "2023-06-01");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn the_model_list_names_the_scripts_model_in_the_openai_and_anthropic_shapes() {
    let endpoint = Endpoint::start(&format!("model: scripted-1\n{SCRIPT}"), "").await;
    let (status, list) = get(&endpoint, "/v1/models", false).await;
    assert_eq!(status, 200);
    assert_eq!(
        list,
        json!({"object": "list", "data": [{"id": "scripted-1", "object": "model", "created": 0, "owned_by": "faultlab"}]})
    );
    let (status, one) = get(&endpoint, "/v1/models/scripted-1", false).await;
    assert_eq!((status, &one), (200, &list["data"][0]));
    let (status, unknown) = get(&endpoint, "/v1/models/gpt-9", false).await;
    assert_eq!(status, 404);
    assert!(unknown["error"]["message"].as_str().unwrap().contains("scripted-1"), "{unknown}");

    let (status, list) = get(&endpoint, "/v1/models", true).await;
    assert_eq!(status, 200);
    let model = json!({"type": "model", "id": "scripted-1", "display_name": "scripted-1",
        "created_at": "1970-01-01T00:00:00Z"});
    assert_eq!(list, json!({"data": [model], "has_more": false, "first_id": "scripted-1", "last_id": "scripted-1"}));
    assert_eq!(get(&endpoint, "/v1/models/scripted-1", true).await, (200, model));

    let response = endpoint.post("/v1/models", &json!({})).await;
    assert_eq!(response.status(), 405, "the list is read with GET");
    assert_eq!(response.headers()["allow"], "GET");
    assert!(endpoint.recording().is_empty(), "the list is not a model request");
}

#[tokio::test]
async fn without_a_model_in_the_script_any_name_is_served_and_the_list_names_the_default() {
    let endpoint = Endpoint::start(SCRIPT, "").await;
    let (_, list) = get(&endpoint, "/v1/models", false).await;
    assert_eq!(list["data"][0]["id"], "faultlab-model");
    let (status, one) = get(&endpoint, "/v1/models/gpt-4o", false).await;
    assert_eq!((status, one["id"].as_str()), (200, Some("gpt-4o")), "the endpoint answers as the model named");
}
