//! What an OpenAI-compatible server says about itself, for setting one up:
//! the models it serves (`GET BASE/models`) and, from llama.cpp's
//! `llama-server`, the context it was started with (`GET ROOT/props`).

use std::time::Duration;

use serde_json::Value;

/// What a server answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovered {
    /// The ids `GET BASE/models` listed, in its order.
    pub models: Vec<String>,
    /// The context each request gets, in tokens, where the server says
    /// (llama.cpp's `n_ctx` per slot).
    pub context: Option<u64>,
}

/// Why nothing could be learnt from a server.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    /// Nothing answered at the address.
    #[error("nothing answers at {url}: {cause}")]
    Unreachable { url: String, cause: String },
    /// Something answered, but not as an OpenAI-compatible server does.
    #[error(
        "{url} answered HTTP {status}, not a list of models: is it an OpenAI-compatible base URL (often ending in /v1)?"
    )]
    NotAModelServer { url: String, status: u16 },
}

/// Asks the OpenAI-compatible server at `base_url` which models it serves
/// and how large its context is, waiting at most `timeout` for each answer.
pub async fn discover(base_url: &str, timeout: Duration) -> Result<Discovered, DiscoverError> {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .build()
        .map_err(|e| DiscoverError::Unreachable {
            url: base_url.to_owned(),
            cause: e.to_string(),
        })?;
    let base = base_url.trim_end_matches('/');
    let url = format!("{base}/models");
    let answer = client.get(&url).send().await.map_err(|e| DiscoverError::Unreachable {
        url: url.clone(),
        cause: crate::provider::cause(&e),
    })?;
    let status = answer.status().as_u16();
    if !answer.status().is_success() {
        return Err(DiscoverError::NotAModelServer { url, status });
    }
    let listed: Value = match answer.text().await.map(|t| serde_json::from_str(&t)) {
        Ok(Ok(v)) => v,
        _ => return Err(DiscoverError::NotAModelServer { url, status }),
    };
    let models = model_ids(&listed);
    // llama.cpp serves /props beside /v1; other servers answer 404.
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let context = match client.get(format!("{root}/props")).send().await {
        Ok(r) if r.status().is_success() => r
            .text()
            .await
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .as_ref()
            .and_then(context_of),
        _ => None,
    };
    Ok(Discovered { models, context })
}

/// The ids of an OpenAI `GET /models` answer (`{"data": [{"id": …}]}`;
/// Ollama's and llama.cpp's also have `models`).
fn model_ids(listed: &Value) -> Vec<String> {
    let from = |key: &str, id: &str| -> Vec<String> {
        listed[key]
            .as_array()
            .map(|a| a.iter().filter_map(|m| m[id].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let data = from("data", "id");
    if data.is_empty() { from("models", "name") } else { data }
}

/// llama.cpp's context per slot: `default_generation_settings.n_ctx`.
fn context_of(props: &Value) -> Option<u64> {
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| props["n_ctx"].as_u64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_ids_come_from_data_or_else_models() {
        let openai = json!({ "object": "list", "data": [{ "id": "qwen3" }, { "id": "b" }] });
        assert_eq!(model_ids(&openai), ["qwen3", "b"]);
        let other = json!({ "models": [{ "name": "llama3.2:latest" }] });
        assert_eq!(model_ids(&other), ["llama3.2:latest"]);
        assert!(model_ids(&json!({})).is_empty());
    }

    #[test]
    fn the_context_is_read_from_llama_cpp_s_props() {
        let props = json!({ "default_generation_settings": { "n_ctx": 4096 }, "total_slots": 1 });
        assert_eq!(context_of(&props), Some(4096));
        assert_eq!(context_of(&json!({ "n_ctx": 8192 })), Some(8192));
        assert_eq!(context_of(&json!({})), None);
    }
}
