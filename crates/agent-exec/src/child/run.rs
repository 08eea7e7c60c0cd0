//! Running one child: refusals before it starts, its turn among the others, the loop under its
//! budgets, its transcript, and the report.

use std::{
    pin::pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU8, Ordering},
    },
    time::Instant,
};

use agent_core::{CancellationToken, Item, Message, Usage};

use super::{
    AgentDefinition, ChildEnd, ChildEvent, ChildLimit, ChildLink, ChildStart, Children, Inner,
    TaskReport, TaskRequest,
};
use crate::{
    Transcript,
    agent::{self, AgentConfig, AgentEvent, Finish},
    conversation::Conversation,
    executor::child::ChildScope,
};

/// Which budget fired, set by the event callback or the wall-time timer (0: none).
const NONE: u8 = 0;
const TOKENS: u8 = 1;
const SESSION: u8 = 2;
const WALL: u8 = 3;

struct Tally {
    turns: usize,
    calls: Vec<String>,
    usage: Usage,
    tokens: u64,
    last_text: Option<String>,
}

pub(super) async fn run(
    inner: &Inner,
    request: TaskRequest,
    cancel: &CancellationToken,
) -> TaskReport {
    let number = inner.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    let agent_id = format!("{}.c{number}", request.caller);
    let name = request.agent.clone().unwrap_or_else(|| "general".to_owned());
    let mut report = TaskReport {
        agent_id: agent_id.clone(),
        parent_id: request.caller.clone(),
        agent: name.clone(),
        end: ChildEnd::Answered,
        answer: None,
        turns: 0,
        calls: Vec::new(),
        usage: Usage::default(),
        elapsed: std::time::Duration::ZERO,
        transcript: None,
        span_ms: (0, 0),
    };
    let refuse = |mut report: TaskReport, reason: String| {
        report.end = ChildEnd::Failed { reason };
        report
    };
    let template = inner.template.lock().map(|template| template.clone()).ok().flatten();
    let Some(template) = template else {
        if inner.stop.is_cancelled() {
            return refuse(report, "the session is ending".into());
        }
        return refuse(report, "child agents are not set up in this session".into());
    };
    let depth = Children::depth_of(inner, &request.caller) + 1;
    let too_deep = format!(
        "a child agent cannot start another child here: the session's depth limit is {} (max_depth)",
        inner.limits.max_depth
    );
    if depth > inner.limits.max_depth {
        return refuse(report, too_deep);
    }
    let definition = inner.definitions.iter().find(|definition| definition.name == name).cloned();
    let Some(definition) = definition else {
        let known: Vec<String> = inner.definitions.iter().map(|d| d.name.clone()).collect();
        return refuse(
            report,
            format!("no agent is named `{name}`; the agents are: {}", known.join(", ")),
        );
    };
    let spent = inner.used.load(Ordering::SeqCst);
    if spent >= inner.limits.session_tokens || inner.stop.is_cancelled() {
        report.end = ChildEnd::Limit {
            limit: ChildLimit::SessionTokens,
            value: format!("{} tokens", inner.limits.session_tokens),
        };
        return report;
    }
    // A child at the depth limit is not offered the tools that start children.
    let nests = depth < inner.limits.max_depth;
    let keep = |spec: &agent_core::ToolSpec| {
        !inner.withheld.contains(&spec.name)
            && (nests || !inner.spawners.contains(&spec.name))
            && definition.allows(spec)
    };
    let read_only = template.specs().filter(|spec| keep(spec)).all(|spec| spec.effects.read_only);

    // Wait for a slot, and for the write lock when the child can change things.
    let Ok(_slot) = inner.running.acquire().await else {
        return refuse(report, "the session is ending".into());
    };
    let (_shared, _alone) = if read_only {
        (Some(inner.writers.read().await), None)
    } else {
        (None, Some(inner.writers.write().await))
    };
    if let Ok(mut depths) = inner.depth.lock() {
        depths.insert(agent_id.clone(), depth);
    }
    if let Ok(mut usage) = inner.usage.lock() {
        usage.children += 1;
    }

    let child_dir = inner.session_dir.as_ref().map(|dir| dir.join("children"));
    let scope = ChildScope {
        agent_id: &agent_id,
        agent_type: &definition.name,
        mode: definition.permission_mode.unwrap_or(template.mode()),
        session_dir: child_dir.as_ref().map(|dir| dir.join(&agent_id)),
        withheld: (!nests).then(|| (inner.spawners.clone(), too_deep)),
    };
    let executor = template.executor(&scope, keep);
    let mut transcript = child_dir.as_ref().and_then(|dir| {
        std::fs::create_dir_all(dir).ok()?;
        Transcript::open(dir.join(format!("{agent_id}.jsonl")), inner.secrets.clone()).ok()
    });
    report.transcript = transcript.as_ref().map(|t| t.path().to_path_buf());
    if let Some(dir) = child_dir.as_ref().filter(|_| transcript.is_some()) {
        let link = ChildLink {
            agent_id: agent_id.clone(),
            parent_id: request.caller.clone(),
            call_id: request.call_id.clone(),
            agent: definition.name.clone(),
        };
        link.append(dir, &inner.index);
    }
    let config = child_config(inner, &definition);
    let max_turns = config.max_turns;
    let start = ChildStart { agent_id: &agent_id, request: &request, model: None };
    let named = ChildStart { model: definition.model.as_deref(), ..start };
    let model = inner.models.model(&named).or_else(|| inner.models.model(&start));
    let Some(model) = model else {
        let reason = inner.models.unavailable(&start);
        return refuse(report, reason);
    };

    let started = Instant::now();
    report.span_ms.0 = inner.since_epoch();
    let child_cancel = CancellationToken::new();
    let fired = Arc::new(AtomicU8::new(NONE));
    let tally = Arc::new(Mutex::new(Tally {
        turns: 0,
        calls: Vec::new(),
        usage: Usage::default(),
        tokens: 0,
        last_text: None,
    }));
    let mut conversation = Conversation::default();
    let user = Item::Message(Message::user(request.prompt.clone()));
    if let Some(transcript) = transcript.as_mut() {
        let _ = transcript.item(&user);
    }
    conversation.items.push(user);
    let log = Arc::new(Mutex::new(transcript));
    let on_event = {
        let (tally, fired, child_cancel, log) =
            (tally.clone(), fired.clone(), child_cancel.clone(), log.clone());
        let (limits, agent_id, parent_id, agent) =
            (&inner.limits, agent_id.clone(), request.caller.clone(), definition.name.clone());
        move |event: AgentEvent| {
            if let Ok(mut log) = log.lock()
                && let Some(transcript) = log.as_mut()
            {
                let _ = transcript.record(&event);
            }
            if let Ok(mut tally) = tally.lock() {
                match &event {
                    AgentEvent::TurnStarted { .. } => tally.turns += 1,
                    AgentEvent::ToolCallStarted { name, .. } => tally.calls.push(name.clone()),
                    AgentEvent::Usage { usage } => {
                        let tokens = usage.input_tokens + usage.output_tokens;
                        tally.tokens += tokens;
                        tally.usage.input_tokens += usage.input_tokens;
                        tally.usage.cached_input_tokens += usage.cached_input_tokens;
                        tally.usage.output_tokens += usage.output_tokens;
                        tally.usage.reasoning_tokens += usage.reasoning_tokens;
                        let session = inner.add_usage(usage);
                        // Reaching a ceiling exactly is allowed; passing it stops the child, and a
                        // session at its ceiling starts no further child.
                        let which = if session > limits.session_tokens {
                            SESSION
                        } else if tally.tokens > limits.max_tokens {
                            TOKENS
                        } else {
                            NONE
                        };
                        if which != NONE {
                            let _ = fired.compare_exchange(
                                NONE,
                                which,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            );
                            child_cancel.cancel();
                        }
                    }
                    AgentEvent::ItemAdded { item: Item::Message(message) }
                        if message.role == agent_core::Role::Assistant =>
                    {
                        tally.last_text = Some(message.content.clone());
                    }
                    _ => {}
                }
            }
            if let Some(observer) = &inner.observer {
                observer(&ChildEvent {
                    agent_id: agent_id.clone(),
                    parent_id: parent_id.clone(),
                    agent: agent.clone(),
                    event,
                });
            }
        }
    };
    let mut on_event = on_event;
    let finish = {
        let mut looped = pin!(agent::run(
            model.as_ref(),
            &executor,
            &config,
            &mut conversation,
            &child_cancel,
            &mut on_event
        ));
        let wall = tokio::time::sleep(inner.limits.wall_time);
        tokio::select! {
            finish = &mut looped => finish,
            () = cancel.cancelled() => { child_cancel.cancel(); looped.await }
            () = inner.stop.cancelled() => { child_cancel.cancel(); looped.await }
            () = wall => {
                let _ = fired.compare_exchange(NONE, WALL, Ordering::SeqCst, Ordering::SeqCst);
                child_cancel.cancel();
                looped.await
            }
        }
    };
    report.elapsed = started.elapsed();
    report.span_ms.1 = inner.since_epoch();
    if let Ok(tally) = tally.lock() {
        report.turns = tally.turns;
        report.calls.clone_from(&tally.calls);
        report.usage = tally.usage;
        report.answer.clone_from(&tally.last_text);
    }
    report.end = match (fired.load(Ordering::SeqCst), &finish) {
        (TOKENS, _) => ChildEnd::Limit {
            limit: ChildLimit::Tokens,
            value: format!("{} tokens", inner.limits.max_tokens),
        },
        (SESSION, _) => ChildEnd::Limit {
            limit: ChildLimit::SessionTokens,
            value: format!("{} tokens", inner.limits.session_tokens),
        },
        (WALL, _) => ChildEnd::Limit {
            limit: ChildLimit::WallTime,
            value: format!("{}s", inner.limits.wall_time.as_secs()),
        },
        (_, Finish::Answered(text)) => {
            report.answer = Some(text.clone());
            ChildEnd::Answered
        }
        (_, Finish::MaxTurns(_)) => {
            ChildEnd::Limit { limit: ChildLimit::MaxTurns, value: max_turns.to_string() }
        }
        (_, Finish::Cancelled) => ChildEnd::Cancelled,
        (_, Finish::ModelError(err)) => {
            ChildEnd::Failed { reason: format!("its model failed: {err}") }
        }
        (_, Finish::Stopped(reason)) => {
            ChildEnd::Failed { reason: format!("a hook stopped it: {reason}") }
        }
        (_, Finish::InvalidOutput(why)) => ChildEnd::Failed { reason: why.clone() },
    };
    report
}

