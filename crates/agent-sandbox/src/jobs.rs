//! Background jobs: long-running processes a session starts and later reads, writes and stops.
//!
//! A [`Jobs`] table belongs to one session; the bash tool starts jobs in it, the job tool reads
//! and stops them, and the agent loop turns finished jobs into notices. Process truth comes from
//! the kernel: each job is its own process group under the session's sandbox, led by a supervisor
//! that is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so a daemonised grandchild is re-parented
//! to it instead of to init, and that kills the whole job if this process dies; a job has finished
//! only when no process of its group is left, and its status is the real wait status of its first
//! process (an exit code or a signal). Output goes to a ring buffer (1 MB by default) and, whole,
//! to a file. Ending the session ([`Jobs::shutdown`], or dropping the last handle) kills every job.
//! See `docs/jobs.md`.

#![allow(unsafe_code)]

mod job;
mod ring;

pub use self::job::signal_name;

use std::{
    collections::BTreeMap,
    fmt,
    path::PathBuf,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use self::job::Job;
use crate::{
    process::{self, ProcessSpec, SpawnError},
    sandbox::SandboxConfig,
};

/// How a session's jobs are kept.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Jobs running at once; one more is refused. Default 8.
    pub max_jobs: usize,
    /// Where whole outputs are written (`<dir>/<id>.log`); a fresh temp dir when `None`.
    pub dir: Option<PathBuf>,
    /// Output kept in memory per job, in bytes. Default 1 MB.
    pub buffer_bytes: usize,
    /// Between SIGTERM and SIGKILL when a job is killed or the session ends. Default 2 s.
    pub kill_grace: Duration,
    /// How long a read that has new output waits for the job to fall quiet before it returns:
    /// an interpreter echoes a line at once and answers a moment later, and both belong to the
    /// same read. Default 300 ms; the read's own wait still bounds it.
    pub quiet: Duration,
}

/// The default [`JobsConfig::quiet`].
pub const DEFAULT_QUIET: Duration = Duration::from_millis(300);

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            max_jobs: 8,
            dir: None,
            buffer_bytes: 1 << 20,
            kill_grace: Duration::from_secs(2),
            quiet: DEFAULT_QUIET,
        }
    }
}

/// How a job's first process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal, when one killed it.
    pub signal: Option<i32>,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit {code}"),
            (None, Some(signal)) => write!(f, "signal {}", signal_name(signal)),
            (None, None) => f.write_str("exit unknown"),
        }
    }
}

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Some process of its group is alive.
    Running,
    /// Every process of its group has exited.
    Finished(Exit),
}

/// What the table knows about one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job's id, unique in the session.
    pub id: u32,
    /// The command line as given.
    pub command: String,
    /// The process group id: the pid of the job's supervisor, which leads the group and lives as
    /// long as any process of the job.
    pub pid: u32,
    /// Whether it runs on a pseudo-terminal.
    pub tty: bool,
    /// Running or finished.
    pub state: JobState,
    /// Time since the start (until the end, once finished).
    pub runtime: Duration,
    /// The file holding the whole output.
    pub output_path: PathBuf,
    /// Bytes of output so far.
    pub output_bytes: u64,
}

impl JobInfo {
    /// One line: `3 running 12.0 s python3 -m http.server 8000`.
    pub fn line(&self) -> String {
        let state = match self.state {
            JobState::Running => "running".to_owned(),
            JobState::Finished(exit) => format!("finished ({exit})"),
        };
        format!("{} {state} {:.1} s `{}`", self.id, self.runtime.as_secs_f64(), self.command)
    }
}

/// New output of a job, as [`Jobs::read`] returns it.
#[derive(Debug, Clone)]
pub struct JobRead {
    /// The job, as of the end of the read.
    pub info: JobInfo,
    /// Output since the previous read (lossy UTF-8).
    pub text: String,
    /// Bytes since the previous read that the ring buffer had already dropped (they are in the
    /// output file).
    pub skipped: u64,
}

/// A finished job the model has not been told about, for the next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobNotice {
    /// The job.
    pub id: u32,
    /// Its command line.
    pub command: String,
    /// How it ended.
    pub exit: Exit,
    /// How long it ran.
    pub runtime: Duration,
    /// Its last lines of output.
    pub last_lines: String,
    /// The file holding the whole output.
    pub output_path: PathBuf,
    /// When the last process of its group was gone.
    pub finished_at: Instant,
}

impl JobNotice {
    /// The short text the model reads.
    pub fn text(&self) -> String {
        let mut text = format!(
            "[job {} finished: {} after {:.1} s] `{}`",
            self.id,
            self.exit,
            self.runtime.as_secs_f64(),
            self.command
        );
        if self.last_lines.is_empty() {
            text.push_str("\n(no output)");
        } else {
            text.push_str("\nlast lines:\n");
            text.push_str(&self.last_lines);
        }
        text.push_str(&format!("\nfull output: {}", self.output_path.display()));
        text
    }
}

