//! Tavily's search API, keyed by `TAVILY_API_KEY`.

use reqwest::Url;
use serde_json::json;

use super::{Hit, SearchBackend, SearchError, hits_from, json_body};
use crate::web::http::Request;

const DEFAULT_URL: &str = "https://api.tavily.com/search";

pub struct Tavily {
    base: Option<Url>,
    key: String,
}

impl Tavily {
    pub fn new(base: Option<Url>, key: String) -> Self {
        Self { base, key }
    }
}

impl SearchBackend for Tavily {
    fn name(&self) -> &'static str {
        "tavily"
    }

    fn request(&self, query: &str, limit: usize) -> Result<Request, SearchError> {
        let url = match &self.base {
            Some(u) => u.clone(),
            None => Url::parse(DEFAULT_URL).map_err(|e| SearchError::Setup(e.to_string()))?,
        };
        let body = json!({"query": query, "max_results": limit}).to_string();
        Ok(Request::post(url, body, "application/json")
            .header("accept", "application/json")
            .header("authorization", format!("Bearer {}", self.key)))
    }

    fn parse(&self, body: &str, _limit: usize) -> Result<Vec<Hit>, SearchError> {
        let v = json_body("tavily", body)?;
        hits_from(v.get("results"), "title", "url", "content").ok_or_else(|| SearchError::Unparsable {
            backend: "tavily",
            hint: ": the JSON has no `results` list".into(),
        })
    }
}
