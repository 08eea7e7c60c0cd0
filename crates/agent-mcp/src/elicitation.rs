//! `Elicitor`: the served executor's approver, which puts an `ask` verdict to the MCP client
//! that made the call: as an `elicitation/create` request to a client of the 2025 era, and as an
//! `input_required` result (SEP-2322) to a 2026-07-28 client, which has no server-to-client
//! requests.
//!
//! The 2026 way is stateless: the first `tools/call` gets the question instead of a result (the
//! executor's approver refuses the call, so nothing ran), and the client calls again with the
//! answer in `inputResponses` under [`APPROVAL_KEY`]; that request's approval is the answer.
//! The answer is the calling client's own, so a client that sends an `accept` it was never asked
//! for gains nothing it could not get by answering the question.
//!
//! The executor has one approver, but an MCP server has many callers (one per HTTP session, and
//! each may or may not support elicitation). So the server registers the client of every running
//! call under the call's id, and the approver looks it up: a client that declared elicitation
//! (form mode) is asked, and any other call is refused by the executor exactly as without an
//! approver, naming the rule that would allow it (`Approver::can_answer`).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
};

use agent_core::BoxFuture;
use agent_exec::{Approval, ApprovalRequest, Approver};
use rmcp::{
    Peer, RoleServer,
    model::{
        ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
        InputRequest, InputRequests, InputRequiredResult, InputResponses,
    },
    service::ElicitationMode,
};

/// The key of the approval question in `inputRequests` and of its answer in `inputResponses`.
pub const APPROVAL_KEY: &str = "approval";

/// How much of a call's argument text the approval question quotes: enough to judge a command
/// or a path, without flooding the client's dialog with a whole file's content.
const QUOTED_ARGUMENTS: usize = 2_000;

/// How the approval question words the rules that would allow a call without asking: given the
/// rules, the sentence's remedy, such as `start the server with --allow 'Edit(./x.txt)'`.
///
/// The library does not know how the program serving it takes its rules, so the program says;
/// without one the question names the rules alone ([`ToolServer::with_rule_advice`]).
///
/// [`ToolServer::with_rule_advice`]: crate::ToolServer::with_rule_advice
pub type RuleAdvice = Arc<dyn Fn(&[String]) -> String + Send + Sync>;

/// The clients of the running calls, by call id, asked when a call needs approval.
#[derive(Default)]
pub(crate) struct Elicitor {
    callers: Mutex<HashMap<String, Caller>>,
    advice: Option<RuleAdvice>,
}

impl std::fmt::Debug for Elicitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elicitor").field("callers", &self.callers().len()).finish_non_exhaustive()
    }
}

/// The client of a running call.
#[derive(Clone)]
pub(crate) enum Caller {
    /// A client that opened a session (2025-11-25 and earlier): asked with a request.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 client: asked with an `input_required` result.
    Stateless(Arc<Stateless>),
}

/// What one 2026-07-28 request carries about the approval question, and the question it needs.
#[derive(Default)]
pub(crate) struct Stateless {
    /// The client declared form elicitation in this request's `_meta`.
    pub(crate) can_ask: bool,
    /// Its answer to the approval question, when the request carries one.
    pub(crate) answer: Option<ElicitationAction>,
    /// The question the call needs answered, set when the approver found no answer.
    question: Mutex<Option<String>>,
}

impl Stateless {
    /// A request's state: whether the client can be asked, and its answer in `responses`.
    pub(crate) fn new(can_ask: bool, responses: Option<&InputResponses>) -> Self {
        let answer = responses
            .and_then(|responses| responses.get(APPROVAL_KEY))
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
            .map(|result| result.action);
        Self { can_ask, answer, question: Mutex::default() }
    }

    /// The `input_required` result asking the question the call needs, if it needs one.
    pub(crate) fn asking(&self) -> Option<InputRequiredResult> {
        let message = self.question.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        let mut requests = InputRequests::new();
        requests
            .insert(APPROVAL_KEY.to_owned(), InputRequest::Elicitation(ElicitRequest::new(params)));
        Some(InputRequiredResult::from_input_requests(requests))
    }
}