/// What a headless run does with jobs still running when the model has answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndPolicy {
    /// Kill them (SIGTERM, SIGKILL after the grace period).
    #[default]
    Kill,
    /// Wait until they finish on their own.
    Wait,
}

/// How one job ended at the end of a run, for the final event.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct JobEnd {
    /// The job.
    pub id: u32,
    /// Its command line.
    pub command: String,
    /// `exit 0`, `signal SIGTERM`, …
    pub status: String,
}

/// Why a job operation failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The table is full.
    #[error("{} jobs are running, the most allowed at once; kill one first. Running:\n{}", running.len(), running.iter().map(JobInfo::line).collect::<Vec<_>>().join("\n"))]
    TooMany {
        /// The running jobs.
        running: Vec<JobInfo>,
    },
    /// No job has this id.
    #[error("no job {0}; the job list shows the ids")]
    NotFound(u32),
    /// The job's input is closed (it has finished).
    #[error("job {0} has finished; its input is closed")]
    InputClosed(u32),
    /// The job did not read its input within 5 s.
    #[error("job {0} is not reading its input (the write did not complete within 5 s)")]
    InputBlocked(u32),
    /// The process could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// A file or pipe failed.
    #[error("job i/o: {0}")]
    Io(std::io::Error),
}

/// A session's job table. Cheap to clone; every clone is the same table.
#[derive(Clone, Debug, Default)]
pub struct Jobs {
    table: Arc<Table>,
}

#[derive(Default)]
struct Table {
    config: JobsConfig,
    jobs: Mutex<BTreeMap<u32, Arc<Job>>>,
    /// The output directory when the configuration names none.
    temp: Mutex<Option<tempfile::TempDir>>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // The last handle is gone without a shutdown: nothing of the session may outlive it.
        for job in self.jobs.get_mut().unwrap_or_else(PoisonError::into_inner).values() {
            job.signal(libc::SIGKILL);
        }
    }
}

/// Makes this process a child subreaper, once.
fn become_subreaper() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if !DONE.swap(true, Ordering::SeqCst) {
        // SAFETY: plain prctl with integer arguments.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        process::SUBREAPER.store(rc == 0, Ordering::SeqCst);
    }
}

impl Jobs {
    /// An empty table.
    pub fn new(config: JobsConfig) -> Self {
        Self { table: Arc::new(Table { config, jobs: Mutex::default(), temp: Mutex::default() }) }
    }

    /// The configuration.
    pub fn config(&self) -> &JobsConfig {
        &self.table.config
    }

    /// Starts `spec` under `sandbox` as a job showing `command`. Needs a tokio runtime. Refused
    /// when [`JobsConfig::max_jobs`] jobs are running.
    pub fn start(
        &self,
        command: &str,
        spec: &ProcessSpec,
        sandbox: &SandboxConfig,
        tty: bool,
    ) -> Result<JobInfo, JobError> {
        become_subreaper();
        let dir = self.dir()?;
        let mut jobs = self.table.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let running: Vec<JobInfo> =
            jobs.values().filter(|job| job.ended().is_none()).map(|job| job.info()).collect();
        if running.len() >= self.table.config.max_jobs {
            return Err(JobError::TooMany { running });
        }
        let id = jobs.keys().next_back().map_or(1, |last| last + 1);
        let path = dir.join(format!("{id}.log"));
        let job = Job::start(
            id,
            command.to_owned(),
            spec,
            sandbox,
            tty,
            path,
            self.table.config.buffer_bytes,
        )?;
        let info = job.info();
        jobs.insert(id, job);
        Ok(info)
    }

    fn dir(&self) -> Result<PathBuf, JobError> {
        if let Some(dir) = &self.table.config.dir {
            std::fs::create_dir_all(dir).map_err(JobError::Io)?;
            return Ok(dir.clone());
        }
        let mut temp = self.table.temp.lock().unwrap_or_else(PoisonError::into_inner);
        if temp.is_none() {
            *temp = Some(
                tempfile::Builder::new().prefix("agent-jobs-").tempdir().map_err(JobError::Io)?,
            );
        }
        Ok(temp.as_ref().map(|dir| dir.path().to_path_buf()).unwrap_or_default())
    }

    fn job(&self, id: u32) -> Result<Arc<Job>, JobError> {
        let jobs = self.table.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        jobs.get(&id).cloned().ok_or(JobError::NotFound(id))
    }

    /// Every job, running or finished, by id.
    pub fn list(&self) -> Vec<JobInfo> {
        let jobs = self.table.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        jobs.values().map(|job| job.info()).collect()
    }

    /// The jobs still running (for a prompt, a status line or a compaction ledger).
    pub fn running(&self) -> Vec<JobInfo> {
        self.list().into_iter().filter(|info| info.state == JobState::Running).collect()
    }

