//! view_image: images of every kind known by their bytes, scaled to the limits, and every
//! refusal (outside the workspace, a link leading out, a non-image, a decompression bomb, a model
//! that cannot see), each with a control that a proper image is shown. Secret files are the
//! permission policy's, as for read_file: `agent-cli/tests/suite/view_image.rs` checks them.

use std::{io::Cursor, sync::Arc};

use agent_core::{Tool, ToolContext, ToolOutput};
use agent_tools::{
    BuiltinConfig, VIEW_IMAGE_MAX_BYTES, VIEW_IMAGE_MAX_SIDE, ViewImageConfig, builtin_with_tracker,
};
use base64::Engine as _;
use image::{DynamicImage, ImageFormat, RgbaImage};
use insta::assert_snapshot;
use serde_json::json;

use super::Fixture;

/// An image of `width` × `height` in `format`: a gradient, or noise (which does not compress).
fn picture(width: u32, height: u32, format: ImageFormat, noise: bool) -> Vec<u8> {
    let mut state = 0x2545_f491_u32;
    let image = RgbaImage::from_fn(width, height, |x, y| {
        if noise {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            image::Rgba(state.to_le_bytes())
        } else {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 128, 255])
        }
    });
    let image = match format {
        ImageFormat::Jpeg => DynamicImage::ImageRgb8(DynamicImage::ImageRgba8(image).to_rgb8()),
        _ => DynamicImage::ImageRgba8(image),
    };
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// A valid PNG header declaring `width` × `height` and a few bytes of pixel data: the shape of a
/// decompression bomb, whose few bytes claim gigabytes.
fn bomb(width: u32, height: u32) -> Vec<u8> {
    let mut header = width.to_be_bytes().to_vec();
    header.extend(height.to_be_bytes());
    header.extend([8, 6, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    // One zero byte, deflated: far too little data for the size declared.
    let data = [0x78, 0x9c, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01];
    for (name, body) in [(&b"IHDR"[..], &header[..]), (b"IDAT", &data), (b"IEND", &[])] {
        out.extend((body.len() as u32).to_be_bytes());
        let chunk = [name, body].concat();
        out.extend(&chunk);
        out.extend(crc32(&chunk).to_be_bytes());
    }
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFF_u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Calls view_image on `path` with the fixture's boundary; the output, or the observation.
async fn view(fx: &Fixture, path: &str) -> Result<ToolOutput, String> {
    view_with(fx, &fx.tools, path).await
}

async fn view_with(
    fx: &Fixture,
    tools: &[Arc<dyn Tool>],
    path: &str,
) -> Result<ToolOutput, String> {
    let tool = tools.iter().find(|t| t.spec().name == "view_image").unwrap();
    let prepared = tool.prepare(&json!({"path": path}).to_string()).unwrap();
    let ctx = ToolContext::new(fx.boundary(), "session".into(), "call_1");
    tool.run(prepared, ctx).await.map_err(|err| err.observation())
}

/// The one image of an output, decoded: its media type, its bytes and its size in pixels.
fn sent(output: &ToolOutput) -> (String, Vec<u8>, (u32, u32)) {
    assert_eq!(output.images.len(), 1, "{}", output.text);
    let image = &output.images[0];
    let bytes = base64::engine::general_purpose::STANDARD.decode(&image.data).unwrap();
    let decoded = image::load_from_memory(&bytes).unwrap();
    (image.mime_type.clone(), bytes, (decoded.width(), decoded.height()))
}

#[tokio::test]
async fn a_small_image_of_each_kind_is_sent_as_it_is() {
    let fx = Fixture::new();
    for (name, format, mime) in [
        ("shot.png", ImageFormat::Png, "image/png"),
        ("photo.jpg", ImageFormat::Jpeg, "image/jpeg"),
        ("anim.webp", ImageFormat::WebP, "image/webp"),
    ] {
        let bytes = picture(64, 32, format, false);
        fx.put(name, &bytes);
        let output = view(&fx, name).await.unwrap();
        let (sent_mime, sent_bytes, size) = sent(&output);
        assert_eq!((sent_mime.as_str(), size), (mime, (64, 32)), "{name}");
        assert_eq!(sent_bytes, bytes, "{name}: the file's own bytes");
    }
    assert_snapshot!(view(&fx, "shot.png").await.unwrap().text, @"shot.png · PNG · 64×32 px · 314 B · the image is attached");
}

#[tokio::test]
async fn the_kind_comes_from_the_content_not_the_name() {
    let fx = Fixture::new();
    fx.put("really-a-png.txt", picture(8, 8, ImageFormat::Png, false));
    let (mime, _, _) = sent(&view(&fx, "really-a-png.txt").await.unwrap());
    assert_eq!(mime, "image/png");
    fx.put("notes.png", "just some text, not an image\n");
    fx.put("truncated.png", &picture(64, 64, ImageFormat::Png, true)[..300]);
    assert_snapshot!(view(&fx, "notes.png").await.unwrap_err(), @r#"{"ok":false,"error":"not_an_image","message":"notes.png is not a PNG, JPEG, GIF or WebP image (by its content, whatever its name); not shown. Read text files with read_file"}"#);
    let truncated = view(&fx, "truncated.png").await.unwrap_err();
    assert!(truncated.starts_with(r#"{"ok":false,"error":"not_an_image","message":"truncated.png (PNG) not shown: it is not a valid image: "#), "{truncated}");
}

#[tokio::test]
async fn a_gif_is_sent_as_its_first_frame_in_png() {
    let fx = Fixture::new();
    fx.put("a.gif", picture(40, 20, ImageFormat::Gif, false));
    let output = view(&fx, "a.gif").await.unwrap();
    let (mime, bytes, size) = sent(&output);
    assert_eq!((mime.as_str(), size), ("image/png", (40, 20)));
    assert_eq!(image::guess_format(&bytes).unwrap(), ImageFormat::Png);
    assert!(output.text.contains("shown as PNG 40×20 px"), "{}", output.text);
    assert!(
        output.text.ends_with("(a GIF's first frame) · the image is attached"),
        "{}",
        output.text
    );
}

#[tokio::test]
async fn a_large_image_is_scaled_to_the_longest_side() {
    let fx = Fixture::new();
    fx.put("wide.png", picture(4096, 1024, ImageFormat::Png, false));
    let output = view(&fx, "wide.png").await.unwrap();
    let (mime, bytes, size) = sent(&output);
    assert_eq!((mime.as_str(), size), ("image/png", (VIEW_IMAGE_MAX_SIDE, 512)));
    assert!(bytes.len() <= VIEW_IMAGE_MAX_BYTES);
    assert!(
        output.text.contains("· 4096×1024 px ·")
            && output.text.contains("shown as PNG 2048×512 px")
            && output.text.contains("(scaled to at most 2048 px a side)"),
        "{}",
        output.text
    );
}

#[tokio::test]
async fn a_noisy_image_is_reencoded_under_the_byte_limit() {
    let fx = Fixture::new();
    // 1500 × 1500 noise is about 9 MB as PNG: small enough in pixels, too large in bytes.
    let bytes = picture(1500, 1500, ImageFormat::Png, true);
    assert!(bytes.len() > VIEW_IMAGE_MAX_BYTES);
    fx.put("noise.png", &bytes);
    let output = view(&fx, "noise.png").await.unwrap();
    let (mime, sent_bytes, _) = sent(&output);
    assert_eq!(mime, "image/jpeg");
    assert!(sent_bytes.len() <= VIEW_IMAGE_MAX_BYTES, "{}", sent_bytes.len());
    assert!(output.text.contains("(made smaller to stay under 4.0 MB)"), "{}", output.text);
}

#[tokio::test]
async fn a_decompression_bomb_is_refused_before_decoding() {
    let fx = Fixture::new();
    fx.put("bomb.png", bomb(100_000, 100_000));
    assert_snapshot!(view(&fx, "bomb.png").await.unwrap_err(), @r#"{"ok":false,"error":"image_too_large","message":"bomb.png (PNG) not shown: it declares 100000×100000 px (10000 megapixels), over view_image's limit of 50 megapixels"}"#);
    // Control: the same header with a size the limit allows is read as far as its (missing) data.
    fx.put("small-header.png", bomb(10, 10));
    let out = view(&fx, "small-header.png").await.unwrap_err();
    assert!(out.contains(r#""error":"not_an_image""#), "{out}");
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused_and_inside_shown() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.png"), picture(8, 8, ImageFormat::Png, false)).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.png"), fx.root().join("link.png")).unwrap();
    let name = outside.path().file_name().unwrap().to_str().unwrap();
    for path in [format!("../{name}/x.png"), "link.png".to_owned()] {
        let out = view(&fx, &path).await.unwrap_err();
        assert!(out.contains(r#""error":"outside_workspace""#), "{path}: {out}");
    }
    // Control: the same image inside the workspace is shown.
    fx.put("x.png", picture(8, 8, ImageFormat::Png, false));
    sent(&view(&fx, "x.png").await.unwrap());
}

#[tokio::test]
async fn a_model_that_cannot_see_gets_an_observation() {
    let fx = Fixture::new();
    fx.put("shot.png", picture(8, 8, ImageFormat::Png, false));
    let config = BuiltinConfig {
        view_image: ViewImageConfig { model_sees_images: false },
        ..BuiltinConfig::default()
    };
    let tools = builtin_with_tracker(&config, agent_tools::FileTracker::new()).unwrap();
    assert_snapshot!(view_with(&fx, &tools, "shot.png").await.unwrap_err(), @r#"{"ok":false,"error":"no_image_input","message":"shot.png not shown: the model of this session does not take image input (its profile sets `vision = false`, or the model is known to be text-only); describe the image from its file name and metadata, or ask the user"}"#);
}

#[tokio::test]
async fn directories_and_missing_files_are_named() {
    let fx = Fixture::new();
    fx.put("img/a.png", picture(8, 8, ImageFormat::Png, false));
    assert_snapshot!(view(&fx, "img").await.unwrap_err(), @r#"{"ok":false,"error":"invalid_arguments","message":"img is a directory; use list_dir or glob to find the image"}"#);
    assert_snapshot!(view(&fx, "img/b.png").await.unwrap_err(), @r#"{"ok":false,"error":"not_found","message":"no such file or directory: img/b.png. Similar: img/a.png"}"#);
}

#[tokio::test]
async fn a_file_over_the_size_limit_or_not_regular_is_refused_unread() {
    let fx = Fixture::new();
    // A sparse file: a PNG signature and 65 MiB of nothing, over the 64 MiB limit.
    fx.put("huge.png", b"\x89PNG\r\n\x1a\n");
    let file = std::fs::OpenOptions::new().write(true).open(fx.root().join("huge.png")).unwrap();
    file.set_len(65 * 1024 * 1024).unwrap();
    assert_snapshot!(view(&fx, "huge.png").await.unwrap_err(), @r#"{"ok":false,"error":"image_too_large","message":"huge.png is 65.0 MB, over view_image's limit of 64.0 MB per file; not shown"}"#);
    // A FIFO would block a read for ever: it is refused before anything opens it. The test makes
    // it with the system's mkfifo, outside any sandbox, as the user would.
    let fifo = fx.root().join("pipe.png");
    #[allow(clippy::disallowed_methods)]
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    assert_snapshot!(view(&fx, "pipe.png").await.unwrap_err(), @r#"{"ok":false,"error":"invalid_arguments","message":"pipe.png is not a regular file; not shown"}"#);
}
