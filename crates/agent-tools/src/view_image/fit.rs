//! Making an image fit what is sent: its kind known by its first bytes, its header checked before
//! anything is decoded (a small file may declare billions of pixels), then decoded whole (a broken
//! image would make the server refuse the whole request), scaled down and re-encoded when it is
//! larger than the model can use. The limits are documented in `docs/limits.md`.

use std::io::Cursor;

use agent_core::{ToolError, ToolErrorKind};
use image::{
    DynamicImage, ImageDecoder as _, ImageFormat, ImageReader, Limits,
    codecs::{
        jpeg::JpegEncoder,
        png::{CompressionType, FilterType, PngEncoder},
    },
};

use crate::text::human_size;

/// The largest file view_image reads at all, in bytes.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// The longest side sent, in pixels. OpenAI scales a high-detail image to fit a 2048 × 2048
/// square before the model sees it, so larger images only cost bytes.
pub const MAX_SIDE: u32 = 2048;
/// The largest encoded image sent, in bytes (before base64, which adds a third). OpenAI takes up
/// to 20 MB an image and 50 MB a request; every later request of the session carries the image
/// again, so one view stays far below that.
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;
/// The most pixels an image may declare: a photo of 50 megapixels is decoded, a header that
/// claims more is refused before any pixel memory is taken.
pub const MAX_PIXELS: u64 = 50_000_000;
/// The most memory the decoder may take, in bytes (a 50 MP RGBA image at 8 bits a channel).
const MAX_DECODE_BYTES: u64 = 256 * 1024 * 1024;
/// JPEG quality of re-encoded images: text in a screenshot stays legible.
const JPEG_QUALITY: u8 = 85;

/// The image formats OpenAI's models take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Png,
    Jpeg,
    Gif,
    WebP,
}

impl Kind {
    /// The format whose signature `head` starts with; the file's name plays no part.
    pub(crate) fn sniff(head: &[u8]) -> Option<Kind> {
        if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Kind::Png)
        } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Kind::Jpeg)
        } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
            Some(Kind::Gif)
        } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
            Some(Kind::WebP)
        } else {
            None
        }
    }

    pub(crate) fn mime(self) -> &'static str {
        match self {
            Kind::Png => "image/png",
            Kind::Jpeg => "image/jpeg",
            Kind::Gif => "image/gif",
            Kind::WebP => "image/webp",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Png => "PNG",
            Kind::Jpeg => "JPEG",
            Kind::Gif => "GIF",
            Kind::WebP => "WebP",
        }
    }

    fn format(self) -> ImageFormat {
        match self {
            Kind::Png => ImageFormat::Png,
            Kind::Jpeg => ImageFormat::Jpeg,
            Kind::Gif => ImageFormat::Gif,
            Kind::WebP => ImageFormat::WebP,
        }
    }
}

/// Why the image sent differs from the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Unchanged: the file's own bytes are sent.
    None,
    /// Scaled down to [`MAX_SIDE`].
    Downscaled,
    /// Re-encoded (and maybe scaled further) to stay under [`MAX_IMAGE_BYTES`].
    Shrunk,
    /// A GIF's first frame as PNG: OpenAI takes only still GIFs, and a still one loses nothing.
    FirstFrame,
}

/// The image to send.
#[derive(Debug)]
pub(crate) struct Fitted {
    pub(crate) kind: Kind,
    pub(crate) bytes: Vec<u8>,
    /// The file's own size in pixels, and the size sent.
    pub(crate) original: (u32, u32),
    pub(crate) sent: (u32, u32),
    pub(crate) change: Change,
}

impl Fitted {
    pub(crate) fn changed(&self) -> bool {
        self.change != Change::None
    }

    pub(crate) fn reason(&self) -> String {
        match self.change {
            Change::None => String::new(),
            Change::Downscaled => format!("scaled to at most {MAX_SIDE} px a side"),
            Change::Shrunk => format!("made smaller to stay under {}", max_image()),
            Change::FirstFrame => "a GIF's first frame".to_owned(),
        }
    }
}

fn max_image() -> String {
    human_size(MAX_IMAGE_BYTES as u64)
}

