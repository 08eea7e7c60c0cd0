//! The web page of `agent serve`: one HTML file with its script and styles inline, embedded in
//! the binary, so nothing is fetched at run time. It holds no secret: it asks for the token.

use axum::{
    http::header,
    response::{IntoResponse, Response},
};

/// The page.
const INDEX: &str = include_str!("page/index.html");

/// Serves the page (no token needed: it asks for one).
pub(crate) async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            // Everything is inline; nothing may be loaded from elsewhere, and no other site may
            // frame the page.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        INDEX,
    )
        .into_response()
}
