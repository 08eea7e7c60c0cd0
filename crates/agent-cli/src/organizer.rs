//! How the front ends show the plan and the child agents: the plan as a checklist or a `--json`
//! event, the children's tokens, and their events relayed into the `--json` stream.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use agent_exec::{
    child::{ChildEvent, ChildObserver},
    plan::PLAN_SCHEMA_VERSION,
};
use agent_session::agents::Organizer;

use crate::{
    events::{ExecEvent, JsonStream, Tokens},
    status::Tally,
};

/// The plan and children of a session, as the terminal and `--json` show them.
pub(crate) trait Shown {
    /// The plan as `exec --json` streams it.
    fn plan_event(&self) -> ExecEvent;

    /// The plan as the terminal shows it after each change and for `/plan`.
    fn checklist(&self) -> String;

    /// The children's tokens, when any child ran.
    fn child_tokens(&self) -> Option<Tokens>;

    /// How many children ran and their tokens, for `/status`; `None` before the first.
    fn child_tally(&self) -> Option<(u64, Tally)>;

    /// Prints every child event as an `agent.event` line of the `--json` stream.
    fn stream_json(&self);
}

impl Shown for Organizer {
    /// The plan as `exec --json` streams it.
    fn plan_event(&self) -> ExecEvent {
        let plan = self.plan.snapshot();
        ExecEvent::PlanUpdated {
            plan_schema_version: PLAN_SCHEMA_VERSION,
            seq: self.plan.seq(),
            plan: serde_json::to_value(&plan).unwrap_or_default(),
        }
    }

    /// The plan as the terminal shows it after each change and for `/plan`.
    fn checklist(&self) -> String {
        let plan = self.plan.snapshot();
        if plan.items.is_empty() {
            return "no plan yet".to_owned();
        }
        let (done, total) = plan.progress();
        let mut text = format!("plan: {done} of {total} done\n");
        for line in plan.checklist().lines() {
            text.push_str("  ");
            text.push_str(&crate::terminal::visible_line(line));
            text.push('\n');
        }
        text.trim_end().to_owned()
    }

    /// The children's tokens, when any child ran.
    fn child_tokens(&self) -> Option<Tokens> {
        let usage = self.children.usage();
        (usage.children > 0).then(|| {
            let mut tokens = Tokens::default();
            tokens.add(&usage.usage);
            tokens
        })
    }

    /// How many children ran and their tokens, for `/status`; `None` before the first.
    fn child_tally(&self) -> Option<(u64, Tally)> {
        let usage = self.children.usage();
        (usage.children > 0).then(|| {
            let mut tally = Tally::default();
            // A child whose server reported nothing is counted as not reported, not as zero.
            let reported = usage.usage != agent_core::Usage::default();
            if reported {
                tally.add(&usage.usage);
            }
            (usage.children, tally)
        })
    }

    /// Prints every child event as an `agent.event` line of the `--json` stream.
    fn stream_json(&self) {
        let streams: Mutex<HashMap<String, JsonStream>> = Mutex::default();
        let observer: ChildObserver = Arc::new(move |event: &ChildEvent| {
            let Ok(mut streams) = streams.lock() else { return };
            let stream = streams.entry(event.agent_id.clone()).or_default();
            if let Some(inner) = stream.event(&event.event) {
                crate::events::print(&ExecEvent::ChildEvent {
                    agent_id: event.agent_id.clone(),
                    parent_id: event.parent_id.clone(),
                    agent: event.agent.clone(),
                    event: Box::new(inner),
                });
            }
        });
        if let Ok(mut relay) = self.relay.lock() {
            *relay = Some(observer);
        }
    }
}
