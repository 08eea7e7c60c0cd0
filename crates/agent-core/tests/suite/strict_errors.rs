//! Every way a schema can fail strict conversion: the error names the JSON path and the fix.

use std::collections::{BTreeMap, HashMap};

use agent_core::schema::{
    StrictError, StrictLimits, make_strict, make_strict_with, strict_schema_for,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Asserts the error's path, and that its reason and fix mention the given fragments.
fn check(result: Result<Value, StrictError>, path: &str, reason: &str, fix: &str) {
    let err = match result {
        Ok(schema) => panic!("expected an error at {path}, got {schema:#}"),
        Err(err) => err,
    };
    assert_eq!(err.path, path, "{err}");
    assert!(err.reason.contains(reason), "reason: {err}");
    assert!(err.fix.contains(fix), "fix: {err}");
    assert!(err.to_string().starts_with("schema has no strict form at `"), "{err}");
}

#[derive(Deserialize, JsonSchema)]
struct WithMap {
    name: String,
    tags: HashMap<String, String>,
}

#[derive(Deserialize, JsonSchema)]
struct WithBTreeMap {
    inner: Inner,
}

#[derive(Deserialize, JsonSchema)]
struct Inner {
    counts: BTreeMap<String, u32>,
}

#[derive(Deserialize, JsonSchema)]
struct WithTuple {
    pair: (String, i32),
}

#[derive(Deserialize, JsonSchema)]
struct WithValue {
    extra: serde_json::Value,
}

#[derive(Deserialize, JsonSchema)]
struct WithValueList {
    extras: Vec<serde_json::Value>,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs;

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op")]
enum Command {
    Start { name: String },
    Stop,
}

#[derive(Deserialize, JsonSchema)]
enum Plain {
    A,
    B,
}

#[derive(Deserialize, JsonSchema)]
struct FlattenedEnum {
    id: String,
    #[serde(flatten)]
    command: Command,
}

#[test]
fn rust_types_without_a_strict_form() {
    check(strict_schema_for::<WithMap>(), "$.properties.tags", "a map", "Vec<KeyValue>");
    check(
        strict_schema_for::<WithBTreeMap>(),
        "$.$defs.Inner.properties.counts",
        "a map",
        "instead of a HashMap",
    );
    check(
        strict_schema_for::<WithTuple>(),
        "$.properties.pair",
        "a tuple (`prefixItems`)",
        "named fields",
    );
    check(
        strict_schema_for::<WithValue>(),
        "$.properties.extra",
        "serde_json::Value",
        "concrete type",
    );
    check(
        strict_schema_for::<WithValueList>(),
        "$.properties.extras.items",
        "any JSON value",
        "strict: false",
    );
    check(
        strict_schema_for::<NoArgs>(),
        "$",
        "unit struct",
        "write `struct NoArgs {}` instead of `struct NoArgs;`",
    );
    check(
        strict_schema_for::<Command>(),
        "$",
        "the root is an enum",
        "wrap the enum in a struct field",
    );
    check(
        strict_schema_for::<Plain>(),
        "$",
        "the root is an enum (`enum`)",
        "wrap the enum in a struct field",
    );
    check(strict_schema_for::<FlattenedEnum>(), "$", "flatten", "make the enum a named field");
}

#[test]
fn schemas_without_a_strict_form() {
    let object = |properties: Value| json!({"type": "object", "properties": properties});
    check(make_strict(json!(true)), "$", "any JSON value", "concrete type");
    check(make_strict(json!({"type": "string"})), "$", "the root must be an object", "struct");
    check(
        make_strict(object(json!({"p": {"type": "array", "prefixItems": [{"type": "string"}]}}))),
        "$.properties.p",
        "prefixItems",
        "named fields",
    );
    check(
        make_strict(object(json!({"p": {"allOf": [{"type": "string"}, {"minLength": 1}]}}))),
        "$.properties.p",
        "`allOf` with 2 entries",
        "one struct",
    );
    check(
        make_strict(json!({
            "type": "object",
            "properties": {"home": {"$ref": "#/$defs/A", "minProperties": 1}},
            "$defs": {"A": {"type": "object", "properties": {}}}
        })),
        "$.properties.home",
        "minProperties",
        "Vec<KeyValue>",
    );
    check(
        make_strict(json!({
            "type": "object",
            "properties": {"home": {"$ref": "#/$defs/A", "type": "object"}},
            "$defs": {"A": {"type": "object", "properties": {}}}
        })),
        "$.properties.home",
        "`$ref` has constraining siblings `type`",
        "referenced type",
    );
    check(
        make_strict(object(json!({"p": {"$ref": "#/$defs/Missing"}}))),
        "$.properties.p",
        "does not point",
        "local",
    );
    check(
        make_strict(object(json!({"p": {"not": {"type": "string"}}}))),
        "$.properties.p",
        "`not`",
        "remove",
    );
    check(
        make_strict(object(json!({"p": {"type": "object", "patternProperties": {"^x": {}}}}))),
        "$.properties.p",
        "`patternProperties`",
        "Vec<KeyValue>",
    );
    check(
        make_strict(object(json!({"p": {"description": "anything"}}))),
        "$.properties.p",
        "any JSON value",
        "concrete",
    );
}

#[test]
fn a_single_allof_is_merged() {
    let schema = json!({"type": "object", "properties": {"p": {"allOf": [{"type": "string", "format": "uri"}], "description": "d"}}, "required": ["p"]});
    let strict = make_strict(schema).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(strict["properties"]["p"], json!({"description": "d", "type": "string"}));
}

#[derive(Deserialize, JsonSchema)]
struct L1 {
    next: L2,
}
#[derive(Deserialize, JsonSchema)]
struct L2 {
    next: L3,
}
#[derive(Deserialize, JsonSchema)]
struct L3 {
    next: L4,
}
#[derive(Deserialize, JsonSchema)]
struct L4 {
    next: L5,
}
#[derive(Deserialize, JsonSchema)]
struct L5 {
    next: L6,
}
#[derive(Deserialize, JsonSchema)]
struct L6 {
    next: L7,
}
#[derive(Deserialize, JsonSchema)]
struct L7 {
    next: L8,
}
#[derive(Deserialize, JsonSchema)]
struct L8 {
    next: L9,
}
#[derive(Deserialize, JsonSchema)]
struct L9 {
    next: L10,
}
#[derive(Deserialize, JsonSchema)]
struct L10 {
    next: L11,
}
#[derive(Deserialize, JsonSchema)]
struct L11 {
    next: L12,
}
#[derive(Deserialize, JsonSchema)]
struct L12 {
    value: String,
}

#[test]
fn depth_limit_counts_object_levels_through_references() {
    let deep = ".properties.next".repeat(10);
    check(strict_schema_for::<L1>(), &format!("${deep}"), "nested 11 levels deep", "flatten");
    // Ten levels pass.
    assert!(strict_schema_for::<L3>().is_ok());
    let limits = StrictLimits { max_depth: 12, ..StrictLimits::default() };
    assert!(make_strict_with(agent_core::schema::plain_schema_for::<L1>(), &limits).is_ok());
}

fn with_enum(values: Vec<String>) -> Value {
    json!({"type": "object", "properties": {"choice": {"type": "string", "enum": values}}, "required": ["choice"]})
}

fn with_properties(count: usize, name_length: usize) -> Value {
    let mut properties = Map::new();
    for i in 0..count {
        properties.insert(format!("{i:0>name_length$}"), json!({"type": "boolean"}));
    }
    json!({"type": "object", "properties": properties})
}

#[test]
fn size_limits() {
    let values = |n: usize, len: usize| (0..n).map(|i| format!("{i:0>len$}")).collect::<Vec<_>>();
    check(
        make_strict(with_enum(values(1001, 4))),
        "$.properties.choice.enum",
        "more than 1000 enum values",
        "fewer",
    );
    assert!(make_strict(with_enum(values(1000, 4))).is_ok());
    check(
        make_strict(with_enum(values(260, 60))),
        "$.properties.choice.enum",
        "15600 characters",
        "shorten",
    );
    assert!(make_strict(with_enum(values(250, 60))).is_ok(), "250 values are not a large enum");
    check(
        make_strict(with_properties(5001, 5)),
        "$.properties",
        "more than 5000 object properties",
        "split",
    );
    assert!(make_strict(with_properties(5000, 5)).is_ok());
    check(
        make_strict(with_properties(3000, 41)),
        "$.properties",
        "more than 120000 characters",
        "shorter",
    );
    let limits = StrictLimits { max_enum_values: 3, ..StrictLimits::default() };
    check(
        make_strict_with(with_enum(values(4, 1)), &limits),
        "$.properties.choice.enum",
        "more than 3 enum",
        "fewer",
    );
}

/// Definitions D0..Dn, each an object whose `fanout` properties are documented references to the
/// next definition (so each must be inlined).
fn chain(n: usize, fanout: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..n {
        let mut properties = Map::new();
        for j in 0..fanout {
            properties.insert(
                format!("p{j}"),
                json!({"$ref": format!("#/$defs/D{}", i + 1), "description": "next"}),
            );
        }
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": properties, "required": ["p0"]}),
        );
    }
    defs.insert(format!("D{n}"), json!({"type": "string"}));
    json!({"type": "object", "properties": {"start": {"$ref": "#/$defs/D0"}}, "required": ["start"], "$defs": defs})
}

#[test]
fn inlining_is_bounded() {
    let deep = make_strict(chain(80, 1)).err().map(|e| e.reason);
    assert!(deep.is_some_and(|r| r.contains("nest more than 64 levels")));
    let wide = make_strict(chain(24, 2)).err().map(|e| e.reason);
    assert!(
        wide.as_deref().is_some_and(|r| r.contains("expands to more than 100000 nodes")),
        "{wide:?}"
    );
}

#[test]
fn error_text_for_rust_authors() {
    let errors = [
        strict_schema_for::<WithMap>(),
        strict_schema_for::<WithTuple>(),
        strict_schema_for::<WithValue>(),
        strict_schema_for::<NoArgs>(),
        strict_schema_for::<Command>(),
        strict_schema_for::<FlattenedEnum>(),
        strict_schema_for::<L1>(),
    ];
    let text: Vec<String> =
        errors.into_iter().map(|r| r.err().map(|e| e.to_string()).unwrap_or_default()).collect();
    insta::assert_snapshot!("strict_errors", text.join("\n"));
}
