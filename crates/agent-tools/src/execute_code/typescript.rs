//! TypeScript to JavaScript with the oxc parser, transformer and code generator: types,
//! interfaces and generics are removed; enums, namespaces and parameter properties are lowered.

use std::path::Path;

use oxc_allocator::Allocator;
use oxc_codegen::Codegen;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use oxc_transformer::{TransformOptions, Transformer};

use super::{CodeError, CodeErrorKind};

/// Strips the types from `code`, a TypeScript script (not a module: its last expression is the
/// result, as in JavaScript).
pub(super) fn strip(code: &str) -> Result<String, CodeError> {
    if code.len() > MAX_SOURCE {
        return Err(CodeError::new(
            CodeErrorKind::Syntax,
            format!("the TypeScript source is larger than {} KiB", MAX_SOURCE >> 10),
        ));
    }
    // The parser recurses once per nesting level (about 1 KiB of stack each in a debug build), so
    // `((((…))))` or `!!!!…x` would overflow a normal thread's stack and abort the process. The
    // work runs on its own thread whose stack covers the deepest nesting `MAX_SOURCE` allows; the
    // pages are only committed as deep as a parse actually goes.
    let code = code.to_owned();
    let worker = std::thread::Builder::new()
        .name("typescript-strip".to_owned())
        .stack_size(STACK)
        .spawn(move || {
            // The transformer asserts on inputs it does not support; a panic must not escape.
            std::panic::catch_unwind(|| strip_inner(&code)).unwrap_or_else(|_| {
                Err(CodeError::new(
                    CodeErrorKind::Syntax,
                    "TypeScript: this input could not be transformed; write it as plain JavaScript",
                ))
            })
        });
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(result)) => result,
        Ok(Err(_)) | Err(_) => {
            Err(CodeError::new(CodeErrorKind::Internal, "the TypeScript transformer could not run"))
        }
    }
}

/// The largest TypeScript source accepted (the `execute_code` tool allows 100 KB).
const MAX_SOURCE: usize = 128 << 10;

/// Stack of the transformer thread: enough for `MAX_SOURCE` levels of nesting in a debug build.
const STACK: usize = 512 << 20;

fn strip_inner(code: &str) -> Result<String, CodeError> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_script(true);
    let parsed = Parser::new(&allocator, code, source_type).parse();
    if let Some(first) = parsed.diagnostics.errors().next() {
        return Err(CodeError::new(CodeErrorKind::Syntax, format!("SyntaxError: {first}")));
    }
    let mut program = parsed.program;
    let semantic = SemanticBuilder::new().with_enum_eval(true).build(&program);
    let scoping = semantic.semantic.into_scoping();
    let options = TransformOptions::default();
    let transformed = Transformer::new(&allocator, Path::new("code.ts"), &options)
        .build_with_scoping(scoping, &mut program);
    if let Some(first) = transformed.diagnostics.errors().next() {
        return Err(CodeError::new(CodeErrorKind::Syntax, format!("TypeScript: {first}")));
    }
    Ok(Codegen::new().build(&program).code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(ts: &str, expect: &str) {
        assert_eq!(strip(ts).unwrap().trim(), expect);
    }

    #[test]
    fn types_interfaces_and_generics_are_removed() {
        check("let x: number = 1;", "let x = 1;");
        check("interface P { x: number }\nconst p: P = { x: 1 };", "const p = { x: 1 };");
        check("function id<T>(v: T): T { return v }", "function id(v) {\n\treturn v;\n}");
        check("const n = (1 as unknown) as number;", "const n = 1;");
    }

    #[test]
    fn syntax_errors_are_reported() {
        assert_eq!(strip("let = ;").unwrap_err().kind, CodeErrorKind::Syntax);
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let depth = MAX_SOURCE / 2 - 1;
        assert!(strip(&format!("{}1{}", "(".repeat(depth), ")".repeat(depth))).is_ok());
        assert!(strip(&format!("{}x", "!".repeat(MAX_SOURCE - 1))).is_ok());
        assert!(strip(&"x".repeat(MAX_SOURCE + 1)).is_err());
    }
}
