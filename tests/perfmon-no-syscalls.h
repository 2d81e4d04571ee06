/* perfmon-no-syscalls.h: run code where any system call kills the process
 *
 * Used by the hot-path test and the benchmark to prove that enter/leave make
 * no system call: after forbid_system_calls() the kernel (seccomp) kills the
 * process on any system call but exit and exit_group.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int
forbid_system_calls (void)
{
  struct sock_filter filter[] = {
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 2, 0),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 1, 0),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {
    .len = sizeof filter / sizeof filter[0],
    .filter = filter,
  };

  if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -errno;
  if (prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
    return -errno;
  return 0;
}

/* Ends the process at once with @status. Sanitizer runtimes hook _exit()
 * and make system calls of their own there; this goes straight to the
 * kernel. */
G_GNUC_NORETURN static inline void
exit_without_runtime (int status)
{
  for (;;)
    syscall (SYS_exit_group, status);
}
