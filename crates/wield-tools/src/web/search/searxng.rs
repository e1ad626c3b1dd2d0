//! SearXNG's JSON API (`/search?format=json`) at `web_search.base_url`.

use reqwest::Url;

use super::{Hit, SearchBackend, SearchError, hits_from, json_body};
use crate::web::http::Request;

pub struct Searxng {
    base: Url,
}

impl Searxng {
    pub fn new(base: Url) -> Self {
        Self { base }
    }
}

impl SearchBackend for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    fn request(&self, query: &str, _limit: usize) -> Result<Request, SearchError> {
        let mut url = self.base.clone();
        if !url.path().ends_with("/search") {
            let path = format!("{}/search", url.path().trim_end_matches('/'));
            url.set_path(&path);
        }
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        Ok(Request::get(url).header("accept", "application/json"))
    }

    fn parse(&self, body: &str, _limit: usize) -> Result<Vec<Hit>, SearchError> {
        let v = json_body("searxng", body).map_err(|_| SearchError::Unparsable {
            backend: "searxng",
            hint: ": it is not JSON. The instance may serve a bot check, or its JSON format is off: \
                   enable `json` in search.formats of its settings.yml"
                .into(),
        })?;
        hits_from(v.get("results"), "title", "url", "content").ok_or_else(|| SearchError::Unparsable {
            backend: "searxng",
            hint: ": the JSON has no `results` list".into(),
        })
    }
}
