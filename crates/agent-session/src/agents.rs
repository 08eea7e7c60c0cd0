//! The session's plan and child agents, as the binary wires them: the [`PlanBook`] in the session
//! folder, the `update_plan` and `task` tools, the definitions found in the project and the
//! config directory, and how the terminal and `--json` show them.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use agent_core::{ModelClient, Typed};
use agent_exec::{
    AgentBuilder,
    child::{
        ChildEvent, ChildObserver, ChildStart, Children, ChildrenConfig, ModelSource, Recorded,
    },
    plan::PlanBook,
};
use agent_tools::{Task, UpdatePlan};

use crate::{
    config::{ConfigFile, ModelSettings},
    settings::Settings,
    waiting::Waiting,
};

/// Where child events go: set by `exec --json` to print them; nobody by default.
pub type Relay = Arc<Mutex<Option<ChildObserver>>>;

/// What the session keeps of the plan and its children.
#[derive(Clone)]
pub struct Organizer {
    /// The plan the model keeps with `update_plan`, pinned into each turn.
    pub plan: Arc<PlanBook>,
    /// The child agents `task` starts, with their limits and tokens.
    pub children: Children,
    /// Where the children's events go (a front end sets it to show them).
    pub relay: Relay,
}

/// A child's model: the session's server, with the definition's model name when it gives one;
/// replaying a session, the recording of the child its recorded twin started.
struct CliModels {
    model: ModelSettings,
    waiting: Waiting,
    /// The recorded session's children, when a recording plays the parent.
    replay: Option<Recorded>,
}

impl ModelSource for CliModels {
    fn model(&self, start: &ChildStart<'_>) -> Option<Box<dyn ModelClient>> {
        if let Some(recorded) = &self.replay {
            // The definition's model plays no part: the recording is the model.
            if start.model.is_some() {
                return None;
            }
            let path = recorded.transcript_for(start.agent_id, start.request)?;
            let items = agent_exec::Transcript::read_items(&path).ok()?;
            let label = path.display().to_string();
            return Some(Box::new(agent_model::ReplayClient::new(&label, items)));
        }
        let mut settings = self.model.clone();
        if let Some(name) = start.model {
            name.clone_into(&mut settings.model);
        }
        crate::session::model_client(&settings, None, &self.waiting).ok()
    }

    fn unavailable(&self, start: &ChildStart<'_>) -> String {
        match &self.replay {
            Some(_) => format!(
                "the replayed recording holds no child of the call `{}` to play back",
                start.request.call_id
            ),
            None => "no model is available for the child".to_owned(),
        }
    }
}

/// The user's config directory, where `agents/` is looked for.
pub fn user_dir(settings: &Settings) -> Option<PathBuf> {
    let config = settings.options.config.clone().or_else(ConfigFile::default_path);
    config.as_deref().and_then(Path::parent).map(Path::to_path_buf)
}

/// The agent definitions a `task` call may name: the built-ins, the user's, the project's, and
/// the enabled plugins' (`plugin:agent`, after the others so none is replaced).
pub fn definitions(settings: &Settings) -> crate::Result<agent_skills::definition::Definitions> {
    let mut found =
        agent_skills::definition::discover(&settings.workspace()?, user_dir(settings).as_deref());
    let (plugins, refused) = settings.plugins.agents();
    for definition in plugins {
        if !found.found.iter().any(|d| d.name == definition.name) {
            found.found.push(definition);
        }
    }
    found.refused.extend(
        refused
            .into_iter()
            .map(|(path, why)| (path, agent_skills::definition::DefinitionError::Unreadable(why))),
    );
    Ok(found)
}

/// Adds the plan (pinned through compaction) to `builder`, and the two tools unless `[agents]
/// enabled = false` (on by default since the first request fits under 2,000 tokens with them).
pub fn wire(
    builder: AgentBuilder,
    settings: &Settings,
    session_dir: &Path,
    secrets: Vec<String>,
    waiting: &Waiting,
    replay: Option<&Path>,
) -> crate::Result<(AgentBuilder, Organizer)> {
    let plan = Arc::new(PlanBook::open(session_dir));
    let relay: Relay = Arc::default();
    let observer: ChildObserver = {
        let relay = relay.clone();
        Arc::new(move |event: &ChildEvent| {
            if let Ok(relay) = relay.lock()
                && let Some(observer) = relay.as_ref()
            {
                observer(event);
            }
        })
    };
    let definitions = definitions(settings)?.found;
    let config = ChildrenConfig {
        limits: settings.file.agents.limits(),
        definitions,
        // The plan is the parent's: a child keeps none of its own and cannot change the parent's.
        // The person is the parent's to ask: a child reports what it could not decide instead.
        withheld: vec!["update_plan".to_owned(), "ask_user".to_owned()],
        spawners: vec!["task".to_owned()],
        session_dir: Some(session_dir.to_path_buf()),
        secrets,
        observer: Some(observer),
    };
    // A replay plays each child from `children/` beside the recorded transcript.
    let replay = replay.map(|path| {
        let dir = path.parent().unwrap_or(Path::new(".")).join("children");
        Recorded::open(&dir)
    });
    let models = CliModels { model: settings.model.clone(), waiting: waiting.clone(), replay };
    let children = Children::new(Arc::new(models), config);
    let mut builder = builder.pinned(plan.clone());
    if settings.file.agents.enabled.unwrap_or(true) {
        builder = builder
            .tool(Arc::new(Typed::new(UpdatePlan::new(plan.clone()))?))
            .tool(Arc::new(Typed::new(Task::new(children.clone()))?));
    }
    Ok((builder, Organizer { plan, children, relay }))
}
