//! Every usage example of this crate, compiled into this test and run, so an example that stops
//! working fails `cargo test` instead of rotting. Each example checks its own outcome.

#[path = "../examples/approvals.rs"]
mod approvals;
#[path = "../examples/custom_tool.rs"]
mod custom_tool;
#[path = "../examples/events.rs"]
mod events;
#[path = "../examples/responses_continuation.rs"]
mod responses_continuation;

#[track_caller]
fn check(main: fn() -> Result<(), Box<dyn std::error::Error>>) {
    if let Err(err) = main() {
        panic!("the example failed: {err}");
    }
}

#[test]
fn custom_tool_beside_the_builtins() {
    check(custom_tool::main);
}

#[test]
fn events_of_the_whole_path() {
    check(events::main);
}

#[test]
fn responses_continue_across_prompts() {
    check(responses_continuation::main);
}

#[test]
fn a_front_end_answers_approvals() {
    check(approvals::main);
}