    /// One job.
    pub fn info(&self, id: u32) -> Result<JobInfo, JobError> {
        Ok(self.job(id)?.info())
    }

    /// The output since the previous read, after waiting up to `wait` for some to arrive and
    /// then for the job to fall quiet for [`JobsConfig::quiet`] (or for the job to end), so that
    /// an answer that follows its echo comes in the same read. Reading a finished job's status
    /// tells the model how it ended, so no notice follows.
    pub async fn read(&self, id: u32, wait: Duration) -> Result<JobRead, JobError> {
        let job = self.job(id)?;
        let from = *job.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        job.wait_output(from, wait, self.table.config.quiet).await;
        // The state first: output read after it includes everything a finished job printed.
        let ended = job.ended().is_some();
        let (bytes, skipped, total) = job.output_since(from);
        *job.cursor.lock().unwrap_or_else(PoisonError::into_inner) = total;
        if ended {
            job.noticed.store(true, Ordering::SeqCst);
        }
        Ok(JobRead {
            info: job.info(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
            skipped,
        })
    }

    /// Writes `text` to the job's stdin (its terminal, for a tty job).
    pub async fn write(&self, id: u32, text: &str) -> Result<(), JobError> {
        self.job(id)?.write(text.as_bytes().to_vec()).await
    }

    /// Stops a job: SIGTERM to its group, SIGKILL after the grace period; returns it as ended.
    pub async fn kill(&self, id: u32) -> Result<JobInfo, JobError> {
        let job = self.job(id)?;
        stop(&[Arc::clone(&job)], self.table.config.kill_grace).await;
        job.noticed.store(true, Ordering::SeqCst);
        Ok(job.info())
    }

    /// Waits until job `id` has ended, at most `wait`; returns it.
    pub async fn wait(&self, id: u32, wait: Duration) -> Option<JobInfo> {
        let job = self.job(id).ok()?;
        job.wait_end(wait).await;
        Some(job.info())
    }

    /// Waits until no job runs, at most `wait`; returns the jobs still running.
    pub async fn wait_all(&self, wait: Duration) -> Vec<JobInfo> {
        let jobs: Vec<Arc<Job>> = self
            .table
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        let deadline = Instant::now() + wait;
        for job in jobs {
            job.wait_end(deadline.saturating_duration_since(Instant::now())).await;
        }
        self.running()
    }

    /// Ends the session's jobs: SIGTERM to every group, SIGKILL after the grace period, and waits
    /// until no process of any of them is left. Returns the jobs that were still running.
    pub async fn shutdown(&self) -> Vec<JobInfo> {
        let running: Vec<Arc<Job>> = {
            let jobs = self.table.jobs.lock().unwrap_or_else(PoisonError::into_inner);
            jobs.values().filter(|job| job.ended().is_none()).cloned().collect()
        };
        let infos = running.iter().map(|job| job.info()).collect();
        stop(&running, self.table.config.kill_grace).await;
        infos
    }

    /// Ends a run's jobs by `policy`: kills them, or waits for them (at most `wait`, then kills
    /// what is left). Returns how each job that was running ended.
    pub async fn end(&self, policy: EndPolicy, wait: Duration) -> Vec<JobEnd> {
        let running = self.running();
        if policy == EndPolicy::Wait {
            self.wait_all(wait).await;
        }
        self.shutdown().await;
        running
            .into_iter()
            .filter_map(|job| self.info(job.id).ok())
            .map(|info| JobEnd {
                id: info.id,
                status: match info.state {
                    JobState::Finished(exit) => exit.to_string(),
                    JobState::Running => "still running".to_owned(),
                },
                command: info.command,
            })
            .collect()
    }

    /// The notices of jobs that finished since the last call and whose end the model has not seen;
    /// each is returned once.
    pub fn take_notices(&self) -> Vec<JobNotice> {
        let jobs = self.table.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        jobs.values()
            .filter_map(|job| {
                let ended = job.ended()?;
                if job.noticed.swap(true, Ordering::SeqCst) {
                    return None;
                }
                Some(JobNotice {
                    id: job.id,
                    command: job.command.clone(),
                    exit: ended.exit,
                    runtime: ended.runtime,
                    last_lines: job.last_lines(10, 1500),
                    output_path: job.path.clone(),
                    finished_at: ended.at,
                })
            })
            .collect()
    }
}

/// SIGTERM to each job's group, SIGKILL to what is left after `grace`, then waits for the ends.
async fn stop(jobs: &[Arc<Job>], grace: Duration) {
    for job in jobs {
        job.signal(libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    for job in jobs {
        if job.wait_end(deadline.saturating_duration_since(Instant::now())).await.is_none() {
            job.signal(libc::SIGKILL);
        }
    }
    for job in jobs {
        job.signal(libc::SIGKILL);
        job.wait_end(Duration::from_secs(5)).await;
    }
}
