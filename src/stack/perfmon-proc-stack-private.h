/* perfmon-proc-stack-private.h: the stack of a thread blocked in a system call, without a signal
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-stack-capture-private.h"

G_BEGIN_DECLS

/* What the capture knows of a thread that registered
 * (_perfmon_stack_capture_register_thread()); all 0 for another. */
typedef struct
{
  guint64 thread_handle;           /* its pthread_self() */
  guint64 dispatch_name_address;   /* &_perfmon_current_dispatch_name there */
  /* GLib's record of the thread's dispatch (a GMainDispatch: gint depth,
   * then the GSource being dispatched), found by probing; 0 if not found. */
  guint64 glib_dispatch_address;
} PerfmonThreadAddresses;

typedef enum
{
  /* The thread is blocked in a system call and @out holds its stack. */
  PERFMON_PROC_STACK_TAKEN,
  /* The thread runs in user space (or is between system calls, or kept
   * leaving short system calls while its stack was read): no stack can be
   * read without stopping it. */
  PERFMON_PROC_STACK_RUNNING,
  /* No stack: the error says why (the thread exited, its
   * /proc/self/task/TID/syscall line is not understood, libunwind found
   * no frame). */
  PERFMON_PROC_STACK_FAILED,
  /* _perfmon_perf_stack_capture(): perf sampling cannot be used in this
   * process (not allowed, not there). */
  PERFMON_PROC_STACK_UNAVAILABLE,
  /* _perfmon_perf_stack_capture(): the thread did not run in user space
   * long enough for a sample (it was blocked meanwhile). */
  PERFMON_PROC_STACK_NOT_SAMPLED,
} PerfmonProcStackResult;

/* From any thread other than @tid: if thread @tid of this process is
 * blocked in a system call, unwinds its user-space stack from the PC and SP
 * that /proc/self/task/TID/syscall gives, reading the process's own memory
 * (process_vm_readv(), so a bad address ends the walk instead of crashing),
 * and checks afterwards that the thread did not run meanwhile (its
 * /proc/…/syscall line and its schedstat are unchanged), so that the stack
 * read is the one it is blocked on. The thread is not disturbed at all: no
 * signal, no ptrace.
 *
 * @thread: where the thread's runnable name is read (perfmon's dispatch
 * name, else the name of the GSource GLib dispatches), and its
 * pthread_self(), copied into @out.
 *
 * Fills @out (method PERFMON_STACK_METHOD_PROC_SYSCALL) on
 * PERFMON_PROC_STACK_TAKEN; sets @error only on PERFMON_PROC_STACK_FAILED.
 * Not async-signal-safe; not thread-safe (call it under the capture's
 * mutex). */
PerfmonProcStackResult _perfmon_proc_stack_capture (gint64                tid,
                                                    const PerfmonThreadAddresses *thread,
                                                    PerfmonCapturedStack *out,
                                                    GError              **error);

/* From any thread other than @tid: the stack of thread @tid while it runs
 * in user space, without a signal: one sample of a perf event on the
 * thread (task clock, user space only, perf_event_open() as any
 * unprivileged profiler of its own process may where
 * kernel.perf_event_paranoid is 2 or less), with its user registers and a
 * copy of its stack, which libunwind walks as above. The kernel takes the
 * sample in a timer interrupt that found the thread in user space: the
 * thread is not stopped, and no system call of it is interrupted.
 *
 * Waits at most @timeout_ms for the sample. PERFMON_PROC_STACK_UNAVAILABLE
 * if perf cannot be used (then for good: see
 * _perfmon_perf_stack_available()), _NOT_SAMPLED if no sample came in
 * time, _TAKEN with @out filled (method PERFMON_STACK_METHOD_PERF_SAMPLE),
 * _FAILED with @error. Same thread rules as _perfmon_proc_stack_capture(). */
PerfmonProcStackResult _perfmon_perf_stack_capture (gint64                tid,
                                                    guint                 timeout_ms,
                                                    const PerfmonThreadAddresses *thread,
                                                    PerfmonCapturedStack *out,
                                                    GError              **error);

/* From any thread: the name of what thread @thread dispatches now, read
 * from its memory without stopping it, into @out's has_runnable_name and
 * runnable_name (the rest of @out is untouched). */
void _perfmon_proc_stack_read_runnable_name (const PerfmonThreadAddresses *thread,
                                             PerfmonCapturedStack         *out);
/* getpid(), known once (it is a system call): any thread. */
pid_t   _perfmon_proc_stack_own_pid (void);

/* Its two steps, for a caller that looks again and again: the address of
 * perfmon's name of what @thread dispatches now (0 if none, or
 * unreadable), then the runnable name as above, perfmon's at
 * @name_address unless that is 0. */
guint64 _perfmon_proc_stack_read_dispatch_name_address (const PerfmonThreadAddresses *thread);
void    _perfmon_proc_stack_read_runnable_name_at      (const PerfmonThreadAddresses *thread,
                                                        guint64                       name_address,
                                                        PerfmonCapturedStack         *out);

/* Whether perf sampling was not refused yet in this process, and why it
 * was (NULL while it is available). */
gboolean    _perfmon_perf_stack_available         (void);
/* For tests of the signal: FALSE makes running threads get the signal. */
void        _perfmon_perf_stack_set_allowed       (gboolean allowed);
const char *_perfmon_perf_stack_unavailable_reason (void);

G_END_DECLS
