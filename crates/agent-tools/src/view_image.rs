//! `view_image`: a workspace image (PNG, JPEG, GIF or WebP, known by its bytes, not its name) as
//! image input for the model's next request, made to fit the limits in [`fit`].

mod fit;

use std::io::Read as _;

use agent_core::{
    Access, Boundary, Effects, Image, ToolContext, ToolError, ToolErrorKind, ToolOutput, TypedTool,
};
use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;

use self::fit::{Fitted, Kind};
pub use self::fit::{MAX_FILE_BYTES, MAX_IMAGE_BYTES, MAX_PIXELS, MAX_SIDE};
use crate::{
    blocking::{self, io_error},
    paths,
    text::human_size,
};

/// Input of the `view_image` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "a doc comment here becomes a schema description sent with every request; the `//` comments are for readers (docs/tools.md)"
)]
pub struct ViewImageInput {
    // Plain `//` comments keep a field out of the schema every request carries; a `///` one
    // is sent as its description, so only fields whose name and type do not say enough have
    // one (docs/tools.md, "What the model is told").
    // The image file, relative to the workspace root (or absolute inside it).
    pub path: String,
}

/// What view_image needs to know about the session's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewImageConfig {
    /// Whether the model takes image input. When it does not, view_image answers an observation
    /// saying so instead of sending an image the server would refuse with an HTTP 400.
    pub model_sees_images: bool,
}

impl Default for ViewImageConfig {
    fn default() -> Self {
        Self { model_sees_images: true }
    }
}

/// Shows the model an image file from the workspace.
#[derive(Debug, Clone, Default)]
pub struct ViewImage {
    config: ViewImageConfig,
}

impl ViewImage {
    /// A view_image tool for a model described by `config`.
    pub fn new(config: ViewImageConfig) -> Self {
        Self { config }
    }
}

impl TypedTool for ViewImage {
    type Input = ViewImageInput;
    const NAME: &'static str = "view_image";

    fn description(&self) -> String {
        "Shows you an image file (PNG, JPEG, GIF or WebP) in your next turn.".to_owned()
    }

    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }

    fn rule_name(&self) -> String {
        // A view is a read: `Read(…)` rules, the boundary and the secret list apply as to read_file.
        "Read".to_owned()
    }

    fn access(&self, input: &ViewImageInput) -> Vec<Access> {
        vec![Access::Read(input.path.clone())]
    }

    async fn run(&self, input: ViewImageInput, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let config = self.config;
        blocking::run(move || view(&*ctx.workspace, config, &input)).await
    }
}

fn view(
    ws: &dyn Boundary,
    config: ViewImageConfig,
    input: &ViewImageInput,
) -> Result<ToolOutput, ToolError> {
    let path = ws.resolve(&input.path)?;
    let shown = paths::display(ws.root(), &path);
    if !config.model_sees_images {
        return Err(ToolError::new(
            ToolErrorKind::other("no_image_input"),
            format!(
                "{shown} not shown: the model of this session does not take image input (its \
                 profile sets `vision = false`, or the model is known to be text-only); describe \
                 the image from its file name and metadata, or ask the user"
            ),
        ));
    }
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(paths::not_found(ws.root(), &input.path, &path));
        }
        Err(err) => return Err(io_error(&format!("read {shown}"), &err)),
    };
    if meta.is_dir() {
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("{shown} is a directory; use list_dir or glob to find the image"),
        ));
    }
    if !meta.is_file() {
        // A FIFO or a device would block the read or never end.
        return Err(ToolError::new(
            ToolErrorKind::InvalidArguments,
            format!("{shown} is not a regular file; not shown"),
        ));
    }
    let read_error = |err: std::io::Error| io_error(&format!("read {shown}"), &err);
    let mut file = std::fs::File::open(&path).map_err(read_error)?;
    let mut bytes = Vec::new();
    (&mut file).take(16).read_to_end(&mut bytes).map_err(read_error)?;
    let Some(kind) = Kind::sniff(&bytes) else {
        return Err(ToolError::new(
            ToolErrorKind::other("not_an_image"),
            format!(
                "{shown} is not a PNG, JPEG, GIF or WebP image (by its content, whatever its \
                 name); not shown. Read text files with read_file"
            ),
        ));
    };
    let too_large = |size: u64| {
        ToolError::new(
            ToolErrorKind::other("image_too_large"),
            format!(
                "{shown} is {}, over view_image's limit of {} per file; not shown",
                human_size(size),
                human_size(MAX_FILE_BYTES)
            ),
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    // The limit holds for what is read, not what the file said it was: it may grow meanwhile.
    let rest = MAX_FILE_BYTES + 1 - bytes.len() as u64;
    file.take(rest).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    let fitted = fit::fit(kind, &bytes).map_err(|why| {
        let message = format!("{shown} ({}) not shown: {}", kind.label(), why.message);
        ToolError::new(why.kind, message)
    })?;
    let text = describe(&shown, kind, bytes.len(), &fitted);
    let data = base64::engine::general_purpose::STANDARD.encode(&fitted.bytes);
    let image = Image { mime_type: fitted.kind.mime().to_owned(), data };
    Ok(ToolOutput::text(text).with_images(vec![image]))
}

/// The text beside the image: what the file is, and what the model is shown of it.
fn describe(shown: &str, kind: Kind, size: usize, fitted: &Fitted) -> String {
    let (width, height) = fitted.original;
    let mut text =
        format!("{shown} · {} · {width}×{height} px · {}", kind.label(), human_size(size as u64));
    if fitted.changed() {
        let (w, h) = fitted.sent;
        text.push_str(&format!(
            " · shown as {} {w}×{h} px, {} ({})",
            fitted.kind.label(),
            human_size(fitted.bytes.len() as u64),
            fitted.reason()
        ));
    }
    text.push_str(" · the image is attached");
    text
}
