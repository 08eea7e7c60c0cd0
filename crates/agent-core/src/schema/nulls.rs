//! Which `null`s mean "use the default": the strict schema makes every optional field nullable,
//! so a model may send `null` where the Rust field has a serde default but its schema does not
//! accept null (`#[serde(default)] verbose: bool`). Such nulls are removed before validation.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::node::{accepts_null, resolve};

/// A plan, computed once per schema, of where `null`s are dropped. It mirrors the schema as a
/// graph: `$ref`s share one node, so recursive types need no special case.
#[derive(Debug, Default)]
pub(crate) struct NullPlan {
    nodes: Vec<PlanNode>,
    /// Whether a node (or anything below it) drops something; the walk skips the rest.
    useful: Vec<bool>,
}

#[derive(Debug, Default)]
struct PlanNode {
    /// Object keys whose `null` is dropped.
    drop: Vec<Box<str>>,
    /// Plans for the values of named properties.
    properties: Vec<(Box<str>, usize)>,
    /// Plan for array items.
    items: Option<usize>,
    /// Plan for the values of a map (`additionalProperties` with a schema).
    values: Option<usize>,
    /// Plans that apply to the same value (`$ref` targets, `anyOf`/`oneOf`/`allOf` branches).
    also: Vec<usize>,
}

/// How deep plans may chain through `also` on one value. Only a schema whose references loop
/// without going through a property or an item could reach it.
const MAX_CHAIN: usize = 64;

impl NullPlan {
    pub(crate) fn build(schema: &Value) -> Self {
        let mut builder =
            Builder { root: schema, plan: NullPlan::default(), targets: HashMap::new() };
        builder.node(schema);
        let mut plan = builder.plan;
        plan.useful = plan.nodes.iter().map(|n| !n.drop.is_empty()).collect();
        // Usefulness flows up from children; iterate to a fixed point because plans can be cyclic.
        let mut changed = true;
        while changed {
            changed = false;
            for (id, node) in plan.nodes.iter().enumerate() {
                if plan.useful[id] {
                    continue;
                }
                let children =
                    node.properties.iter().map(|(_, c)| *c).chain(node.items).chain(node.values);
                if children.chain(node.also.iter().copied()).any(|c| plan.useful[c]) {
                    plan.useful[id] = true;
                    changed = true;
                }
            }
        }
        plan
    }

    /// Removes the nulls that mean "default" from `value`; returns whether any was removed.
    pub(crate) fn apply(&self, value: &mut Value) -> bool {
        !self.nodes.is_empty() && self.apply_at(value, 0, 0)
    }

    fn apply_at(&self, value: &mut Value, id: usize, chain: usize) -> bool {
        if !self.useful[id] || chain > MAX_CHAIN {
            return false;
        }
        let node = &self.nodes[id];
        let mut dropped = false;
        match value {
            Value::Object(map) => {
                for key in &node.drop {
                    if map.get(&**key).is_some_and(Value::is_null) {
                        map.remove(&**key);
                        dropped = true;
                    }
                }
                for (key, child) in &node.properties {
                    if let Some(child_value) = map.get_mut(&**key) {
                        dropped |= self.apply_at(child_value, *child, 0);
                    }
                }
                if let Some(values) = node.values {
                    for child_value in map.values_mut() {
                        dropped |= self.apply_at(child_value, values, 0);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(plan) = node.items {
                    for item in items {
                        dropped |= self.apply_at(item, plan, 0);
                    }
                }
            }
            _ => {}
        }
        for &other in &node.also {
            dropped |= self.apply_at(value, other, chain + 1);
        }
        dropped
    }
}

struct Builder<'a> {
    root: &'a Value,
    plan: NullPlan,
    /// Plan node of each `$ref` target already planned (or being planned).
    targets: HashMap<*const Value, usize>,
}

impl<'a> Builder<'a> {
    fn node(&mut self, node: &'a Value) -> Option<usize> {
        let Value::Object(map) = node else { return None };
        let id = self.plan.nodes.len();
        self.plan.nodes.push(PlanNode::default());
        let mut plan = PlanNode::default();
        if let Some(target) =
            map.get("$ref").and_then(Value::as_str).and_then(|r| resolve(self.root, r))
        {
            plan.also.extend(self.target(target));
        }
        if let Some(Value::Object(properties)) = map.get("properties") {
            let required: HashSet<&str> = match map.get("required") {
                Some(Value::Array(keys)) => keys.iter().filter_map(Value::as_str).collect(),
                _ => HashSet::new(),
            };
            for (key, property) in properties {
                if !required.contains(key.as_str()) && !accepts_null(property, self.root) {
                    plan.drop.push(key.as_str().into());
                }
                if let Some(child) = self.node(property) {
                    plan.properties.push((key.as_str().into(), child));
                }
            }
        }
        plan.items = map.get("items").and_then(|items| self.node(items));
        plan.values = map.get("additionalProperties").and_then(|values| self.node(values));
        for keyword in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword) {
                for branch in branches {
                    plan.also.extend(self.node(branch));
                }
            }
        }
        self.plan.nodes[id] = plan;
        Some(id)
    }

    fn target(&mut self, target: &'a Value) -> Option<usize> {
        if !target.is_object() {
            return None;
        }
        let key = std::ptr::from_ref(target);
        if let Some(&id) = self.targets.get(&key) {
            return Some(id);
        }
        // `node` takes the next index; record it first so that a reference back to this target
        // from inside it finds the node under construction.
        self.targets.insert(key, self.plan.nodes.len());
        self.node(target)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::NullPlan;

    fn check(schema: Value, mut value: Value, expected: Value) {
        let plan = NullPlan::build(&schema);
        let before = value.clone();
        let changed = plan.apply(&mut value);
        assert_eq!(value, expected);
        assert_eq!(changed, before != expected, "the changed flag");
    }

    #[test]
    fn drops_nulls_of_defaulted_fields_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "flag": {"type": "boolean", "default": false},
                "name": {"type": ["string", "null"]},
                "city": {"type": "string"},
                "inner": {"$ref": "#/$defs/Inner"},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]}
            },
            "required": ["city"],
            "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}, "me": {"$ref": "#/$defs/Inner"}}}}
        });
        check(
            schema.clone(),
            json!({"flag": null, "name": null, "city": null, "inner": {"n": null, "me": {"n": null}}}),
            json!({"name": null, "city": null, "inner": {"me": {}}}),
        );
        check(
            schema,
            json!({"list": [{"n": null}, {"n": 1}], "maybe": {"n": null}}),
            json!({"list": [{}, {"n": 1}], "maybe": {}}),
        );
    }

    #[test]
    fn nothing_to_drop_is_a_no_op() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let plan = NullPlan::build(&schema);
        let mut value = json!({"text": null});
        assert!(!plan.apply(&mut value));
        assert_eq!(value, json!({"text": null}));
    }
}
