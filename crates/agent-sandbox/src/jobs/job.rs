//! One job: its process group, its output (ring buffer and file), its stdin and its end.

use std::{
    fs::File,
    io::{self, Read, Write},
    os::unix::{ffi::OsStrExt, fs::OpenOptionsExt, process::ExitStatusExt},
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex, PoisonError, atomic::AtomicBool},
    time::{Duration, Instant},
};

use tokio::sync::{oneshot, watch};

use super::{Exit, JobError, JobInfo, JobState, ring::Ring};
use crate::{
    process::{self, Group, Launch, ProcessSpec, Spawned},
    sandbox::SandboxConfig,
};

/// How a job ended, and when the last process of its group was gone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ended {
    pub(crate) exit: Exit,
    pub(crate) at: Instant,
    pub(crate) runtime: Duration,
}

/// A running or finished job.
pub(crate) struct Job {
    pub(crate) id: u32,
    pub(crate) command: String,
    pub(crate) tty: bool,
    pub(crate) pid: u32,
    pub(crate) path: PathBuf,
    started: Instant,
    group: Group,
    ring: Mutex<Ring>,
    /// Bytes written so far; changes wake readers waiting for output.
    written: watch::Sender<u64>,
    ended: watch::Sender<Option<Ended>>,
    stdin: Mutex<Option<File>>,
    /// The offset up to which the model has read the output.
    pub(crate) cursor: Mutex<u64>,
    /// Whether the model has seen how the job ended (a notice, a read or a kill).
    pub(crate) noticed: AtomicBool,
    /// The masks over secrets and the fresh temp dir, kept while the job runs.
    _keep: (Option<crate::sandbox::MaskDir>, Option<tempfile::TempDir>),
}

impl Job {
    /// Starts `spec` as job `id` under `sandbox`, writing its whole output to `path`.
    pub(crate) fn start(
        id: u32,
        command: String,
        spec: &ProcessSpec,
        sandbox: &SandboxConfig,
        tty: bool,
        path: PathBuf,
        ring_bytes: usize,
    ) -> Result<Arc<Job>, JobError> {
        let resolved = process::resolve(spec, sandbox).map_err(JobError::Io)?;
        let launch = Launch {
            rules: resolved.rules.as_ref(),
            read_only: resolved.read_only.as_deref(),
            hide: &resolved.hide,
            env: &resolved.env,
            cwd: &resolved.cwd,
        };
        // The file first: a failure here must not leave a process behind.
        let file = File::create(&path).map_err(JobError::Io)?;
        let (stdio, reader, writer) =
            if tty { terminal() } else { pipes() }.map_err(JobError::Io)?;
        let Spawned { child, group, masks, started } =
            process::spawn(spec, sandbox, &launch, stdio, process::Until::Everything)?;
        let (written, _) = watch::channel(0);
        let (ended, _) = watch::channel(None);
        let job = Arc::new(Job {
            id,
            command,
            tty,
            pid: child.id().unwrap_or(0),
            path,
            started,
            group,
            ring: Mutex::new(Ring::new(ring_bytes)),
            written,
            ended,
            stdin: Mutex::new(Some(writer)),
            cursor: Mutex::new(0),
            noticed: AtomicBool::new(false),
            _keep: (masks, resolved.temp),
        });
        let (eof_tx, eof_rx) = oneshot::channel();
        let pump = Arc::clone(&job);
        let thread = std::thread::Builder::new().name(format!("job-{id}")).spawn(move || {
            pump.pump(reader, file);
            let _ = eof_tx.send(());
        });
        if let Err(err) = thread {
            job.group.signal(libc::SIGKILL);
            return Err(JobError::Io(err));
        }
        tokio::spawn(Arc::clone(&job).watch(child, eof_rx));
        Ok(job)
    }

