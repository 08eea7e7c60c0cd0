//! Argument validation (docs/schema.md, "The validation pipeline"): one table of argument strings and outcomes, a
//! round trip through the strict schema, and a proptest that nothing panics.

use agent_core::schema::{ArgsError, ArgsValidator, parse_args, strict_schema_for};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Forecast {
    city: String,
    #[schemars(range(min = 1, max = 14))]
    days: u8,
    units: Option<Units>,
    #[serde(default)]
    include_hourly: bool,
    #[serde(default = "ten")]
    limit: u32,
    location: Option<Coords>,
    #[serde(default)]
    stops: Vec<Coords>,
}

fn ten() -> u32 {
    10
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Metric,
    Imperial,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Coords {
    lat: f64,
    lon: f64,
    #[serde(default)]
    label: String,
}

fn paris(days: u8) -> Forecast {
    Forecast {
        city: "Paris".to_owned(),
        days,
        units: None,
        include_hourly: false,
        limit: 10,
        location: None,
        stops: Vec::new(),
    }
}

/// Runs `parse_args` and compares: `Ok` with the value, or `Err` with the path and a fragment
/// of the message.
fn check(text: &str, expected: Result<Forecast, (&str, &str)>) {
    match (parse_args::<Forecast>(text), expected) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
        (Err(err), Err((path, fragment))) => {
            assert_eq!(err.path(), path, "{text}: {err}");
            assert!(err.to_string().contains(fragment), "{text}: `{err}` lacks `{fragment}`");
        }
        (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
    }
}

#[test]
fn argument_table() {
    let with = |f: fn(&mut Forecast)| {
        let mut value = paris(3);
        f(&mut value);
        Ok(value)
    };
    // Nulls for Option and defaulted fields mean "default"; omitted keys too.
    check(
        r#"{"city":"Paris","days":3,"units":null,"include_hourly":null,"limit":null,"location":null,"stops":null}"#,
        Ok(paris(3)),
    );
    check(r#"{"city":"Paris","days":3}"#, Ok(paris(3)));
    check(r#"{"days":3,"city":"Paris","limit":5}"#, with(|f| f.limit = 5));
    check(
        r#"{"city":"Paris","days":3,"units":"imperial"}"#,
        with(|f| f.units = Some(Units::Imperial)),
    );
    // Nested defaulted fields take null too, through Option, Vec and $ref.
    check(
        r#"{"city":"Paris","days":3,"location":{"lat":1,"lon":2,"label":null},"stops":[{"lat":0,"lon":0,"label":null}]}"#,
        with(|f| {
            f.location = Some(Coords { lat: 1.0, lon: 2.0, label: String::new() });
            f.stops = vec![Coords { lat: 0.0, lon: 0.0, label: String::new() }];
        }),
    );
    // Required fields: missing, or null.
    check(r#"{"days":3}"#, Err(("$", "missing required field `city`")));
    check(r#"{"city":null,"days":3}"#, Err(("$.city", "expected a string, got null")));
    // Unknown keys, at the root and nested.
    check(
        r#"{"city":"Paris","days":3,"colour":"red"}"#,
        Err(("$.colour", "unknown field `colour`; expected one of `city`, `days`, `units`")),
    );
    check(
        r#"{"city":"Paris","days":3,"location":{"lat":1,"lon":2,"alt":3}}"#,
        Err(("$.location.alt", "unknown field `alt`; expected one of `lat`, `lon`, `label`")),
    );
    check(
        r#"{"city":"Paris","days":3,"stops":[{"lat":1,"lon":2},{"lat":1,"lon":2,"x":0}]}"#,
        Err(("$.stops[1].x", "unknown field `x`")),
    );
    // Ranges schemars wrote but serde does not check.
    check(r#"{"city":"Paris","days":20}"#, Err(("$.days", "expected an integer ≤ 14, got 20")));
    check(r#"{"city":"Paris","days":0}"#, Err(("$.days", "expected an integer ≥ 1, got 0")));
    // serde is the final arbiter: 3.0 is an integer to JSON Schema, not to u8.
    check(r#"{"city":"Paris","days":3.0}"#, Err(("$.days", "expected an integer, got 3.0")));
    check(
        r#"{"city":"Paris","days":3,"limit":4294967296}"#,
        Err(("$.limit", "expected an integer from 0 to 4294967295, got 4294967296")),
    );
    check(r#"{"city":"Paris","days":3,"limit":-1}"#, Err(("$.limit", "≥ 0")));
    // Duplicate keys are refused, even where one would be dropped as a null.
    check(r#"{"city":"Paris","days":3,"city":"Rome"}"#, Err(("$.city", "duplicate key `city`")));
    check(
        r#"{"city":"Paris","days":3,"limit":null,"limit":null}"#,
        Err(("$.limit", "duplicate key")),
    );
    // Enum values outside the enum, and wrong types inside unions.
    check(
        r#"{"city":"Paris","days":3,"units":"kelvin"}"#,
        Err(("$.units", r#"expected one of "metric", "imperial" or null, got "kelvin""#)),
    );
    check(
        r#"{"city":"Paris","days":3,"location":"here"}"#,
        Err(("$.location", "expected an object or null")),
    );
    check(
        r#"{"city":"Paris","days":3,"location":{"lat":1}}"#,
        Err(("$.location", "missing required field `lon`")),
    );
    // Not a JSON object.
    check(r#"{"city":"Paris","days":3,"#, Err(("$", "EOF while parsing")));
    check("", Err(("$", "arguments are empty")));
    check("null", Err(("$", "expected a JSON object, got null")));
    check("[]", Err(("$", "expected a JSON object, got an array")));
    check("42", Err(("$", "got a number")));
    check(r#"{"city":"Paris","days":3} {}"#, Err(("$", "trailing characters")));
}

#[test]
fn several_problems_are_reported_together() {
    let err = parse_args::<Forecast>(r#"{"city":1,"days":20}"#).err().map(|e| e.to_string());
    let err = err.unwrap_or_default();
    assert!(err.contains("`$.city`: expected a string, got 1"), "{err}");
    assert!(err.contains("also at `$.days`: expected an integer ≤ 14, got 20"), "{err}");
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Write {
    #[schemars(length(max = 1000))]
    text: String,
    note: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[test]
fn ten_megabyte_strings_are_judged_by_the_schema() {
    let big = "x".repeat(10 * 1024 * 1024);
    let err = parse_args::<Write>(&format!(r#"{{"text":"{big}"}}"#)).err();
    let err = err.map(|e| (e.path().to_owned(), e.to_string())).unwrap_or_default();
    assert_eq!(err.0, "$.text");
    assert!(err.1.contains("at most 1000 characters, got 10485760 characters"), "{}", err.1);
    assert!(err.1.len() < 300, "the value is not echoed in full");
    let echo = parse_args::<Echo>(&format!(r#"{{"text":"{big}"}}"#)).map(|e| e.text.len());
    assert_eq!(echo, Ok(big.len()));
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Contact {
    #[schemars(email)]
    email: String,
    #[schemars(regex(pattern = r"^[a-z]+$"))]
    slug: String,
    #[schemars(length(min = 2))]
    tags: Vec<String>,
    #[schemars(length(min = 2, max = 3))]
    code: String,
}

#[test]
fn formats_patterns_and_lengths_are_enforced() {
    let parse = |text: &str| {
        parse_args::<Contact>(text).map(|_| ()).map_err(|e| (e.path().to_owned(), e.to_string()))
    };
    assert_eq!(parse(r#"{"email":"a@b.org","slug":"ok","tags":["a","b"],"code":"ab"}"#), Ok(()));
    let cases = [
        (
            r#"{"email":"nope","slug":"ok","tags":["a","b"],"code":"ab"}"#,
            "$.email",
            "valid `email`",
        ),
        (
            r#"{"email":"a@b.org","slug":"Not ok","tags":["a","b"],"code":"ab"}"#,
            "$.slug",
            "matching `^[a-z]+$`",
        ),
        (
            r#"{"email":"a@b.org","slug":"ok","tags":["a"],"code":"ab"}"#,
            "$.tags",
            "at least 2 items, got 1 items",
        ),
        (
            r#"{"email":"a@b.org","slug":"ok","tags":["a","b"],"code":"abcd"}"#,
            "$.code",
            "at most 3 characters",
        ),
    ];
    for (text, path, fragment) in cases {
        let (got_path, message) = parse(text).err().unwrap_or_default();
        assert_eq!(got_path, path, "{text}");
        assert!(message.contains(fragment), "{text}: {message}");
    }
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Drawing {
    shape: Shape,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "type")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

#[test]
fn internally_tagged_enums_report_the_matching_variant() {
    let parse =
        |text: &str| parse_args::<Drawing>(text).map_err(|e| (e.path().to_owned(), e.to_string()));
    assert_eq!(
        parse(r#"{"shape":{"type":"Circle","radius":1}}"#),
        Ok(Drawing { shape: Shape::Circle { radius: 1.0 } })
    );
    let (path, message) = parse(r#"{"shape":{"type":"Circle"}}"#).err().unwrap_or_default();
    assert_eq!(
        (path.as_str(), message.contains("missing required field `radius`")),
        ("$.shape", true),
        "{message}"
    );
    let (path, message) = parse(r#"{"shape":{"type":"Triangle"}}"#).err().unwrap_or_default();
    assert_eq!(path, "$.shape.type");
    assert!(message.contains(r#"expected "Circle" or "Square", got "Triangle""#), "{message}");
    // serde alone would ignore the extra key inside a variant; the closed schema refuses it.
    let (path, _) =
        parse(r#"{"shape":{"type":"Circle","radius":1,"color":"red"}}"#).err().unwrap_or_default();
    assert_eq!(path, "$.shape.color");
}

#[test]
fn what_the_strict_schema_allows_parse_args_accepts() {
    // A model following the strict schema sends every key, with null for the optional ones.
    let strict = strict_schema_for::<Forecast>().unwrap_or_else(|e| panic!("{e}"));
    let call = json!({"city": "Oslo", "days": 2, "units": null, "include_hourly": null, "limit": null, "location": null, "stops": null});
    assert!(jsonschema::is_valid(&strict, &call), "the call fits the strict schema");
    assert_eq!(
        parse_args::<Forecast>(&call.to_string()),
        Ok(Forecast { city: "Oslo".to_owned(), ..paris(2) })
    );
}

#[test]
fn schema_only_tools_validate_values() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"path": {"type": "string"}, "recursive": {"type": "boolean", "default": false}},
        "required": ["path"]
    });
    let validator = ArgsValidator::from_schema(&schema).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(validator.parse_value(r#"{"path":"a","recursive":null}"#), Ok(json!({"path": "a"})));
    assert_eq!(
        validator.parse_value(r#"{"path":"a","x":1}"#).map_err(|e| e.path().to_owned()),
        Err("$.x".to_owned())
    );
    let broken = ArgsValidator::from_schema(
        &json!({"type": "object", "properties": {"a": {"pattern": "("}}}),
    );
    assert!(broken.is_err());
}

#[derive(Debug, Deserialize, JsonSchema)]
struct BadRegex {
    #[schemars(regex(pattern = "("))]
    text: String,
}

#[test]
fn a_type_whose_schema_does_not_compile_refuses_calls_without_panicking() {
    let validator = ArgsValidator::for_type::<BadRegex>();
    assert!(validator.schema_error().is_some());
    let err = validator.parse::<BadRegex>(r#"{"text":"a"}"#).err();
    assert!(
        matches!(err, Some(ArgsError::Invalid { ref message, .. }) if message.contains("schema is broken")),
        "{err:?}"
    );
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Loose {
    counts: std::collections::HashMap<String, u8>,
    extra: serde_json::Value,
}

#[test]
fn types_without_a_strict_form_are_still_validated() {
    let parse =
        |text: &str| parse_args::<Loose>(text).map_err(|e| (e.path().to_owned(), e.to_string()));
    let ok =
        parse(r#"{"counts":{"a":1},"extra":[1,{"x":null}]}"#).map(|l| (l.counts.len(), l.extra));
    assert_eq!(ok, Ok((1, json!([1, {"x": null}]))), "maps stay open, any value is any value");
    let (path, message) = parse(r#"{"counts":{"a":300},"extra":1}"#).err().unwrap_or_default();
    assert_eq!(
        (path.as_str(), message.contains("≤ 255, got 300")),
        ("$.counts.a", true),
        "{message}"
    );
    let (path, _) = parse(r#"{"counts":{},"extra":1,"more":2}"#).err().unwrap_or_default();
    assert_eq!(path, "$.more");
}

fn json_ish() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        "[a-z\"\\\\ ]{0,8}".prop_map(|s| format!("{s:?}")),
        prop::sample::select(vec!["\"Paris\"", "\"metric\"", "3", "14", "20", "3.0", "-1"])
            .prop_map(str::to_owned),
    ];
    let value = leaf.prop_recursive(4, 32, 6, |inner| {
        let key = prop::sample::select(vec![
            "city", "days", "units", "limit", "location", "lat", "lon", "label", "stops", "x",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((key, inner), 0..6).prop_map(|fields| {
                let fields: Vec<String> =
                    fields.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    });
    // Cut some of them short, as a model's truncated output would be.
    (value, any::<prop::sample::Index>(), any::<bool>()).prop_map(|(text, cut, truncate)| {
        if truncate && !text.is_empty() {
            let at = cut.index(text.len());
            text.char_indices()
                .map(|(i, _)| i)
                .take_while(|i| *i <= at)
                .last()
                .map_or(text.clone(), |i| text[..i].to_owned())
        } else {
            text
        }
    })
}

fn assert_value_or_error_with_path(text: &str) {
    match parse_args::<Forecast>(text) {
        Ok(forecast) => {
            assert!((1..=14).contains(&forecast.days), "{text}: days out of range accepted")
        }
        Err(err) => {
            assert!(err.path().starts_with('$'), "{text}: {err:?}");
            assert!(!err.to_string().is_empty());
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        assert_value_or_error_with_path(&text);
    }

    #[test]
    fn arbitrary_json_ish_strings_never_panic(text in json_ish()) {
        assert_value_or_error_with_path(&text);
    }
}

/// Prints the cost of one validated call on a small input. Run it in release mode:
/// `cargo test -p agent-core --release --test all -- --ignored measure --nocapture`.
#[test]
#[ignore = "a measurement, not a check; run by hand in release mode"]
#[allow(clippy::print_stdout)]
fn measure_parse_cost() {
    let validator = ArgsValidator::for_type::<Echo>();
    let text = r#"{"text":"hello"}"#;
    let forecast = ArgsValidator::for_type::<Forecast>();
    let forecast_text = r#"{"city":"Paris","days":3,"units":"metric","include_hourly":null,"limit":null,"location":null,"stops":null}"#;
    // Warm the allocator and caches first; the first loop of a fresh process runs slower.
    for _ in 0..200_000 {
        let _ = forecast.parse::<Forecast>(std::hint::black_box(forecast_text));
    }
    let calls = 200_000u32;
    let time = |f: &mut dyn FnMut() -> bool| {
        let start = std::time::Instant::now();
        let mut ok = 0u32;
        for _ in 0..calls {
            ok += u32::from(f());
        }
        (start.elapsed() / calls, ok)
    };
    let (echo, ok) = time(&mut || validator.parse::<Echo>(std::hint::black_box(text)).is_ok());
    println!("ArgsValidator::parse::<Echo>({text}): {} ns/call ({ok} ok)", echo.as_nanos());
    let (serde_only, _) =
        time(&mut || serde_json::from_str::<Echo>(std::hint::black_box(text)).is_ok());
    println!("serde_json::from_str::<Echo> alone: {} ns/call", serde_only.as_nanos());
    let (full, ok) =
        time(&mut || forecast.parse::<Forecast>(std::hint::black_box(forecast_text)).is_ok());
    println!(
        "ArgsValidator::parse::<Forecast>(all keys, 4 nulls): {} ns/call ({ok} ok)",
        full.as_nanos()
    );
    let (cached, _) = time(&mut || parse_args::<Echo>(std::hint::black_box(text)).is_ok());
    println!("parse_args::<Echo> (per-type cache lookup each call): {} ns/call", cached.as_nanos());
    let echo_value = validator.parse_value(text).unwrap_or_default();
    let (from_value, _) = time(&mut || {
        serde_json::from_value::<Echo>(std::hint::black_box(echo_value.clone())).is_ok()
    });
    let (clone, _) = time(&mut || std::hint::black_box(echo_value.clone()).is_object());
    println!(
        "from_value::<Echo> incl. a clone: {} ns (clone alone {} ns)",
        from_value.as_nanos(),
        clone.as_nanos()
    );
    let open = ArgsValidator::from_schema(&json!({})).unwrap_or_else(|e| panic!("{e}"));
    // Where the time goes, stage by stage, for both inputs.
    for (name, text, validator) in
        [("Echo", text, &validator), ("Forecast", forecast_text, &forecast)]
    {
        let (parse, _) = time(&mut || {
            serde_json::from_str::<serde_json::Value>(std::hint::black_box(text)).is_ok()
        });
        let value = validator.parse_value(text).unwrap_or_default();
        let compiled =
            jsonschema::validator_for(validator.schema()).unwrap_or_else(|e| panic!("{e}"));
        let (valid, _) = time(&mut || compiled.is_valid(std::hint::black_box(&value)));
        let (values, _) = time(&mut || validator.parse_value(std::hint::black_box(text)).is_ok());
        let (read, _) = time(&mut || open.parse_value(std::hint::black_box(text)).is_ok());
        println!("{name}: reading alone (schema {{}}) {} ns", read.as_nanos());
        println!(
            "{name}: Value parse {} ns, is_valid {} ns, parse_value {} ns",
            parse.as_nanos(),
            valid.as_nanos(),
            values.as_nanos()
        );
    }
}

/// The exact text a model reads for each kind of mistake.
#[test]
fn error_messages_as_the_model_reads_them() {
    let cases = [
        r#"{"days":3}"#,
        r#"{"city":"Paris","days":3,"colour":"red"}"#,
        r#"{"city":"Paris","days":20}"#,
        r#"{"city":"Paris","days":3.0}"#,
        r#"{"city":"Paris","days":3,"city":"Rome"}"#,
        r#"{"city":"Paris","days":3,"units":"kelvin"}"#,
        r#"{"city":"Paris","days":3,"location":{"lat":1}}"#,
        r#"{"city":"Paris","days":3,"stops":[{"lat":1,"lon":2,"x":0}]}"#,
        r#"{"city":1,"days":"3"}"#,
        r#"{"city":"Paris","days":3,"#,
        "",
        "[]",
        r#""{\"city\":\"Paris\"}""#,
    ];
    let mut out = String::new();
    for text in cases {
        let result = parse_args::<Forecast>(text)
            .err()
            .map_or_else(|| "accepted".to_owned(), |e| e.to_string());
        out.push_str(&format!("{text}\n  => {result}\n"));
    }
    insta::assert_snapshot!("forecast_errors", out);
}
