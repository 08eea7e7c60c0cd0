//! Pins the strict schema of representative Rust input types (structs, enums in every tagging,
//! options, nested and recursive types), and checks each against the strict rules with an
//! independent checker.

use std::collections::HashSet;

use agent_core::schema::{plain_schema_for, strict_schema_for};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rules::assert_strict;

fn strict<T: JsonSchema + 'static>() -> Value {
    let schema = strict_schema_for::<T>().unwrap_or_else(|e| panic!("{e}"));
    assert_strict(&schema);
    schema
}

/// Weather forecast for a city.
#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// City name, as the user wrote it.
    city: String,
    /// Days ahead.
    #[schemars(range(min = 1, max = 14))]
    days: u8,
    units: Option<Units>,
    #[serde(default)]
    include_hourly: bool,
    #[serde(default = "ten")]
    limit: u32,
    #[serde(default)]
    tags: Vec<String>,
    nickname: Option<String>,
    location: Option<Coords>,
}

fn ten() -> u32 {
    10
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Metric,
    Imperial,
}

#[derive(Deserialize, JsonSchema)]
struct Coords {
    lat: f64,
    lon: f64,
}

#[test]
fn forecast_with_optional_and_defaulted_fields() {
    insta::assert_json_snapshot!("forecast", strict::<Forecast>());
}

/// How urgent a task is.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
enum Priority {
    /// Whenever.
    #[default]
    Low,
    /// Now.
    High,
}

#[derive(Deserialize, JsonSchema)]
struct UnitEnums {
    units: Units,
    /// Documented variants become an `anyOf` of `const`s.
    priority: Priority,
    #[serde(default)]
    fallback: Priority,
    maybe: Option<Priority>,
}

#[test]
fn unit_enums_plain_documented_defaulted_and_optional() {
    insta::assert_json_snapshot!("unit_enums", strict::<UnitEnums>());
}

#[derive(Deserialize, JsonSchema)]
enum External {
    Empty,
    Circle { radius: f64 },
    Label(String),
}

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "type")]
enum Internal {
    Circle { radius: f64 },
    Square { side: f64 },
    Point,
}

