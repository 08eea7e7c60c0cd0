//! Test tools, approvers and a fixture that builds an executor over a temporary workspace.

use std::{
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use agent_core::{
    Access, BoxFuture, CancellationToken, Effects, ToolCall, ToolContext, ToolError, ToolErrorKind,
    ToolOutput, Typed, TypedTool,
};
use agent_exec::{
    Approval, ApprovalRequest, Approver, Executor, ExecutorConfig, Outcome, PermissionMode,
    PolicyBuilder, Registry, RuleAction, Workspace,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// Input of the text tools.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct TextInput {
    /// The text.
    pub(crate) text: String,
}

/// Returns its text upper-cased.
pub(crate) struct Uppercase;

impl TypedTool for Uppercase {
    type Input = TextInput;
    const NAME: &'static str = "uppercase";
    fn description(&self) -> String {
        "Returns the text in upper case.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    fn aliases(&self) -> Vec<String> {
        vec!["shout".to_owned()]
    }
    async fn run(&self, input: TextInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text.to_uppercase()))
    }
}

/// Returns its text unchanged.
pub(crate) struct Echo;

impl TypedTool for Echo {
    type Input = TextInput;
    const NAME: &'static str = "echo";
    fn description(&self) -> String {
        "Returns the text.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: TextInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.text))
    }
}

/// Input of the sleeping tools.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct SleepInput {
    /// How long to sleep, in milliseconds.
    pub(crate) ms: u64,
}

/// Tracks how many calls run at once, and the most that ever did.
#[derive(Default)]
pub(crate) struct Overlap {
    now: AtomicUsize,
    pub(crate) max: AtomicUsize,
    /// `start <call id>` and `end <call id>` in the order they happened; one log can be shared by
    /// several sleepers, so an order across reads and writes can be asserted.
    pub(crate) order: Arc<Mutex<Vec<String>>>,
}

impl Overlap {
    /// An overlap counter of its own that writes into the shared `order` log.
    pub(crate) fn logging_to(order: &Arc<Mutex<Vec<String>>>) -> Self {
        Self { order: Arc::clone(order), ..Self::default() }
    }
}

/// Sleeps (honouring cancellation); read-only or writing depending on `writes`.
pub(crate) struct Sleeper {
    pub(crate) name: &'static str,
    pub(crate) writes: bool,
    pub(crate) overlap: Arc<Overlap>,
}

/// A `Tool` for a sleeper, registered under a runtime name.
pub(crate) struct SleeperTool {
    spec: agent_core::ToolSpec,
    inner: Sleeper,
}

impl SleeperTool {
    pub(crate) fn new(inner: Sleeper) -> Self {
        let effects = if inner.writes { Effects::WRITES_FILES } else { Effects::READ_ONLY };
        let spec = agent_core::ToolSpec {
            name: inner.name.to_owned(),
            description: "Sleeps.".to_owned(),
            parameters: agent_core::schema::plain_schema_for::<SleepInput>(),
            strict: false,
            aliases: Vec::new(),
            effects,
            rule_name: "Sleep".to_owned(),
            text_input: None,
            shape: agent_core::ToolShape::Function,
        };
        Self { spec, inner }
    }
}

impl agent_core::Tool for SleeperTool {
    fn spec(&self) -> &agent_core::ToolSpec {
        &self.spec
    }
    fn prepare(
        &self,
        arguments: &str,
    ) -> Result<agent_core::PreparedCall, agent_core::schema::ArgsError> {
        let input: SleepInput = agent_core::schema::parse_args(arguments)?;
        Ok(agent_core::PreparedCall::new(input, Vec::new()))
    }
    fn run<'a>(
        &'a self,
        call: agent_core::PreparedCall,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ms = call.into_input::<SleepInput>().map_or(0, |input| input.ms);
            let overlap = &self.inner.overlap;
            let now = overlap.now.fetch_add(1, Ordering::SeqCst) + 1;
            overlap.max.fetch_max(now, Ordering::SeqCst);
            overlap.order.lock().unwrap().push(format!("start {}", ctx.call_id));
            let res = tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(ToolOutput::text(format!("slept {ms}ms"))),
                () = ctx.cancel.cancelled() => Err(ToolError::new(ToolErrorKind::Cancelled, "stopped")),
            };
            overlap.order.lock().unwrap().push(format!("end {}", ctx.call_id));
            overlap.now.fetch_sub(1, Ordering::SeqCst);
            res
        })
    }
}

