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
/// leave its process group and survive the group kill on timeout; `open_by_handle_at` would let
/// root open a secret file by its inode, past the empty entry mounted over its name; kernel
/// modules and `bpf` would let root read kernel memory (and with it every file's page cache).
const ALWAYS_DENIED: [libc::c_long; 14] = [
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_setsid,
    libc::SYS_setpgid,
    libc::SYS_kexec_load,
    libc::SYS_open_by_handle_at,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
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
    let mut program: BpfProgram = filter.try_into()?;
    deny_x32(&mut program);
    Ok(program)
}

/// Denies every x32 system call. x32 shares `AUDIT_ARCH_X86_64` with the native ABI, so the
/// architecture check does not catch it, and its numbers (`nr | 0x4000_0000`) match none of the
/// rules above: on a kernel with x32 enabled, `socket` through x32 would pass. (32-bit i386 calls
/// fail the architecture check, which kills the process.)
///
/// seccompiler starts every program with a three-instruction architecture check and then loads
/// the call number itself, so three instructions inserted after the check change nothing else.
#[cfg(target_arch = "x86_64")]
fn deny_x32(program: &mut BpfProgram) {
    use seccompiler::sock_filter;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    // Classic BPF opcodes from <linux/filter.h>.
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    let load_nr = sock_filter { code: LD_W_ABS, jt: 0, jf: 0, k: 0 };
    let is_x32 = sock_filter { code: JGE_K, jt: 0, jf: 1, k: X32_SYSCALL_BIT };
    let deny =
        sock_filter { code: RET_K, jt: 0, jf: 0, k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32 };
    let at = program.len().min(3);
    program.splice(at..at, [load_nr, is_x32, deny]);
}

#[cfg(not(target_arch = "x86_64"))]
fn deny_x32(_program: &mut BpfProgram) {}

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