#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "data")]
enum Adjacent {
    Text(String),
    Pair { a: i32, b: i32 },
    Nothing,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Untagged {
    Number(i64),
    Text(String),
    Object { flag: bool },
}

#[derive(Deserialize, JsonSchema)]
struct DataEnums {
    external: External,
    internal: Internal,
    adjacent: Adjacent,
    untagged: Untagged,
    optional_internal: Option<Internal>,
}

#[test]
fn data_enums_in_every_tagging_as_fields() {
    insta::assert_json_snapshot!("data_enums", strict::<DataEnums>());
}

#[derive(Deserialize, Serialize, JsonSchema, Default)]
struct Address {
    street: String,
    zip: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct People {
    home: Address,
    /// Where the invoices go.
    billing: Address,
    shipping: Option<Address>,
    #[serde(default)]
    previous: Address,
    others: Vec<Address>,
}

#[test]
fn nested_struct_used_twice_documented_optional_and_defaulted() {
    insta::assert_json_snapshot!("people", strict::<People>());
}

/// A tree of values.
#[derive(Deserialize, JsonSchema)]
struct TreeNode {
    value: i32,
    children: Vec<TreeNode>,
    /// The node this one was copied from.
    origin: Option<Box<TreeNode>>,
}

#[test]
fn self_recursive_type_keeps_root_reference() {
    insta::assert_json_snapshot!("tree_node", strict::<TreeNode>());
}

#[derive(Deserialize, JsonSchema)]
struct Document {
    title: String,
    sections: Vec<Section>,
}

#[derive(Deserialize, JsonSchema)]
struct Section {
    heading: String,
    subsections: Vec<Section>,
    /// The section this one continues.
    continues: Option<Box<Section>>,
}

#[test]
fn recursion_through_defs_keeps_defs() {
    insta::assert_json_snapshot!("document", strict::<Document>());
}

#[derive(Deserialize, JsonSchema)]
struct Collections {
    ids: Vec<u32>,
    rgb: [u8; 3],
    labels: HashSet<String>,
    matrix: Vec<Vec<f32>>,
    maybe_list: Option<Vec<String>>,
}

#[test]
fn arrays_fixed_arrays_and_sets() {
    insta::assert_json_snapshot!("collections", strict::<Collections>());
}

#[derive(Deserialize, JsonSchema)]
struct Numbers {
    a: u8,
    b: u16,
    c: u32,
    d: u64,
    e: usize,
    f: i8,
    g: i32,
    h: i64,
    i: f32,
    j: f64,
    k: char,
    l: bool,
    m: Option<u8>,
}

#[test]
fn integer_and_float_formats_are_stripped_bounds_kept() {
    insta::assert_json_snapshot!("numbers", strict::<Numbers>());
}

#[derive(Deserialize, JsonSchema)]
struct Constraints {
    #[schemars(length(min = 2, max = 20))]
    name: String,
    #[schemars(range(min = -5, max = 5))]
    offset: i32,
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    slug: String,
    #[schemars(email)]
    email: String,
    #[schemars(url)]
    homepage: String,
    #[schemars(length(min = 1, max = 3))]
    tags: Vec<String>,
    #[deprecated]
    old: Option<String>,
}

#[test]
fn schemars_constraints_keep_what_strict_mode_supports() {
    insta::assert_json_snapshot!("constraints", strict::<Constraints>());
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Renamed {
    file_path: String,
    #[serde(rename = "max-lines")]
    max_lines: Option<u32>,
    show_hidden: bool,
}

#[test]
fn serde_renames_become_property_names() {
    insta::assert_json_snapshot!("renamed", strict::<Renamed>());
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Closed {
    a: String,
    b: Option<Coords>,
}

#[derive(Deserialize, JsonSchema)]
struct Open {
    a: String,
    b: Option<Coords>,
}

#[test]
fn deny_unknown_fields_changes_nothing_in_strict_form() {
    let mut closed = strict::<Closed>();
    let mut open = strict::<Open>();
    closed["title"] = Value::Null;
    open["title"] = Value::Null;
    assert_eq!(closed, open);
    insta::assert_json_snapshot!("closed", strict::<Closed>());
}

#[derive(Deserialize, JsonSchema)]
struct Flattened {
    query: String,
    #[serde(flatten)]
    paging: Paging,
}

#[derive(Deserialize, JsonSchema)]
struct Paging {
    offset: u32,
    limit: Option<u32>,
}

#[test]
fn flattened_struct_properties_are_inlined() {
    insta::assert_json_snapshot!("flattened", strict::<Flattened>());
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[test]
fn empty_struct_becomes_an_empty_closed_object() {
    insta::assert_json_snapshot!("empty", strict::<Empty>());
}

#[derive(Deserialize, JsonSchema)]
struct Generic<T> {
    value: T,
    note: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Generics {
    text: Generic<String>,
    count: Generic<u32>,
}

#[test]
fn generic_instances_get_their_own_definitions() {
    insta::assert_json_snapshot!("generics", strict::<Generics>());
}

/// Searches files.
///
/// Returns matching lines with their numbers.
#[derive(Deserialize, JsonSchema)]
struct Documented {
    /// The regular expression to search for.
    pattern: String,
    /// Directory to search in.
    /// Defaults to the workspace root.
    path: Option<String>,
}

#[test]
fn doc_comments_become_descriptions() {
    insta::assert_json_snapshot!("documented", strict::<Documented>());
}

#[test]
fn plain_schema_keeps_what_schemars_wrote_minus_meta_schema() {
    let plain = plain_schema_for::<Forecast>();
    assert!(plain.get("$schema").is_none());
    assert_eq!(plain["properties"]["limit"]["default"], 10);
    assert_eq!(plain["required"], serde_json::json!(["city", "days"]));
}

#[test]
fn repeated_calls_return_the_same_schema() {
    assert_eq!(strict::<Forecast>(), strict::<Forecast>());
    let first = agent_core::schema::strict_schema_arc::<Forecast>();
    let second = agent_core::schema::strict_schema_arc::<Forecast>();
    assert!(std::sync::Arc::ptr_eq(&first, &second), "generated once, then cached");
}
