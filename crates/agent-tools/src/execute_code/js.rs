//! JavaScript in QuickJS: a fresh runtime per call, bounded by a memory limit and an interrupt
//! handler that stops the interpreter at the deadline or on cancellation.

use std::{cell::RefCell, rc::Rc, time::Instant};

use agent_core::CancellationToken;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Promise, Runtime, Value,
    promise::PromiseState,
};

use super::{CodeError, CodeErrorKind, CodeLimits, CodeResult};

/// Installs `console` on top of a native writer; kept in JS so formatting matches what people
/// expect from Node (strings raw, objects as JSON, errors as `Name: message`).
const PRELUDE: &str = r#"(() => {
  const write = globalThis.__agent_write;
  delete globalThis.__agent_write;
  const format = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof Error) return `${v.name}: ${v.message}`;
    if (typeof v === 'object' && v !== null) {
      try { return JSON.stringify(v); } catch (_) { return String(v); }
    }
    return String(v);
  };
  const make = (stream) => (...args) => write(stream, args.map(format).join(' ') + '\n');
  globalThis.console = Object.freeze({
    log: make(1), info: make(1), debug: make(1), error: make(2), warn: make(2),
  });
})();"#;

/// Stack the interpreter may use; below the 2 MiB of tokio's blocking threads, so deep recursion
/// raises a `RangeError` instead of overflowing the thread.
const MAX_STACK: usize = 1 << 20;

/// Runs `code` on a blocking thread (QuickJS is synchronous) and waits for it.
pub(super) async fn run(code: String, limits: CodeLimits, cancel: CancellationToken) -> CodeResult {
    let started = Instant::now();
    let task = tokio::task::spawn_blocking(move || eval(&code, &limits, &cancel));
    let mut result = task.await.unwrap_or_else(|err| CodeResult {
        error: Some(CodeError::new(
            CodeErrorKind::Internal,
            format!("the JavaScript engine failed: {err}"),
        )),
        ..CodeResult::default()
    });
    result.duration = started.elapsed();
    result
}

/// Captured console output, each stream kept to `max` bytes.
#[derive(Default)]
struct Console {
    stdout: String,
    stderr: String,
    max: usize,
    dropped: usize,
}

impl Console {
    fn write(&mut self, stream: i32, text: &str) {
        let buf = if stream == 2 { &mut self.stderr } else { &mut self.stdout };
        let room = self.max.saturating_sub(buf.len());
        if text.len() <= room {
            buf.push_str(text);
        } else {
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            buf.push_str(&text[..cut]);
            self.dropped += text.len() - cut;
        }
    }
}

fn eval(code: &str, limits: &CodeLimits, cancel: &CancellationToken) -> CodeResult {
    let internal = |err: rquickjs::Error| CodeResult {
        error: Some(CodeError::new(CodeErrorKind::Internal, format!("quickjs: {err}"))),
        ..CodeResult::default()
    };
    let runtime = match Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return internal(err),
    };
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(MAX_STACK);
    let deadline = Instant::now() + limits.timeout;
    let stop = cancel.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        Instant::now() >= deadline || stop.is_cancelled()
    })));
    let context = match Context::full(&runtime) {
        Ok(context) => context,
        Err(err) => return internal(err),
    };
    let console =
        Rc::new(RefCell::new(Console { max: limits.max_output_bytes, ..Console::default() }));

    let outcome = context.with(|ctx| -> Result<Option<serde_json::Value>, CodeError> {
        if let Err(err) = install_console(&ctx, console.clone()) {
            // The interrupt handler stops the prelude too: a call cancelled (or out of time)
            // before the user's code ran says so, rather than reporting a failed setup.
            if cancel.is_cancelled() || Instant::now() >= deadline {
                let interrupted = CaughtError::Error(rquickjs::Error::Unknown);
                return Err(classify(interrupted, limits, deadline, cancel));
            }
            return Err(err);
        }
        let value: Value<'_> =
            ctx.eval(code).catch(&ctx).map_err(|err| classify(err, limits, deadline, cancel))?;
        // Run queued jobs so `.then` callbacks and async functions finish, then unwrap a promise.
        // A job that queues another forever would never drain, so the deadline bounds this too.
        while ctx.execute_pending_job() {
            if Instant::now() >= deadline || cancel.is_cancelled() {
                let interrupted = CaughtError::Error(rquickjs::Error::Unknown);
                return Err(classify(interrupted, limits, deadline, cancel));
            }
        }
        let value = match value.as_promise() {
            Some(promise) => settled(&ctx, promise, limits, deadline, cancel)?,
            None => value,
        };
        Ok(to_json(&ctx, value))
    });
    let console = console.take();
    let mut stderr = console.stderr;
    if console.dropped > 0 {
        stderr.push_str(&format!("\n[{} bytes of console output dropped]\n", console.dropped));
    }
    match outcome {
        Ok(value) => CodeResult { stdout: console.stdout, stderr, value, ..CodeResult::default() },
        Err(error) => CodeResult {
            stdout: console.stdout,
            stderr,
            error: Some(error),
            ..CodeResult::default()
        },
    }
}

