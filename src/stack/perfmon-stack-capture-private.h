/* perfmon-stack-capture-private.h: the native stack of another thread, taken while it runs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Frames kept per capture; deeper ones are dropped (the innermost are kept,
 * since that is where the thread is stuck). */
#define PERFMON_STACK_CAPTURE_MAX_FRAMES 128
/* Bytes of the runnable name kept, without the terminating NUL. */
#define PERFMON_RUNNABLE_NAME_MAX 127
/* How long the watchdog waits for a thread to answer the capture signal
 * before it reports why it got no stack. */
#define PERFMON_STACK_CAPTURE_TIMEOUT_MS 100

/* How a stack was taken (a hang report's "stackMethod" annotation). */
typedef enum
{
  /* The thread was blocked in a system call: unwound from the PC and SP of
   * /proc/self/task/TID/syscall, without disturbing it
   * (perfmon-proc-stack.c). */
  PERFMON_STACK_METHOD_PROC_SYSCALL = 1,
  /* The thread was running in user space: it was sent the capture signal
   * and unwound itself in the handler. */
  PERFMON_STACK_METHOD_SIGNAL = 2,
  /* The thread was running in user space: one perf sample of it (its user
   * registers and stack, copied by the kernel in a timer interrupt),
   * without a signal (perfmon-proc-stack.c). */
  PERFMON_STACK_METHOD_PERF_SAMPLE = 3,
} PerfmonStackMethod;

/* "proc-syscall", "perf-sample" or "signal". */
const char *_perfmon_stack_method_to_string (PerfmonStackMethod method);

typedef struct
{
  PerfmonStackMethod method;
  /* Only with PERFMON_STACK_METHOD_SIGNAL: the handler found that the
   * signal had ended a system call the thread entered after it was seen
   * running, with EINTR (the race the design leaves: see
   * perfmon-stack-capture.c). */
  gboolean interrupted_syscall;
  guint    n_frames;
  /* Innermost first. pcs[0] is the instruction where the thread was
   * interrupted; the others are return addresses (so they point just after
   * the call: symbolize pc - 1 to name the calling line). */
  guint64  pcs[PERFMON_STACK_CAPTURE_MAX_FRAMES];
  /* Each frame's stack pointer (libunwind's UNW_REG_SP). Non-decreasing
   * from innermost to outermost while the frames are on one stack; a frame
   * below a signal handler that ran on an alternate stack breaks that. */
  guint64  sps[PERFMON_STACK_CAPTURE_MAX_FRAMES];
  /* pthread_self() of the thread, read in the handler, or, through /proc,
   * recorded by _perfmon_stack_capture_register_thread() (0 for a thread
   * that did not call it): what Python calls the thread's ident (see
   * perfmon-python-stack.c). */
  guint64  thread_handle;
  /* The stack had more frames than fit: the outermost ones are missing. */
  gboolean truncated;
  /* The thread was inside a GSource dispatch. Only ever TRUE for a thread
   * that called _perfmon_stack_capture_register_thread(); through /proc,
   * only inside a dispatch perfmon's monitor measures (its group's name). */
  gboolean has_runnable_name;
  /* g_source_get_name (g_main_current_source ()) cut at
   * PERFMON_RUNNABLE_NAME_MAX bytes (maybe inside a UTF-8 character), "" if
   * the source has no name or has_runnable_name is FALSE. */
  char     runnable_name[PERFMON_RUNNABLE_NAME_MAX + 1];
} PerfmonCapturedStack;

/* Installs the capture's signal handler (SIGRTMIN + 3, or the first
 * real-time signal above it that has no handler) and sets libunwind up for
 * unwinding inside it. Once per process: later calls return TRUE at once;
 * any thread may call it. Fails, and installs nothing, only if every
 * real-time signal from SIGRTMIN + 3 up already has a handler. */
gboolean _perfmon_stack_capture_init (GError **error);

/* Lets captures of the calling thread name the GSource it dispatches.
 *
 * The signal handler may only ask GLib for the current source on a thread
 * where GLib has already allocated its per-thread dispatch record, or that
 * question would allocate inside the handler. This call makes sure the
 * record exists, outside any handler, and marks the thread. Cheap and
 * idempotent: one thread-local read after the first call. Call it on the
 * watched thread (in its first iteration, or from a source it dispatches)
 * before it can hang. Not async-signal-safe.
 *
 * The first call also records, for captures from another thread (through
 * /proc or perf), the thread's pthread_self() and where its runnable name
 * is: perfmon's dispatch name, and GLib's per-thread dispatch record, found
 * by dispatching one probe source on a private context (a few tens of µs,
 * once per thread). */
void     _perfmon_stack_capture_register_thread (void);

/* The real-time signal the capture uses, once _perfmon_stack_capture_init()
 * succeeded; 0 before. */
int      _perfmon_stack_capture_get_signal (void);

/* From any thread other than @tid: captures the native stack of thread @tid
 * (a kernel thread id, gettid()) of this process, which keeps running; the
 * rest of the process is not stopped. A thread blocked in a system call is
 * not disturbed: its stack is read through /proc (out->method
 * PERFMON_STACK_METHOD_PROC_SYSCALL). Only a thread seen running in user
 * space is sent the capture signal (PERFMON_STACK_METHOD_SIGNAL): then
 * this waits at most @timeout_ms for the thread to take the signal, then,
 * only if its handler is already unwinding, a short grace for it to
 * finish.
 *
 * Fills @out and returns TRUE, or returns FALSE with an error in the
 * PERFMON_ERROR domain: PERFMON_ERROR_INVALID_ARGUMENT for @tid being the
 * calling thread or no thread id at all, PERFMON_ERROR_STACK_UNAVAILABLE
 * otherwise, whose message says why: the thread has exited, or the signal
 * was not handled in time, with the thread's state and kernel wait channel
 * ("wchan") and whether it blocks the signal, or libunwind found no frame,
 * or _perfmon_stack_capture_init() was not called or failed.
 *
 * Captures are serialised process-wide. Not async-signal-safe. */
gboolean _perfmon_stack_capture (gint64                tid,
                                 guint                 timeout_ms,
                                 PerfmonCapturedStack *out,
                                 GError              **error);

/* From any thread: the runnable name of registered thread @tid, as a
 * capture would give it, read from the thread's memory without stopping it
 * and without its stack (for a hang whose stack cannot be taken): fills
 * @out's has_runnable_name and runnable_name only. FALSE if the thread is
 * not registered or dispatches nothing perfmon can name. */
gboolean _perfmon_stack_capture_runnable_name (gint64                tid,
                                               PerfmonCapturedStack *out);
/* The same for a caller that looks again and again: while perfmon's name
 * of the dispatch is still the one at *@name_address, reads only its
 * address (the main thread's without a system call), leaves @out
 * untouched and returns FALSE. Otherwise fills @out as above
 * (has_runnable_name FALSE if the thread is not registered or dispatches
 * nothing perfmon can name), sets *@name_address to the address of
 * perfmon's name (0 where the name is GLib's, or none) and returns TRUE.
 * The same address is the same name only while nothing freed it: see
 * _perfmon_monitor_get_reap_count(). */
gboolean _perfmon_stack_capture_runnable_name_if_moved (gint64                tid,
                                                        guint64              *name_address,
                                                        PerfmonCapturedStack *out);

G_END_DECLS
