//! view_image end to end through `agent exec` against a scripted server: the image a model asks
//! for is in the next request's body on both APIs; a 40 MB image and a decompression bomb keep
//! that body under the documented limit; paths outside the workspace, a link leading out, secret
//! files and non-images are refused with no image data sent, beside a workspace PNG that is sent.

use std::{io::Cursor, path::Path};

use agent_model::scripted::{ScriptedCall, Turn};
use agent_tools::{VIEW_IMAGE_MAX_BYTES, VIEW_IMAGE_MAX_SIDE};
use base64::Engine as _;
use image::{DynamicImage, ImageFormat, RgbaImage};
use serde_json::{Value, json};

use crate::suite::{exec::exec_recorded, stderr};

/// A PNG of `width` × `height`: a gradient, or noise (which no encoder can shrink much).
fn png(width: u32, height: u32, noise: bool) -> Vec<u8> {
    let mut state = 0x9e37_79b9_u32;
    let image = RgbaImage::from_fn(width, height, |x, y| {
        if noise {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            image::Rgba(state.to_le_bytes())
        } else {
            image::Rgba([(x % 256) as u8, (y % 256) as u8, 200, 255])
        }
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgba8(image).write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A config file whose profile `see` says the model takes image input (the scripted server's
/// `test-model` is unknown to the table, on a server that is not OpenAI's, so it is assumed not to).
fn seeing(dir: &Path) -> String {
    let path = dir.join("config.toml");
    std::fs::write(&path, "[profiles.see]\nvision = true\n").unwrap();
    path.display().to_string()
}

/// Runs one turn of `view_image` calls on `paths` with `api`; returns the process output and the
/// second request (the one carrying the outputs), parsed and raw.
async fn view(
    workspace: &Path,
    config: Option<&str>,
    api: &str,
    paths: &[&str],
) -> (std::process::Output, Value, String) {
    let calls = paths.iter().enumerate().map(|(index, path)| {
        ScriptedCall::new(format!("c{index}"), "view_image", json!({"path": path}))
    });
    let turns = vec![Turn::tool_calls(calls), Turn::text("I see it.")];
    let mut args = vec!["--api", api];
    if let Some(config) = config {
        args.extend(["--config", config, "--profile", "see"]);
    }
    args.extend(["exec", "look at the picture"]);
    let (output, requests) = exec_recorded(workspace, turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let body = requests[1].body.clone();
    (output, requests[1].json(), body)
}

/// The outputs of the request, by call id: the text, and the data URLs of the images sent for it.
fn outputs(api: &str, body: &Value) -> Vec<(String, String, Vec<String>)> {
    if api == "responses" {
        let input = body["input"].as_array().unwrap();
        let outputs = input.iter().filter(|item| item["type"] == "function_call_output");
        return outputs
            .map(|item| {
                let id = item["call_id"].as_str().unwrap().to_owned();
                match &item["output"] {
                    Value::String(text) => (id, text.clone(), Vec::new()),
                    Value::Array(parts) => {
                        let text = parts[0]["text"].as_str().unwrap().to_owned();
                        let urls = parts[1..]
                            .iter()
                            .map(|part| {
                                assert_eq!(part["type"], "input_image", "{part}");
                                part["image_url"].as_str().unwrap().to_owned()
                            })
                            .collect();
                        (id, text, urls)
                    }
                    other => panic!("unexpected output {other}"),
                }
            })
            .collect();
    }
    let messages = body["messages"].as_array().unwrap();
    let first = messages.iter().position(|message| message["role"] == "tool").unwrap();
    let tools: Vec<&Value> = messages[first..].iter().take_while(|m| m["role"] == "tool").collect();
    // The images follow the run of tool messages as one user message, each call's introduced.
    let mut urls: Vec<(String, String)> = Vec::new();
    if let Some(user) = messages.get(first + tools.len()) {
        assert_eq!(user["role"], "user", "{user}");
        let mut current = String::new();
        for part in user["content"].as_array().unwrap() {
            match part["type"].as_str().unwrap() {
                "text" => {
                    let text = part["text"].as_str().unwrap();
                    current = text.trim_end_matches(':').rsplit(' ').next().unwrap().to_owned();
                }
                "image_url" => {
                    urls.push((current.clone(), part["image_url"]["url"].as_str().unwrap().into()))
                }
                other => panic!("unexpected part {other}"),
            }
        }
    }
    tools
        .iter()
        .map(|tool| {
            let id = tool["tool_call_id"].as_str().unwrap().to_owned();
            let mine = urls.iter().filter(|(call, _)| *call == id).map(|(_, url)| url.clone());
            (id.clone(), tool["content"].as_str().unwrap().to_owned(), mine.collect())
        })
        .collect()
}

/// The image bytes of a `data:` URL of `mime`.
fn decode(url: &str, mime: &str) -> Vec<u8> {
    let data =
        url.strip_prefix(&format!("data:{mime};base64,")).unwrap_or_else(|| panic!("{url:.60}"));
    base64::engine::general_purpose::STANDARD.decode(data).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewed_png_is_in_the_next_request_on_both_apis() {
    for api in ["responses", "chat"] {
        let dir = tempfile::tempdir().unwrap();
        let bytes = png(120, 80, false);
        std::fs::write(dir.path().join("shot.png"), &bytes).unwrap();
        let config = seeing(dir.path());
        let (_, body, _) = view(dir.path(), Some(&config), api, &["shot.png"]).await;
        let outputs = outputs(api, &body);
        assert_eq!(outputs.len(), 1, "{api}: {body}");
        let (id, text, urls) = &outputs[0];
        assert_eq!(id, "c0");
        let expect =
            format!("shot.png · PNG · 120×80 px · {} B · the image is attached", bytes.len());
        assert_eq!(*text, expect, "{api}");
        assert_eq!(urls.len(), 1, "{api}: {body}");
        assert_eq!(decode(&urls[0], "image/png"), bytes, "{api}: the file's own bytes");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_cannot_see_gets_an_observation_and_no_image() {
    for api in ["responses", "chat"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), png(16, 16, false)).unwrap();
        // No profile: `test-model` on a loopback server is assumed not to see.
        let (_, body, raw) = view(dir.path(), None, api, &["shot.png"]).await;
        let (_, text, urls) = &outputs(api, &body)[0];
        assert!(text.contains(r#""error":"no_image_input""#), "{api}: {text}");
        assert!(urls.is_empty() && !raw.contains("data:image"), "{api}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_40_mb_image_and_a_bomb_keep_the_request_under_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    // 3200 × 3200 pixels of noise: about 41 MB as PNG.
    let big = png(3200, 3200, true);
    assert!(big.len() > 40_000_000, "{}", big.len());
    std::fs::write(dir.path().join("big.png"), &big).unwrap();
    // A valid header declaring 100 000 × 100 000 pixels (40 GB decoded) in a few bytes.
    let mut bomb = png(1, 1, false);
    bomb[16..24].copy_from_slice(&[0, 1, 0x86, 0xA0, 0, 1, 0x86, 0xA0]);
    let crc = crc32(&bomb[12..29]);
    bomb[29..33].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(dir.path().join("bomb.png"), &bomb).unwrap();
    let config = seeing(dir.path());
    for api in ["responses", "chat"] {
        let (_, body, raw) = view(dir.path(), Some(&config), api, &["big.png", "bomb.png"]).await;
        // The documented limit: one image adds at most its 4 MB cap in base64 (a third more);
        // the rest of the body is instructions and tool schemas, far below 256 KB.
        let limit = VIEW_IMAGE_MAX_BYTES / 3 * 4 + 256 * 1024;
        assert!(raw.len() < limit, "{api}: a body of {} bytes, over {limit}", raw.len());
        let outputs = outputs(api, &body);
        let (_, text, urls) = &outputs[0];
        assert!(text.starts_with("big.png · PNG · 3200×3200 px · "), "{api}: {text}");
        assert!(text.contains("(made smaller to stay under 4.0 MB)"), "{api}: {text}");
        let sent = image::load_from_memory(&decode(&urls[0], "image/jpeg")).unwrap();
        assert!(sent.width().max(sent.height()) <= VIEW_IMAGE_MAX_SIDE, "{api}");
        let (_, text, urls) = &outputs[1];
        assert!(text.contains(r#""error":"image_too_large""#), "{api}: {text}");
        assert!(text.contains("100000×100000 px"), "{api}: {text}");
        assert!(urls.is_empty(), "{api}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_secrets_and_non_images_are_refused_beside_a_png_that_is_sent() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let outside = png(24, 24, false);
    std::fs::write(root.path().join("outside.png"), &outside).unwrap();
    std::os::unix::fs::symlink(root.path().join("outside.png"), workspace.join("link.png"))
        .unwrap();
    std::fs::write(workspace.join(".env.png"), png(24, 24, false)).unwrap();
    // A link inside the workspace to a secret: the policy judges the file it resolves to.
    std::os::unix::fs::symlink(workspace.join(".env.png"), workspace.join("plot.png")).unwrap();
    std::fs::write(workspace.join("id_rsa.png"), "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
        .unwrap();
    std::fs::write(workspace.join("notes.png"), "TODO: draw the chart\n").unwrap();
    let control = png(24, 24, false);
    std::fs::write(workspace.join("chart.png"), &control).unwrap();
    let config = seeing(root.path());
    let paths = [
        "../outside.png",
        "link.png",
        ".env.png",
        "plot.png",
        "id_rsa.png",
        "notes.png",
        "chart.png",
    ];
    for api in ["responses", "chat"] {
        let (_, body, raw) = view(&workspace, Some(&config), api, &paths).await;
        let outputs = outputs(api, &body);
        assert_eq!(outputs.len(), paths.len(), "{api}: {body}");
        for ((_, text, urls), path) in outputs.iter().zip(paths).take(6) {
            assert!(text.starts_with(r#"{"ok":false"#), "{api} {path}: {text}");
            assert!(urls.is_empty(), "{api} {path}: an image was sent");
        }
        assert!(!raw.contains("BEGIN OPENSSH") && !raw.contains("TODO: draw"), "{api}");
        // Only the control's image is in the body: one data URL, holding its bytes.
        assert_eq!(raw.matches("data:image").count(), 1, "{api}");
        let (_, text, urls) = &outputs[6];
        assert!(text.starts_with("chart.png · PNG · 24×24 px"), "{api}: {text}");
        assert_eq!(decode(&urls[0], "image/png"), control, "{api}");
    }
}

/// Each refusal is for its own reason: the boundary or the secret list stops an escape and a
/// secret before the content is looked at; the content stops a non-image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refusal_names_its_reason() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(root.path().join("outside.png"), png(8, 8, false)).unwrap();
    std::os::unix::fs::symlink(root.path().join("outside.png"), workspace.join("link.png"))
        .unwrap();
    std::fs::write(workspace.join(".env.png"), png(8, 8, false)).unwrap();
    std::os::unix::fs::symlink(workspace.join(".env.png"), workspace.join("plot.png")).unwrap();
    std::fs::write(workspace.join("notes.png"), "text\n").unwrap();
    let config = seeing(root.path());
    let paths = ["../outside.png", "link.png", ".env.png", "plot.png", "notes.png"];
    let (output, body, _) = view(&workspace, Some(&config), "responses", &paths).await;
    let texts: Vec<String> = outputs("responses", &body).into_iter().map(|(_, t, _)| t).collect();
    let codes: Vec<String> = texts
        .iter()
        .map(|text| serde_json::from_str::<Value>(text).unwrap()["error"].as_str().unwrap().into())
        .collect();
    let expect = [
        "outside_workspace",
        "outside_workspace",
        "permission_denied",
        "permission_denied",
        "not_an_image",
    ];
    assert_eq!(codes, expect, "{texts:?}\n{}", stderr(&output));
    assert!(
        texts[2].contains("may hold secrets") && texts[3].contains("may hold secrets"),
        "{texts:?}"
    );
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

/// The control of the secret case: an allow rule naming the file shows it, so the refusal above is
/// the secret list at work and not a broken image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_allow_rule_shows_a_secret_image() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = png(8, 8, false);
    std::fs::write(dir.path().join(".env.png"), &bytes).unwrap();
    let config = seeing(dir.path());
    let calls = [ScriptedCall::new("c0", "view_image", json!({"path": ".env.png"}))];
    let turns = vec![Turn::tool_calls(calls), Turn::text("I see it.")];
    let args = ["--api", "responses", "--config", &config, "--profile", "see"];
    let args = [&args[..], &["--allow", "Read(./.env.png)", "exec", "go"]].concat();
    let (output, requests) = exec_recorded(dir.path(), turns, &args).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let outputs = outputs("responses", &requests[1].json());
    let (_, text, urls) = &outputs[0];
    assert!(text.starts_with(".env.png · PNG · 8×8 px"), "{text}");
    assert_eq!(decode(&urls[0], "image/png"), bytes);
}
