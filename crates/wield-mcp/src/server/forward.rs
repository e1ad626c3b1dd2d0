//! `wield mcp serve` over stdio as the front-end of the servers it bridges:
//! their sampling and elicitation requests go to the one MCP client wield
//! serves, its model and its user, when that client offers them.
//!
//! The bridged servers start before the client connects, so wield offers
//! both capabilities to them from the start; a request that arrives while no
//! client is connected, or that the client does not support, gets an error
//! that says so. A request the server withdraws (`notifications/cancelled`,
//! when its call is cancelled or times out) is withdrawn from the client
//! too, so its form does not stay open.

// Sampling is deprecated by the revision after 2025-11-25 (SEP-2577), but
// servers speaking current revisions still send it.
#![allow(deprecated)]

use std::sync::{PoisonError, RwLock};

use rmcp::ErrorData;
use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ErrorCode, ServerRequest,
};
use rmcp::service::{ElicitationMode, Peer, PeerRequestOptions, RoleServer, ServiceError};

use super::approver::Withdraw;
use crate::client::FrontEnd;

/// Forwards bridged servers' requests to the connected MCP client.
#[derive(Default)]
pub struct ForwardToClient {
    peer: RwLock<Option<Peer<RoleServer>>>,
}

impl ForwardToClient {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The client is connected: forward to it from now on.
    pub(crate) fn connect(&self, peer: Peer<RoleServer>) {
        *self.peer.write().unwrap_or_else(PoisonError::into_inner) = Some(peer);
    }

    fn client(&self, what: &str) -> Result<Peer<RoleServer>, ErrorData> {
        self.peer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| unsupported(format!("{what} is not available: no MCP client is connected to wield")))
    }
}

/// Send `request` to the client and wait for its answer; withdrawn from the
/// client (`notifications/cancelled`) if the wait is given up (the future
/// dropped: the server withdrew its own request).
async fn forwarded(client: &Peer<RoleServer>, request: ServerRequest) -> Result<ClientResult, ServiceError> {
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await?;
    let mut withdraw = Withdraw {
        peer: client.clone(),
        id: Some(handle.id.clone()),
        reason: "the MCP server that asked withdrew its request",
    };
    let answer = handle.await_response().await;
    withdraw.id = None;
    answer
}

fn unsupported(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
}

fn failed(server: &str, what: &str, e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(
        format!("{what} for MCP server `{server}` failed at wield's client: {e}"),
        None,
    )
}

#[async_trait::async_trait]
impl FrontEnd for ForwardToClient {
    fn samples(&self) -> bool {
        true
    }

    fn elicits(&self) -> bool {
        true
    }

    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let client = self.client("sampling")?;
        let offers = client.peer_info().is_some_and(|i| i.capabilities.sampling.is_some());
        if !offers {
            return Err(unsupported(
                "sampling is not supported: the MCP client wield serves does not offer its model".into(),
            ));
        }
        // As the SDK's own `create_message` checks.
        if (params.tools.is_some() || params.tool_choice.is_some()) && !client.supports_sampling_tools() {
            return Err(ErrorData::invalid_params(
                "tools or toolChoice provided but the MCP client wield serves does not support tools in sampling",
                None,
            ));
        }
        params.validate().map_err(|e| ErrorData::invalid_params(e, None))?;
        match forwarded(
            &client,
            ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params)),
        )
        .await
        {
            Ok(ClientResult::CreateMessageResult(r)) => Ok(*r),
            Ok(_) => Err(failed(server, "sampling", ServiceError::UnexpectedResponse)),
            Err(e) => Err(failed(server, "sampling", e)),
        }
    }

    async fn elicit(&self, server: &str, mut params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let client = self.client("elicitation")?;
        // The user is told who asks: a bridged server, not wield.
        match &mut params {
            ElicitRequestParams::FormElicitationParams { message, .. }
            | ElicitRequestParams::UrlElicitationParams { message, .. } => {
                *message = format!("MCP server `{server}` (through wield) asks: {message}");
            }
            _ => {}
        }
        let mode = match &params {
            ElicitRequestParams::UrlElicitationParams { .. } => ElicitationMode::Url,
            _ => ElicitationMode::Form,
        };
        if !client.supported_elicitation_modes().contains(&mode) {
            return Err(unsupported(format!(
                "elicitation ({mode:?} mode) is not supported: the MCP client wield serves does not offer it"
            )));
        }
        match forwarded(&client, ServerRequest::ElicitRequest(ElicitRequest::new(params))).await {
            Ok(ClientResult::ElicitResult(r)) => Ok(r),
            Ok(_) => Err(failed(server, "elicitation", ServiceError::UnexpectedResponse)),
            Err(e) => Err(failed(server, "elicitation", e)),
        }
    }
}