/// `bytes`, a file of `kind`, as the image to send; an error says which limit it breaks.
pub(crate) fn fit(kind: Kind, bytes: &[u8]) -> Result<Fitted, ToolError> {
    let (width, height) = reader(kind, bytes).into_dimensions().map_err(broken)?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS {
        return Err(ToolError::new(
            ToolErrorKind::other("image_too_large"),
            format!(
                "it declares {width}×{height} px ({} megapixels), over view_image's limit of {} \
                 megapixels",
                pixels / 1_000_000,
                MAX_PIXELS / 1_000_000
            ),
        ));
    }
    let mut decoder = reader(kind, bytes).into_decoder().map_err(broken)?;
    let orientation = decoder.orientation().map_err(broken)?;
    let mut image = DynamicImage::from_decoder(decoder).map_err(broken)?;
    let original = (width, height);
    let small = width.max(height) <= MAX_SIDE && bytes.len() <= MAX_IMAGE_BYTES;
    if small && kind != Kind::Gif {
        // The file's own bytes: no quality lost, its metadata (orientation) read by the server.
        let change = Change::None;
        return Ok(Fitted { kind, bytes: bytes.to_vec(), original, sent: original, change });
    }
    // The pixels as they are meant to be seen: a re-encoded image carries no orientation tag.
    image.apply_orientation(orientation);
    let mut change = if kind == Kind::Gif { Change::FirstFrame } else { Change::Shrunk };
    if image.width().max(image.height()) > MAX_SIDE {
        image = image.thumbnail(MAX_SIDE, MAX_SIDE);
        change = Change::Downscaled;
    }
    // Lossless where the file was; JPEG (and smaller) when that does not fit the byte limit.
    let mut target = if kind == Kind::Jpeg { Kind::Jpeg } else { Kind::Png };
    for _ in 0..8 {
        let encoded = encode(&image, target)?;
        if encoded.len() <= MAX_IMAGE_BYTES {
            let sent = (image.width(), image.height());
            return Ok(Fitted { kind: target, bytes: encoded, original, sent, change });
        }
        change = Change::Shrunk;
        if target == Kind::Png {
            target = Kind::Jpeg;
        } else {
            let (w, h) = (image.width() * 3 / 4, image.height() * 3 / 4);
            image = image.thumbnail(w.max(1), h.max(1));
        }
    }
    Err(ToolError::new(
        ToolErrorKind::other("image_too_large"),
        format!("it could not be made smaller than view_image's limit of {}", max_image()),
    ))
}

fn reader(kind: Kind, bytes: &[u8]) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), kind.format());
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    reader
}

fn encode(image: &DynamicImage, kind: Kind) -> Result<Vec<u8>, ToolError> {
    let mut out = Vec::new();
    let written = match kind {
        Kind::Jpeg => {
            // JPEG has no alpha channel; transparent pixels keep their colour.
            let rgb = DynamicImage::ImageRgb8(image.to_rgb8());
            rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))
        }
        _ => image.write_with_encoder(PngEncoder::new_with_quality(
            &mut out,
            CompressionType::Default,
            FilterType::Adaptive,
        )),
    };
    written.map_err(|err| {
        ToolError::new(ToolErrorKind::ToolError, format!("could not re-encode it: {err}"))
    })?;
    Ok(out)
}

/// A decoder's refusal: a limit named, or the image broken.
fn broken(err: image::ImageError) -> ToolError {
    match err {
        image::ImageError::Limits(_) => ToolError::new(
            ToolErrorKind::other("image_too_large"),
            format!(
                "decoding it would take more than view_image's limit of {} of memory",
                human_size(MAX_DECODE_BYTES)
            ),
        ),
        other => ToolError::new(
            ToolErrorKind::other("not_an_image"),
            format!("it is not a valid image: {other}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(head: &[u8], expect: Option<Kind>) {
        assert_eq!(Kind::sniff(head), expect, "{head:?}");
    }

    #[test]
    fn kinds_are_known_by_their_signatures() {
        check(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Some(Kind::Png));
        check(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10], Some(Kind::Jpeg));
        check(b"GIF89a\x01\0\x01\0", Some(Kind::Gif));
        check(b"GIF87a", Some(Kind::Gif));
        check(b"RIFF\x24\0\0\0WEBPVP8 ", Some(Kind::WebP));
        check(b"RIFF\x24\0\0\0WAVEfmt ", None);
        check(b"\x89PNG", None);
        check(b"<svg xmlns=", None);
        check(b"-----BEGIN OPENSSH PRIVATE KEY-----", None);
        check(b"", None);
    }
}
