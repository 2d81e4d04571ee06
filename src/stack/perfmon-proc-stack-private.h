/* perfmon-proc-stack-private.h: the stack of a thread blocked in a system call, without a signal
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-stack-capture-private.h"

G_BEGIN_DECLS

typedef enum
{
  /* The thread is blocked in a system call and @out holds its stack. */
  PERFMON_PROC_STACK_TAKEN,
  /* The thread runs in user space (or is between system calls): no stack
   * can be read without stopping it. */
  PERFMON_PROC_STACK_RUNNING,
  /* No stack: the error says why (the thread exited, it kept leaving its
   * system call while we unwound it, /proc/self/task/TID/syscall cannot be
   * read, libunwind found no frame). */
  PERFMON_PROC_STACK_FAILED,
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
 * @dispatch_name_address: the address of the thread's
 * _perfmon_current_dispatch_name (0 if unknown): its runnable name is read
 * from there. @thread_handle: its pthread_self(), copied into @out.
 *
 * Fills @out (method PERFMON_STACK_METHOD_PROC_SYSCALL) on
 * PERFMON_PROC_STACK_TAKEN; sets @error only on PERFMON_PROC_STACK_FAILED.
 * Not async-signal-safe; not thread-safe (call it under the capture's
 * mutex). */
PerfmonProcStackResult _perfmon_proc_stack_capture (gint64                tid,
                                                    guint64               dispatch_name_address,
                                                    guint64               thread_handle,
                                                    PerfmonCapturedStack *out,
                                                    GError              **error);

G_END_DECLS