/// Keeps a call's client registered while the call runs; unregisters it when dropped, also when
/// the call's future is dropped early (the connection went away).
pub(crate) struct Registration {
    elicitor: Arc<Elicitor>,
    call_id: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.elicitor.callers().remove(&self.call_id);
    }
}

impl Elicitor {
    /// An approver whose questions word the allowing rules with `advice`.
    pub(crate) fn new(advice: Option<RuleAdvice>) -> Self {
        Self { callers: Mutex::default(), advice }
    }

    /// Registers `peer` as the client of `call_id` until the returned guard is dropped.
    pub(crate) fn register(self: &Arc<Self>, call_id: &str, caller: Caller) -> Registration {
        self.callers().insert(call_id.to_owned(), caller);
        Registration { elicitor: Arc::clone(self), call_id: call_id.to_owned() }
    }

    fn callers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Caller>> {
        // The map holds no invariant a panicking holder could break.
        self.callers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn caller(&self, call_id: &str) -> Option<Caller> {
        self.callers().get(call_id).cloned()
    }
}

impl Approver for Elicitor {
    fn can_answer(&self, request: &ApprovalRequest) -> bool {
        match self.caller(&request.call_id) {
            Some(Caller::Session(peer)) => {
                peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
            }
            Some(Caller::Stateless(state)) => state.can_ask,
            None => false,
        }
    }

    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let peer = match self.caller(&request.call_id) {
                Some(Caller::Session(peer)) => peer,
                Some(Caller::Stateless(state)) => {
                    return match &state.answer {
                        Some(action) => verdict(action.clone()),
                        None => {
                            let question = question(request, self.advice.as_ref());
                            *state.question.lock().unwrap_or_else(PoisonError::into_inner) =
                                Some(question);
                            refused("the MCP client has not answered yet")
                        }
                    };
                }
                None => return refused("the MCP client that made the call is gone"),
            };
            // An empty form: the question is the message, and the answer is the action alone.
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: question(request, self.advice.as_ref()),
                requested_schema: ElicitationSchema::new(BTreeMap::new()),
            };
            match peer.create_elicitation(params).await {
                Ok(result) => verdict(result.action),
                Err(err) => refused(&format!("the MCP client could not be asked ({err})")),
            }
        })
    }
}

/// The approval a client's answer gives.
fn verdict(action: ElicitationAction) -> Approval {
    match action {
        ElicitationAction::Accept => Approval::AllowOnce,
        ElicitationAction::Decline => refused("declined in the MCP client"),
        _ => refused("the MCP client's approval request was dismissed"),
    }
}

/// A refusal; the executor words it as `the user rejected this call: WHY`.
fn refused(why: &str) -> Approval {
    Approval::Deny { reason: Some(why.to_owned()) }
}