    /// Copies the output to the file and the ring until every writer is gone. A blocking thread
    /// per job: a pseudo-terminal master is not a pipe tokio can register, and a file write must
    /// not stall the runtime.
    fn pump(&self, mut reader: File, mut file: File) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let _ = file.write_all(&buf[..n]);
                    let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
                    ring.push(&buf[..n]);
                    self.written.send_replace(ring.total());
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                // EIO is how a terminal master reports that the last slave closed.
                Err(_) => break,
            }
        }
    }

    /// Waits for the leader, then for every process of the group, then for the output to drain.
    async fn watch(self: Arc<Self>, mut child: tokio::process::Child, eof: oneshot::Receiver<()>) {
        let status = child.wait().await;
        // The leader is gone; the job lasts while any process of its group does (a daemonised
        // grandchild, re-parented to this subreaper). Re-parented orphans are reaped here.
        while process::reap_group(self.group.pgid) || self.group.signal(0) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let at = Instant::now();
        // Every writer is gone, so the pump reaches EOF as soon as it has read what is left.
        let _ = tokio::time::timeout(Duration::from_secs(2), eof).await;
        self.stdin.lock().unwrap_or_else(PoisonError::into_inner).take();
        let exit = match status {
            Ok(status) => Exit { code: status.code(), signal: status.signal() },
            Err(_) => Exit { code: None, signal: None },
        };
        self.ended.send_replace(Some(Ended { exit, at, runtime: at - self.started }));
    }

    pub(crate) fn ended(&self) -> Option<Ended> {
        *self.ended.borrow()
    }

    pub(crate) fn info(&self) -> JobInfo {
        let ended = self.ended();
        JobInfo {
            id: self.id,
            command: self.command.clone(),
            pid: self.pid,
            tty: self.tty,
            state: ended.map_or(JobState::Running, |ended| JobState::Finished(ended.exit)),
            runtime: ended.map_or_else(|| self.started.elapsed(), |ended| ended.runtime),
            output_path: self.path.clone(),
            output_bytes: self.ring.lock().unwrap_or_else(PoisonError::into_inner).total(),
        }
    }

    /// The output from `from` on and the bytes already dropped from the ring after `from`.
    pub(crate) fn output_since(&self, from: u64) -> (Vec<u8>, u64, u64) {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let (bytes, skipped) = ring.since(from);
        (bytes, skipped, ring.total())
    }

    pub(crate) fn last_lines(&self, lines: usize, max_bytes: usize) -> String {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner).last_lines(lines, max_bytes)
    }

    /// Waits until output past `from` arrives and no more has come for `quiet`, the job ends, or
    /// `wait` passes.
    pub(crate) async fn wait_output(&self, from: u64, wait: Duration, quiet: Duration) {
        let mut written = self.written.subscribe();
        let mut ended = self.ended.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        while *written.borrow_and_update() <= from && ended.borrow_and_update().is_none() {
            tokio::select! {
                _ = written.changed() => {}
                _ = ended.changed() => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
        // Output has come: more may follow at once (an echo, then the answer), so the read waits
        // until the job has been quiet for a moment.
        while ended.borrow_and_update().is_none() {
            let until = (tokio::time::Instant::now() + quiet).min(deadline);
            tokio::select! {
                changed = written.changed() => if changed.is_err() { return },
                _ = ended.changed() => {}
                () = tokio::time::sleep_until(until) => return,
            }
        }
    }

    /// Waits until the job has ended, at most `wait`.
    pub(crate) async fn wait_end(&self, wait: Duration) -> Option<Ended> {
        let mut ended = self.ended.subscribe();
        let result = tokio::time::timeout(wait, ended.wait_for(Option::is_some)).await;
        result.ok().and_then(|ended| ended.ok().and_then(|ended| *ended))
    }

    /// Sends `signal` to the whole group.
    pub(crate) fn signal(&self, signal: i32) {
        if self.ended().is_none() {
            self.group.signal(signal);
        }
    }

    /// Writes `bytes` to the job's stdin (or terminal).
    pub(crate) async fn write(self: &Arc<Self>, bytes: Vec<u8>) -> Result<(), JobError> {
        let job = Arc::clone(self);
        // A blocking write: a job that does not read its input fills the pipe, and the runtime
        // must not wait for it. The caller bounds the wait.
        let write = tokio::task::spawn_blocking(move || {
            let mut stdin = job.stdin.lock().unwrap_or_else(PoisonError::into_inner);
            match stdin.as_mut() {
                Some(file) => file.write_all(&bytes).and_then(|()| file.flush()),
                None => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
            }
        });
        match tokio::time::timeout(Duration::from_secs(5), write).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(err))) if err.kind() == io::ErrorKind::BrokenPipe => {
                Err(JobError::InputClosed(self.id))
            }
            Ok(Ok(Err(err))) => Err(JobError::Io(err)),
            Ok(Err(_)) | Err(_) => Err(JobError::InputBlocked(self.id)),
        }
    }
}

/// stdin, stdout and stderr on pipes: the child's ends, the parent's read end and write end.
fn pipes() -> io::Result<([Stdio; 3], File, File)> {
    let (out_reader, out_writer) = io::pipe()?;
    let err_writer = out_writer.try_clone()?;
    let (in_reader, in_writer) = io::pipe()?;
    let stdio = [Stdio::from(in_reader), Stdio::from(out_writer), Stdio::from(err_writer)];
    Ok((
        stdio,
        File::from(std::os::fd::OwnedFd::from(out_reader)),
        File::from(std::os::fd::OwnedFd::from(in_writer)),
    ))
}

/// A pseudo-terminal: the slave for the child's three streams, the master to read and write.
///
/// The terminal is not the job's controlling terminal: that would need `setsid`, which would take
/// the job out of its process group (and which the sandbox forbids). Programs see a terminal on
/// their streams (`isatty`), which is what interactive interpreters and prompts look for.
fn terminal() -> io::Result<([Stdio; 3], File, File)> {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let name = ptsname(&master, Vec::new())?;
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(std::ffi::OsStr::from_bytes(name.as_bytes()))?;
    let stdio =
        [Stdio::from(slave.try_clone()?), Stdio::from(slave.try_clone()?), Stdio::from(slave)];
    let master = File::from(master);
    Ok((stdio, master.try_clone()?, master))
}

/// `SIGSEGV` for 11: the names a shell prints, for the signals a job meets.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}
