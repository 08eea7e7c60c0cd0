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

/// Which socket families a process may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sockets {
    /// Every family (`--network`).
    All,
    /// `AF_UNIX`, `AF_INET` and `AF_INET6`: for a process inside the session's private network
    /// namespace, where only `lo` exists, so IP reaches nothing but the session's own loopback.
    Loopback,
    /// `AF_UNIX` only: the network is off and no private namespace could be made.
    Unix,
}

/// The compiled filter for `sockets`.
pub(crate) fn program(sockets: Sockets) -> Result<&'static BpfProgram, SandboxError> {
    // A compile failure is kept too: it would fail the same way each time.
    static CELLS: [OnceLock<Result<BpfProgram, SandboxError>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let cell = &CELLS[sockets as usize];
    cell.get_or_init(|| {
        compile(sockets).map_err(|err| SandboxError::Setup(format!("seccomp: {err}")))
    })
    .as_ref()
    .map_err(SandboxError::clone)
}

fn compile(sockets: Sockets) -> Result<BpfProgram, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALWAYS_DENIED.iter().map(|&call| (call, Vec::new())).collect();
    let allowed: &[libc::c_int] = match sockets {
        Sockets::All => &[],
        Sockets::Loopback => &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6],
        // Only `AF_UNIX` sockets: pipes between local programs keep working, nothing else does.
        Sockets::Unix => &[libc::AF_UNIX],
    };
    if !allowed.is_empty() {
        // Denied when the family is none of the allowed ones (the conditions of a rule all hold).
        let other_family = |families: &[libc::c_int]| {
            let conditions = families
                .iter()
                .map(|&family| {
                    SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Ne,
                        family as u64,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            SeccompRule::new(conditions)
        };
        rules.insert(libc::SYS_socket, vec![other_family(allowed)?]);
        // Socket pairs are local by nature; only `AF_UNIX` makes them on Linux.
        rules.insert(libc::SYS_socketpair, vec![other_family(&[libc::AF_UNIX])?]);
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
        for sockets in [Sockets::All, Sockets::Loopback, Sockets::Unix] {
            assert!(program(sockets).is_ok_and(|p| !p.is_empty()));
        }
        // The network-off programs carry the socket rules on top of the common ones.
        assert!(
            program(Sockets::Unix).ok().map(Vec::len) > program(Sockets::All).ok().map(Vec::len)
        );
        assert!(
            program(Sockets::Loopback).ok().map(Vec::len)
                > program(Sockets::Unix).ok().map(Vec::len)
        );
    }
}
