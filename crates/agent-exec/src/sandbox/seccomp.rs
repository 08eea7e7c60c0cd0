//! The seccomp filter: system calls a sandboxed process may not make.
//!
//! The filter allows everything by default and answers the listed calls with `EPERM`, so a tool
//! prints "Operation not permitted" instead of dying from a signal. Programs are compiled once per
//! process (one with network, one without) and installed in the child by [`super::child`].

use std::{collections::BTreeMap, sync::OnceLock};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::SandboxError;

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;
#[cfg(target_arch = "riscv64")]
const ARCH: TargetArch = TargetArch::riscv64;

/// Calls denied under every restricted policy.
///
/// `ptrace` and `process_vm_*` would let a process read or steer another; `io_uring` performs
/// socket and file operations that seccomp cannot see; `setsid`/`setpgid` would let a process
/// leave its process group and survive the group kill on timeout.
const ALWAYS_DENIED: [libc::c_long; 9] = [
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_setsid,
    libc::SYS_setpgid,
    libc::SYS_kexec_load,
];

/// The compiled filter for `network` (`true` = sockets of every family allowed).
pub(crate) fn program(network: bool) -> Result<&'static BpfProgram, SandboxError> {
    static WITH_NETWORK: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    static WITHOUT_NETWORK: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    let cell = if network { &WITH_NETWORK } else { &WITHOUT_NETWORK };
    cell.get_or_init(|| compile(network).map_err(|err| err.to_string()))
        .as_ref()
        .map_err(|err| SandboxError::Setup(format!("seccomp: {err}")))
}

fn compile(network: bool) -> Result<BpfProgram, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALWAYS_DENIED.iter().map(|&call| (call, Vec::new())).collect();
    if !network {
        // Only `AF_UNIX` sockets: pipes between local programs keep working, nothing else does.
        let not_unix = || {
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .and_then(|condition| SeccompRule::new(vec![condition]))
        };
        rules.insert(libc::SYS_socket, vec![not_unix()?]);
        rules.insert(libc::SYS_socketpair, vec![not_unix()?]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        ARCH,
    )?;
    filter.try_into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile() {
        assert!(program(false).is_ok_and(|p| !p.is_empty()));
        assert!(program(true).is_ok_and(|p| !p.is_empty()));
        // The network-off program carries the socket rules on top of the common ones.
        assert!(program(false).ok().map(Vec::len) > program(true).ok().map(Vec::len));
    }
}
