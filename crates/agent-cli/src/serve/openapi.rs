//! The OpenAPI 3.1 document of `agent serve`: generated from the routes' annotations and the
//! API's types, committed as `docs/serve.openapi.json`, and served as committed. The generator
//! (utoipa) is compiled into the tests only, where a test keeps the committed file equal to what
//! the code generates: the document is fixed text at run time, and the schema builder utoipa
//! expands for every type and route would otherwise ship in the release binary, which was over
//! its size budget (docs/BENCHMARKS.md, "Binary size").

/// The document, as committed.
pub(crate) const DOCUMENT: &str = include_str!("../../../../docs/serve.openapi.json");

#[cfg(test)]
mod generated {
    use utoipa::{
        Modify, OpenApi,
        openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    };

    use crate::serve::{api, routes};

    #[derive(OpenApi)]
    #[openapi(
        info(title = "agent serve", description = "Sessions of the agent over HTTP (docs/serve.md)."),
        paths(
            routes::health, routes::document, routes::create_session, routes::list_sessions,
            routes::get_session, routes::close_session, routes::transcript, routes::prompt,
            routes::events, routes::cancel, routes::approvals, routes::answer, routes::questions, routes::reply,
            routes::checkpoints,
            routes::undo, routes::fork,
        ),
        components(schemas(
            api::CreateSession, api::PermissionMode, api::SessionInfo, api::PromptRequest,
            api::PromptAccepted, api::Problem, api::PendingApproval, api::ApprovalAnswer,
            api::Decision, api::PendingQuestion, api::QuestionChoice, api::QuestionAnswer,
            api::TranscriptBody, api::Checkpoint, api::UndoRequest, api::UndoResult,
            api::ForkRequest,
        )),
        modifiers(&Bearer),
        security(("token" = [])),
    )]
    struct Document;

    /// Every route but the health check needs the token.
    struct Bearer;

    impl Modify for Bearer {
        fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
            let components = openapi.components.get_or_insert_with(Default::default);
            let scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
            components.add_security_scheme("token", SecurityScheme::Http(scheme));
            // The version is the API's, not the crate's: fixed, so the committed file stays equal.
            openapi.info.version = "1".to_owned();
            openapi.info.license = None;
        }
    }

    /// The document as pretty JSON with a final newline.
    pub(super) fn document() -> String {
        let mut text = Document::openapi().to_pretty_json().unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_document_matches_the_routes() {
        let generated = super::generated::document();
        if generated != super::DOCUMENT && std::env::var_os("AGENT_BLESS_SCHEMA").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/serve.openapi.json");
            std::fs::write(path, &generated).unwrap();
            return;
        }
        assert!(
            generated == super::DOCUMENT,
            "docs/serve.openapi.json is out of date with crates/agent-cli/src/serve; regenerate \
             it with `AGENT_BLESS_SCHEMA=1 cargo test -p agent-cli --bin agent openapi`"
        );
    }
}