fn install_console(ctx: &Ctx<'_>, console: Rc<RefCell<Console>>) -> Result<(), CodeError> {
    let setup = || -> rquickjs::Result<()> {
        let write = Function::new(ctx.clone(), move |stream: i32, text: String| {
            console.borrow_mut().write(stream, &text);
        })?;
        ctx.globals().set("__agent_write", write)?;
        ctx.eval::<(), _>(PRELUDE)
    };
    setup().map_err(|err| CodeError::new(CodeErrorKind::Internal, format!("console setup: {err}")))
}

/// The value a settled promise resolved to, or its rejection as an error.
fn settled<'js>(
    ctx: &Ctx<'js>,
    promise: &Promise<'js>,
    limits: &CodeLimits,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<Value<'js>, CodeError> {
    match promise.state() {
        PromiseState::Pending => Ok(Value::new_undefined(ctx.clone())),
        PromiseState::Resolved | PromiseState::Rejected => match promise.result::<Value<'js>>() {
            Some(result) => {
                result.catch(ctx).map_err(|err| classify(err, limits, deadline, cancel))
            }
            None => Ok(Value::new_undefined(ctx.clone())),
        },
    }
}

/// The value as JSON; `undefined`, functions and objects JSON cannot express give `None`,
/// primitives JSON cannot express (BigInt) give their string form.
fn to_json<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Option<serde_json::Value> {
    if value.is_undefined() || value.is_function() {
        return None;
    }
    match ctx.json_stringify(value.clone()) {
        Ok(Some(text)) => text.to_string().ok().and_then(|text| serde_json::from_str(&text).ok()),
        Ok(None) => None,
        Err(_) => {
            let _ = ctx.catch();
            // BigInt and the like have a useful string form; an object JSON cannot express (a
            // cycle, nesting beyond the stack) has none.
            if value.is_object() { None } else { coerce(ctx, value).map(serde_json::Value::String) }
        }
    }
}

/// `String(value)`, if that does not throw.
fn coerce<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Option<String> {
    let coerced = <rquickjs::Coerced<String> as rquickjs::FromJs<'js>>::from_js(ctx, value);
    match coerced {
        Ok(text) => Some(text.0),
        Err(_) => {
            let _ = ctx.catch();
            None
        }
    }
}

/// Turns a caught QuickJS error into the error kind the model reads.
fn classify(
    err: CaughtError<'_>,
    limits: &CodeLimits,
    deadline: Instant,
    cancel: &CancellationToken,
) -> CodeError {
    let text = match &err {
        CaughtError::Exception(exception) => {
            let name = exception
                .as_object()
                .get::<_, String>("name")
                .unwrap_or_else(|_| "Error".to_owned());
            let message = exception.message().unwrap_or_default();
            match exception.stack().filter(|stack| !stack.trim().is_empty()) {
                Some(stack) => format!("{name}: {message}\n{}", stack.trim_end()),
                None => format!("{name}: {message}"),
            }
        }
        CaughtError::Value(value) => {
            format!(
                "uncaught {}",
                coerce(value.ctx(), value.clone()).unwrap_or_else(|| "value".to_owned())
            )
        }
        CaughtError::Error(err) => err.to_string(),
    };
    if cancel.is_cancelled() {
        return CodeError::new(CodeErrorKind::Cancelled, "the run was cancelled");
    }
    if Instant::now() >= deadline
        && (text.contains("interrupted")
            || matches!(err, CaughtError::Error(rquickjs::Error::Unknown)))
    {
        return CodeError::new(
            CodeErrorKind::Timeout,
            format!("execution exceeded {} ms and was terminated", limits.timeout.as_millis()),
        );
    }
    if text.contains("out of memory")
        || matches!(err, CaughtError::Error(rquickjs::Error::Allocation))
    {
        return CodeError::new(
            CodeErrorKind::MemoryLimit,
            format!("memory limit of {} MiB exceeded", limits.memory_bytes >> 20),
        );
    }
    if text.starts_with("SyntaxError") {
        return CodeError::new(CodeErrorKind::Syntax, text);
    }
    CodeError::new(CodeErrorKind::Exception, text)
}