/// Input with no fields.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct NoInput {}

/// Panics when run.
pub(crate) struct Panicker;

impl TypedTool for Panicker {
    type Input = NoInput;
    const NAME: &'static str = "panicker";
    fn description(&self) -> String {
        "Panics.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, _input: NoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("index out of bounds: the len is 0 but the index is 3")
    }
}

/// Ignores its cancellation token and sleeps for a minute.
pub(crate) struct Stubborn;

impl TypedTool for Stubborn {
    type Input = NoInput;
    const NAME: &'static str = "stubborn";
    fn description(&self) -> String {
        "Never stops on time.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, _input: NoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ToolOutput::text("finally"))
    }
}

/// Input of the big printer.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct BigInput {
    /// How many lines to print.
    pub(crate) lines: usize,
    /// The length of each line.
    pub(crate) width: usize,
}

/// Prints `lines` numbered lines of `width` characters.
pub(crate) struct BigPrinter;

impl TypedTool for BigPrinter {
    type Input = BigInput;
    const NAME: &'static str = "big_printer";
    fn description(&self) -> String {
        "Prints a lot.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    async fn run(&self, input: BigInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut text = String::with_capacity(input.lines * (input.width + 1));
        for idx in 1..=input.lines {
            let label = format!("{idx}:");
            text.push_str(&label);
            text.extend(std::iter::repeat_n('x', input.width.saturating_sub(label.len())));
            text.push('\n');
        }
        Ok(ToolOutput::text(text))
    }
}

/// Input of the path tools.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct PathInput {
    /// The path.
    pub(crate) path: String,
}

/// Reads a file through the workspace boundary.
pub(crate) struct ReadFile {
    pub(crate) workspace: Workspace,
}

impl TypedTool for ReadFile {
    type Input = PathInput;
    const NAME: &'static str = "read_file";
    fn description(&self) -> String {
        "Reads a file.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::READ_ONLY
    }
    fn rule_name(&self) -> String {
        "Read".to_owned()
    }
    fn access(&self, input: &PathInput) -> Vec<Access> {
        vec![Access::Read(input.path.clone())]
    }
    async fn run(&self, input: PathInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = self.workspace.resolve(&input.path)?;
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(ToolOutput::text(text)),
            Err(err) => Err(ToolError::new(ToolErrorKind::NotFound, err.to_string())),
        }
    }
}

/// Input of the write tool.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct WriteInput {
    /// The path.
    pub(crate) path: String,
    /// The content.
    pub(crate) content: String,
}

/// Writes a file (reports `Write` access; rule name `Edit`).
pub(crate) struct WriteFile;

impl TypedTool for WriteFile {
    type Input = WriteInput;
    const NAME: &'static str = "write_file";
    fn description(&self) -> String {
        "Writes a file.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::WRITES_FILES
    }
    fn rule_name(&self) -> String {
        "Edit".to_owned()
    }
    fn access(&self, input: &WriteInput) -> Vec<Access> {
        vec![Access::Write(input.path.clone())]
    }
    async fn run(&self, input: WriteInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("wrote {} bytes to {}", input.content.len(), input.path)))
    }
}

/// Input of the fake shell.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct BashInput {
    /// The command line.
    pub(crate) command: String,
    /// The directory to run in, relative to the workspace root, as the real bash tool takes it.
    pub(crate) workdir: Option<String>,
}

/// Pretends to run a command (reports `Command` access; rule name `Bash`).
pub(crate) struct FakeBash;