fn child_config(inner: &Inner, definition: &AgentDefinition) -> AgentConfig {
    let mut instructions = definition.instructions.clone();
    if let Some(project) = inner.project.get().filter(|text| !text.is_empty()) {
        instructions.push_str("\n\n");
        instructions.push_str(project);
    }
    let mut config = AgentConfig::new(instructions);
    config.max_turns = definition
        .max_turns
        .map_or(inner.limits.max_turns, |turns| turns.min(inner.limits.max_turns));
    config
}

impl TaskReport {
    /// Tokens used (input plus output).
    pub fn tokens(&self) -> u64 {
        self.usage.input_tokens + self.usage.output_tokens
    }

    /// The one line of usage the parent model reads after the answer.
    pub fn usage_line(&self) -> String {
        let mut line = format!(
            "[agent {} · {} · {} turns · {} tokens · {:.1}s",
            self.agent,
            self.agent_id,
            self.turns,
            self.tokens(),
            self.elapsed.as_secs_f64()
        );
        if let Some(path) = &self.transcript {
            line.push_str(&format!(" · transcript {}", path.display()));
        }
        line.push(']');
        line
    }

    /// Whether the child answered.
    pub fn ok(&self) -> bool {
        self.end == ChildEnd::Answered
    }

    /// What the parent model reads: the answer and the usage line, or which limit stopped the
    /// child and what it had done so far.
    pub fn observation(&self) -> String {
        let done = || {
            let mut calls: Vec<(String, usize)> = Vec::new();
            for call in &self.calls {
                match calls.iter_mut().find(|(name, _)| name == call) {
                    Some((_, count)) => *count += 1,
                    None => calls.push((call.clone(), 1)),
                }
            }
            let calls = if calls.is_empty() {
                "no tool calls".to_owned()
            } else {
                calls.iter().map(|(name, n)| format!("{name} ×{n}")).collect::<Vec<_>>().join(", ")
            };
            let last = self.answer.as_deref().map_or(String::new(), |text| {
                format!("; its last message: {}", text.chars().take(2000).collect::<String>())
            });
            format!("{} turns, {calls}{last}", self.turns)
        };
        match &self.end {
            ChildEnd::Answered => {
                format!("{}\n\n{}", self.answer.as_deref().unwrap_or("").trim(), self.usage_line())
            }
            ChildEnd::Limit { limit, value } => format!(
                "the child stopped at its {} limit ({value}) before answering. What it had done: {}\n\n{}",
                limit.as_str(),
                done(),
                self.usage_line()
            ),
            ChildEnd::Cancelled => {
                format!(
                    "the child was cancelled. What it had done: {}\n\n{}",
                    done(),
                    self.usage_line()
                )
            }
            ChildEnd::Failed { reason } => reason.clone(),
        }
    }
}
