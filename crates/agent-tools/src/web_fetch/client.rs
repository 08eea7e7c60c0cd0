//! The HTTP side of web_fetch: one client per session whose resolver hands out only addresses
//! the SSRF guard vetted, and the redirect loop that checks every hop again.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use agent_core::{Boundary, DomainRule, ToolError, ToolErrorKind};
use agent_sandbox::network::{Resolver, address, resolver::normalize_host};
use reqwest::{StatusCode, Url, header};

use super::body::{self, Body};

/// The most redirects followed for one fetch.
pub const MAX_REDIRECTS: usize = 5;
/// The rule name the permission policy and the guard use for web_fetch.
pub const RULE_NAME: &str = "WebFetch";

/// The addresses the guard vetted, by host: the client's resolver answers from here only, so a
/// connection goes to an address that was checked, with no second lookup in between.
type Vetted = Arc<Mutex<HashMap<String, Vec<SocketAddr>>>>;

struct VettedResolver(Vetted);

impl reqwest::dns::Resolve for VettedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let found =
            self.0.lock().ok().and_then(|map| map.get(&normalize_host(name.as_str())).cloned());
        Box::pin(async move {
            match found {
                Some(addrs) => Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs),
                None => Err("web_fetch connects only to addresses its guard checked".into()),
            }
        })
    }
}

/// One response, after redirects.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) url: Url,
    pub(crate) status: StatusCode,
    pub(crate) content_type: Option<String>,
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
    /// The body, or `None` for `304 Not Modified`.
    pub(crate) body: Option<Vec<u8>>,
    /// Whether the body was cut at the download limit.
    pub(crate) cut: bool,
    /// How many redirects were followed.
    pub(crate) redirects: usize,
}

/// Validators to revalidate a cached copy with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Validators {
    pub(crate) etag: Option<String>,
    pub(crate) last_modified: Option<String>,
}

/// The session's HTTP client and guard.
#[derive(Debug, Default)]
pub(crate) struct Client {
    client: OnceLock<reqwest::Client>,
    vetted: Vetted,
}

impl std::fmt::Debug for VettedResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VettedResolver")
    }
}

pub(crate) fn refused(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::PermissionDenied, message)
}

fn failed(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::ToolError, message)
}

impl Client {
    fn http(&self, timeout: Duration) -> &reqwest::Client {
        self.client.get_or_init(|| {
            // reqwest is built without a default crypto provider so that only ring is compiled
            // (the same TLS stack as agent-model); a second install fails harmlessly.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .timeout(timeout)
                .connect_timeout(Duration::from_secs(10))
                // Redirects are ours, so every hop is checked; the user's proxy variables are
                // not used, since a proxy would pick the address we must check.
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .dns_resolver(Arc::new(VettedResolver(self.vetted.clone())))
                .user_agent(concat!("agent-web-fetch/", env!("CARGO_PKG_VERSION")))
                .build()
                .unwrap_or_default()
        })
    }