impl TypedTool for FakeBash {
    type Input = BashInput;
    const NAME: &'static str = "bash";
    fn description(&self) -> String {
        "Runs a command.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::RUNS_PROCESSES
    }
    fn access(&self, input: &BashInput) -> Vec<Access> {
        vec![Access::Command { line: input.command.clone(), workdir: input.workdir.clone() }]
    }
    async fn run(&self, input: BashInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ran {}", input.command)))
    }
}

/// Input of the fake web search.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct SearchInput {
    /// The domain to search.
    pub(crate) domain: String,
}

/// Pretends to search one domain (reports `Network` access).
pub(crate) struct WebSearch;

impl TypedTool for WebSearch {
    type Input = SearchInput;
    const NAME: &'static str = "web_search";
    fn description(&self) -> String {
        "Searches the web.".to_owned()
    }
    fn effects(&self) -> Effects {
        Effects::NETWORK
    }
    fn access(&self, input: &SearchInput) -> Vec<Access> {
        vec![Access::Network(Some(input.domain.clone()))]
    }
    async fn run(&self, input: SearchInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("results from {}", input.domain)))
    }
}

/// An approver that always gives the same answer and records what it was asked.
pub(crate) struct Scripted {
    pub(crate) answer: Approval,
    pub(crate) asked: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    pub(crate) fn new(answer: Approval) -> Arc<Self> {
        Arc::new(Self { answer, asked: Mutex::new(Vec::new()) })
    }
    pub(crate) fn count(&self) -> usize {
        self.asked.lock().unwrap().len()
    }
}

impl Approver for Scripted {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

/// A temporary workspace with an executor over all test tools.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) session: tempfile::TempDir,
    pub(crate) exec: Executor,
}

/// Options for [`fixture`].
pub(crate) struct Setup<'a> {
    pub(crate) mode: PermissionMode,
    pub(crate) rules: &'a [(RuleAction, &'a str)],
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) config: fn(&mut ExecutorConfig),
}

impl Default for Setup<'_> {
    fn default() -> Self {
        Self { mode: PermissionMode::Default, rules: &[], approver: None, config: |_| {} }
    }
}

pub(crate) fn fixture(setup: Setup<'_>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let session = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n").unwrap();
    let workspace = Workspace::new(dir.path()).unwrap();
    let mut builder = PolicyBuilder::new(workspace, setup.mode);
    for (action, text) in setup.rules {
        builder.rule(*action, text, "test").unwrap();
    }
    let policy = builder.build();
    let mut registry = Registry::new();
    registry.register(Arc::new(Typed::new(Uppercase).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(Echo).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(Panicker).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(Stubborn).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(BigPrinter).unwrap())).unwrap();
    let reader = ReadFile { workspace: policy.workspace().clone() };
    registry.register(Arc::new(Typed::new(reader).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(WriteFile).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(FakeBash).unwrap())).unwrap();
    registry.register(Arc::new(Typed::new(WebSearch).unwrap())).unwrap();
    let mut config = ExecutorConfig::new("session-1");
    config.session_dir = Some(session.path().to_owned());
    config.default_timeout = Duration::from_secs(5);
    config.grace = Duration::from_millis(100);
    (setup.config)(&mut config);
    let mut exec = Executor::new(registry, policy, config);
    if let Some(approver) = setup.approver {
        exec = exec.with_approver(approver);
    }
    Fixture { dir, session, exec }
}

pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        call_id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
        item_id: None,
        shape: agent_core::CallShape::Function,
    }
}

impl Fixture {
    /// Runs one call with a fresh token.
    pub(crate) async fn run(&self, name: &str, arguments: &str) -> Outcome {
        self.exec.execute(&call("call_1", name, arguments), &CancellationToken::new()).await
    }

    /// The workspace root with temp paths replaced, for snapshots.
    pub(crate) fn redact(&self, text: &str) -> String {
        let root = self.exec.policy().workspace().root().display().to_string();
        let session = self.session.path().display().to_string();
        text.replace(&root, "<workspace>").replace(&session, "<session>")
    }

    pub(crate) fn root(&self) -> &Path {
        self.exec.policy().workspace().root()
    }
}
