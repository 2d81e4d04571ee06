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
#include <glib.h>
#include <malloc.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Only exit and exit_group pass, and, if @allow_thread_cpu_clock,
 * clock_gettime (CLOCK_THREAD_CPUTIME_ID): the one system call a measure
 * makes by design, at its leave when it lasted 25 µs or more (which a
 * preemption of the test on a loaded machine can make any measure), and
 * at its enter when the last reading is 2 ms old. */
static inline int
forbid_system_calls (gboolean allow_thread_cpu_clock)
{
  struct sock_filter filter[] = {
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 5, 0),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 4, 0),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, allow_thread_cpu_clock ? __NR_clock_gettime : G_MAXUINT32, 0, 2),
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, args[0])),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, CLOCK_THREAD_CPUTIME_ID, 1, 0),
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

/* Runs @func (@data) where any system call kills the process, then ends
 * the process: exit status 0 if the heap is as it was, 3 if @func left
 * memory allocated, 77 if seccomp could not be set up; killed by SIGSYS
 * if @func made a system call. Call it in a child process (fork(), or
 * g_test_trap_subprocess() and then g_test_trap_assert_passed()). */
G_GNUC_NORETURN static inline void
run_without_system_calls_full (void   (*func) (gpointer data),
                               gpointer data,
                               gboolean allow_thread_cpu_clock)
{
  struct mallinfo2 before = mallinfo2 ();
  struct mallinfo2 after;

  if (forbid_system_calls (allow_thread_cpu_clock) != 0)
    exit_without_runtime (77);

  func (data);

  after = mallinfo2 ();
  exit_without_runtime (after.uordblks == before.uordblks && after.hblkhd == before.hblkhd ? 0 : 3);
}

G_GNUC_NORETURN static inline void
run_without_system_calls (void   (*func) (gpointer data),
                          gpointer data)
{
  run_without_system_calls_full (func, data, FALSE);
}