    /// GETs `url`, following up to [`MAX_REDIRECTS`] redirects, each hop checked: the scheme, a
    /// redirect to another host against the domain rules, and every address against the guard.
    /// At most `max_body` bytes of the body are read, and at most `max_body` decoded from them.
    pub(crate) async fn get(
        &self,
        url: Url,
        boundary: &dyn Boundary,
        resolver: &Resolver,
        validators: Option<&Validators>,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Fetched, ToolError> {
        let first_host = url.host_str().map(normalize_host).unwrap_or_default();
        let mut url = url;
        let mut redirects = 0;
        loop {
            self.check_hop(&url, &first_host, boundary, resolver, redirects).await?;
            let mut request = self
                .http(timeout)
                .get(url.clone())
                .header(
                    header::ACCEPT,
                    "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.5",
                )
                // Only the codings `Body` decodes; reqwest is built without decompression.
                .header(header::ACCEPT_ENCODING, body::ACCEPT_ENCODING);
            if let (0, Some(v)) = (redirects, validators) {
                if let Some(etag) = &v.etag {
                    request = request.header(header::IF_NONE_MATCH, etag);
                }
                if let Some(date) = &v.last_modified {
                    request = request.header(header::IF_MODIFIED_SINCE, date);
                }
            }
            let mut response = request.send().await.map_err(|err| transport(&url, err))?;
            let status = response.status();
            let header_text = |name: header::HeaderName| {
                response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
            };
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                let Some(location) = header_text(header::LOCATION) else {
                    return Err(failed(format!("{url} answered {status} without a Location")));
                };
                if redirects == MAX_REDIRECTS {
                    return Err(failed(format!(
                        "{url} redirects more than {MAX_REDIRECTS} times; not followed further"
                    )));
                }
                url = url.join(&location).map_err(|err| {
                    failed(format!("{url} redirects to an invalid URL `{location}`: {err}"))
                })?;
                redirects += 1;
                continue;
            }
            let content_type = header_text(header::CONTENT_TYPE);
            let etag = header_text(header::ETAG);
            let last_modified = header_text(header::LAST_MODIFIED);
            if status == StatusCode::NOT_MODIFIED {
                return Ok(Fetched {
                    url,
                    status,
                    content_type,
                    etag,
                    last_modified,
                    body: None,
                    cut: false,
                    redirects,
                });
            }
            // A binary type is refused before its body is read.
            if let Some(kind) = content_type.as_deref()
                && let Err(essence) = super::convert::kind(Some(kind), b"")
            {
                return Err(ToolError::new(
                    ToolErrorKind::BinaryFile,
                    format!(
                        "{url} is {essence}, not text; web_fetch reads text pages only (HTML, Markdown, plain text, JSON, XML)"
                    ),
                ));
            }
            // The coding is judged before the body is read: one web_fetch cannot decode is
            // refused by name.
            let codings: Vec<String> = response
                .headers()
                .get_all(header::CONTENT_ENCODING)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect();
            let broken = |err: body::BodyError| failed(format!("{url} {err}"));
            let mut body =
                Body::new(codings.iter().map(String::as_str), max_body).map_err(broken)?;
            let mut complete = true;
            while let Some(chunk) = response.chunk().await.map_err(|err| transport(&url, err))? {
                if !body.push(&chunk).map_err(broken)? {
                    complete = false;
                    break;
                }
            }
            let (body, cut) = body.finish(complete).map_err(broken)?;
            return Ok(Fetched {
                url,
                status,
                content_type,
                etag,
                last_modified,
                body: Some(body),
                cut,
                redirects,
            });
        }
    }

    /// The checks of one hop, before anything is sent. The permission policy judged the first
    /// host already; a redirect to another host must be allowed by a rule, or the model is told
    /// to fetch the new URL itself, which the policy then judges (and the REPL asks about).
    async fn check_hop(
        &self,
        url: &Url,
        first_host: &str,
        boundary: &dyn Boundary,
        resolver: &Resolver,
        hop: usize,
    ) -> Result<(), ToolError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refused(format!(
                "{url}: only http and https URLs are fetched, not {}:",
                url.scheme()
            )));
        }
        let Some(raw_host) = url.host_str() else {
            return Err(refused(format!("{url} has no host")));
        };
        let host = normalize_host(raw_host);
        let rule = boundary.domain_rule(RULE_NAME, &host);
        let opened = matches!(rule, DomainRule::Allowed(_));
        let open_with = format!("`{RULE_NAME}(domain:{host})`");
        let via = if hop > 0 { format!("{url} (a redirect)") } else { url.to_string() };
        // An address written in the URL is judged before any rule about names, so the answer
        // names the real reason.
        if let Some(ip) = address::parse_host_ip(&host)
            && !address::classify(ip).is_public()
            && !opened
        {
            let class = address::classify(ip);
            return Err(refused(format!(
                "{via}: {ip} is a {class} address; web_fetch does not reach internal addresses unless an allow rule opens the host: {open_with}"
            )));
        }
        if let DomainRule::Denied(rule) = &rule {
            return Err(refused(format!("{via}: the deny rule `{rule}` forbids {host}")));
        }
        if hop > 0 && host != first_host && !opened {
            return Err(refused(format!(
                "{via} is on another host ({host}) than the page asked for; it was not followed. Call web_fetch with that URL to fetch it (the permission policy judges it), or allow the host with {open_with}"
            )));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let resolved =
            resolver.resolve(&host, port).await.map_err(|r| failed(format!("{via}: {r}")))?;
        let addrs = Resolver::vet(&resolved, opened).map_err(|refusal| {
            refused(format!(
                "{via}: {refusal}; web_fetch does not reach internal addresses unless an allow rule opens the host: {open_with}"
            ))
        })?;
        if let Ok(mut map) = self.vetted.lock() {
            map.insert(host, addrs);
        }
        Ok(())
    }
}

fn transport(url: &Url, err: reqwest::Error) -> ToolError {
    if err.is_timeout() {
        return ToolError::new(ToolErrorKind::Timeout, format!("{url} did not answer in time"));
    }
    let err = err.without_url();
    let mut message = format!("could not fetch {url}: {err}");
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    failed(message)
}
