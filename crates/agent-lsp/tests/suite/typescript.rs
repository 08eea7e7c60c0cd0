//! typescript-language-server with typescript: the same three edits as for pyright.

use super::support::{Fixture, peer_bin, server};

const BEFORE: &str =
    "export function f(x: number): number {\n  return x;\n}\n\nconst y: number = undefinedName;\n";
const BROKEN: &str = "export function f(x: number): number {\n  return x;\n}\n\nconst z: number = \"text\";\n\nconst y: number = undefinedName;\n";
const FIXED: &str = "export function f(x: number): number {\n  return x;\n}\n\nconst z: number = 3;\n\nconst y: number = undefinedName;\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_reports_only_the_new_error_then_the_fix_then_nothing() {
    let Some(program) = peer_bin("typescript-language-server") else { return };
    let config = agent_lsp::ServerConfig {
        settle: agent_lsp::TYPESCRIPT_SETTLE,
        ..server("typescript", vec![program, "--stdio".into()], &["ts"])
    };
    let fx = Fixture::new(config, Fixture::patient());
    fx.file("tsconfig.json", r#"{"compilerOptions": {"strict": true, "noEmit": true}}"#);
    let path = fx.file("a.ts", BEFORE);
    let text = fx.edit(&path, BROKEN).await;
    insta::assert_snapshot!("typescript_introduced", text);
    assert_eq!(
        fx.edit(&path, FIXED).await,
        "This edit fixed 1 error in a.ts (typescript-language-server); 1 left."
    );
    assert_eq!(fx.edit(&path, FIXED).await, "");
}