/// The question put to the client's user: the tool, why it asks, the arguments, and the rules
/// that would allow such calls without asking (worded by `advice` when the program gave one).
fn question(request: &ApprovalRequest, advice: Option<&RuleAdvice>) -> String {
    let mut arguments: String = request.arguments.chars().take(QUOTED_ARGUMENTS).collect();
    if arguments.len() < request.arguments.len() {
        arguments.push_str(" …");
    }
    let mut text = format!(
        "Allow `{}` to run? It needs approval: {}.\nArguments: {arguments}",
        request.tool, request.reason
    );
    let rules = &request.suggested_rules;
    if !rules.is_empty() {
        let remedy = match advice {
            Some(advice) => advice(rules),
            None if rules.len() == 1 => format!("give the server the allow rule '{}'", rules[0]),
            None => format!("give the server the allow rules '{}'", rules.join("', '")),
        };
        text.push_str(&format!("\nTo allow such calls without asking, {remedy}."));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(arguments: &str, rules: &[&str]) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "mcp_1".to_owned(),
            tool: "write_file".to_owned(),
            arguments: arguments.to_owned(),
            access: Vec::new(),
            reason: "edits need approval in default mode".to_owned(),
            suggested_rules: rules.iter().map(|rule| (*rule).to_owned()).collect(),
        }
    }

    #[test]
    fn the_question_names_the_tool_the_reason_the_arguments_and_the_rules() {
        let text = question(&request(r#"{"path":"x.txt"}"#, &["Edit(./x.txt)"]), None);
        assert_eq!(
            text,
            "Allow `write_file` to run? It needs approval: edits need approval in default mode.\n\
             Arguments: {\"path\":\"x.txt\"}\n\
             To allow such calls without asking, give the server the allow rule 'Edit(./x.txt)'."
        );
    }

    /// The library names no program's flags; the program that serves it words the remedy.
    #[test]
    fn the_program_words_the_remedy() {
        let advice: RuleAdvice = Arc::new(|rules| format!("pass {}", rules.join(" and ")));
        let text = question(&request("{}", &["Edit(./a)", "Edit(./b)"]), Some(&advice));
        assert!(
            text.ends_with("\nTo allow such calls without asking, pass Edit(./a) and Edit(./b).")
        );
        let text = question(&request("{}", &["Edit(./a)", "Edit(./b)"]), None);
        assert!(
            text.ends_with("give the server the allow rules 'Edit(./a)', 'Edit(./b)'."),
            "{text}"
        );
        assert!(!text.contains("--"), "{text}");
    }

    #[test]
    fn long_arguments_are_cut() {
        let text = question(&request(&"é".repeat(5_000), &[]), None);
        assert!(text.ends_with(" …"), "{text}");
        assert!(text.chars().count() < QUOTED_ARGUMENTS + 200);
    }

    /// The 2026 way: unanswered, the approver refuses and leaves the question for an
    /// `input_required` result; answered, the answer is the verdict and nothing is asked.
    #[test]
    fn a_stateless_client_is_asked_with_an_input_required_result() {
        let run = |future: BoxFuture<'_, Approval>| {
            tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
        };
        let elicitor = Arc::new(Elicitor::default());
        let asked = Arc::new(Stateless::new(true, None));
        let _guard = elicitor.register("mcp_1", Caller::Stateless(Arc::clone(&asked)));
        assert!(elicitor.can_answer(&request("{}", &[])));
        let verdict = run(elicitor.approve(&request("{}", &[])));
        assert!(matches!(verdict, Approval::Deny { .. }), "{verdict:?}");
        let result = serde_json::to_value(asked.asking().unwrap()).unwrap();
        assert_eq!(result["resultType"], "input_required");
        let question = &result["inputRequests"][APPROVAL_KEY];
        assert_eq!(question["method"], "elicitation/create");
        assert!(question["params"]["message"].as_str().unwrap().starts_with("Allow `write_file`"));
        assert!(asked.asking().is_none(), "asked once");

        for (action, allowed) in [("accept", true), ("decline", false), ("cancel", false)] {
            let responses = InputResponses::from([(
                APPROVAL_KEY.to_owned(),
                serde_json::json!({"action": action}),
            )]);
            let answered = Arc::new(Stateless::new(true, Some(&responses)));
            let _guard = elicitor.register("mcp_1", Caller::Stateless(Arc::clone(&answered)));
            let verdict = run(elicitor.approve(&request("{}", &[])));
            assert_eq!(verdict == Approval::AllowOnce, allowed, "{action}: {verdict:?}");
            assert!(answered.asking().is_none(), "{action}: asked again");
        }
        // A client that declared no elicitation in its request's `_meta` cannot be asked.
        let _guard =
            elicitor.register("mcp_1", Caller::Stateless(Arc::new(Stateless::new(false, None))));
        assert!(!elicitor.can_answer(&request("{}", &[])));
    }

    #[test]
    fn a_call_with_no_registered_client_cannot_be_asked() {
        let elicitor = Elicitor::default();
        assert!(!elicitor.can_answer(&request("{}", &[])));
    }
}
