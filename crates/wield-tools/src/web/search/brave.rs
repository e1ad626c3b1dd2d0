//! Brave Search's web API, keyed by `BRAVE_API_KEY`.

use reqwest::Url;

use super::{Hit, SearchBackend, SearchError, hits_from, json_body};
use crate::web::http::Request;

const DEFAULT_URL: &str = "https://api.search.brave.com/res/v1/web/search";

pub struct Brave {
    base: Option<Url>,
    key: String,
}

impl Brave {
    pub fn new(base: Option<Url>, key: String) -> Self {
        Self { base, key }
    }
}

impl SearchBackend for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    fn request(&self, query: &str, limit: usize) -> Result<Request, SearchError> {
        let mut url = match &self.base {
            Some(u) => u.clone(),
            None => Url::parse(DEFAULT_URL).map_err(|e| SearchError::Setup(e.to_string()))?,
        };
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("count", &limit.to_string());
        Ok(Request::get(url)
            .header("accept", "application/json")
            .header("x-subscription-token", self.key.clone()))
    }

    fn parse(&self, body: &str, _limit: usize) -> Result<Vec<Hit>, SearchError> {
        let v = json_body("brave", body)?;
        let web = v.get("web").and_then(|w| w.get("results"));
        match hits_from(web, "title", "url", "description") {
            Some(h) => Ok(h),
            // An answer without a `web` section has no web results.
            None if v.get("type").is_some() => Ok(Vec::new()),
            None => Err(SearchError::Unparsable {
                backend: "brave",
                hint: ": the JSON has no `web.results` list".into(),
            }),
        }
    }
}
