/* test-stack-capture.c: the native stack of another thread, taken while it runs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-test-tsan.h"
#include "perfmon-error.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-modules-private.h"
#include "perfmon-proc-stack-private.h"
#include "perfmon-stack-capture-private.h"

/* Long enough for a loaded test machine; a capture that works takes
 * microseconds. */
#define CAPTURE_TIMEOUT_MS 5000

/* The signal the capture uses (see perfmon-stack-capture.c). */
#define CAPTURE_SIGNAL (SIGRTMIN + 3)

typedef enum
{
  WORKER_SPIN,                 /* spins outside any dispatch, never dispatched */
  WORKER_SPIN_IN_DISPATCH,     /* spins inside the dispatch of "known-source" */
  WORKER_SPIN_AFTER_DISPATCH,  /* dispatched a source, then spins outside it */
  WORKER_SLEEP,                /* waits on a condition variable */
} WorkerMode;

typedef struct
{
  WorkerMode mode;
  gboolean   register_thread;
  gboolean   block_signal;
  guint      depth;       /* extra frames between the dispatch and the spin */

  GThread   *thread;
  gint       tid;         /* atomic */
  gint       ready;       /* atomic: spinning, or about to wait */
  gint       stop;        /* atomic */
  gint       unblock;     /* atomic: a sleeping worker unblocks the signal */
  GMutex     mutex;
  GCond      cond;
} Worker;

/* Exported from the test program (it is linked with -rdynamic) so that
 * dladdr() can name it. */
void spin_in_known_function (Worker *worker);

G_GNUC_NO_INLINE __attribute__ ((used)) void
spin_in_known_function (Worker *worker)
{
  g_atomic_int_set (&worker->ready, TRUE);
  while (!g_atomic_int_get (&worker->stop))
    {
      if (g_atomic_int_get (&worker->unblock))
        {
          sigset_t set;

          sigemptyset (&set);
          sigaddset (&set, CAPTURE_SIGNAL);
          g_assert_cmpint (pthread_sigmask (SIG_UNBLOCK, &set, NULL), ==, 0);
          g_mutex_lock (&worker->mutex);
          g_atomic_int_set (&worker->unblock, FALSE);
          g_cond_broadcast (&worker->cond);
          g_mutex_unlock (&worker->mutex);
        }
    }
}

static gint frames_kept;  /* atomic */

G_GNUC_NO_INLINE static void
recurse_then_spin (Worker *worker,
                   guint   depth)
{
  if (depth == 0)
    spin_in_known_function (worker);
  else
    recurse_then_spin (worker, depth - 1);
  /* Work after the call, so that the compiler keeps one frame per level
   * instead of turning the recursion into a loop. */
  g_atomic_int_inc (&frames_kept);
}

static gboolean
dispatch_spin (gpointer data)
{
  recurse_then_spin (data, ((Worker *) data)->depth);
  return G_SOURCE_REMOVE;
}

static gboolean
dispatch_nothing (gpointer data)
{
  return G_SOURCE_REMOVE;
}

/* Dispatches one idle source named @name on a context of the calling
 * thread. */
static void
dispatch_once (const char  *name,
               GSourceFunc  callback,
               gpointer     data)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GSource) source = g_idle_source_new ();

  g_source_set_name (source, name);
  g_source_set_callback (source, callback, data, NULL);
  g_source_attach (source, context);
  g_main_context_push_thread_default (context);
  g_assert_true (g_main_context_iteration (context, FALSE));
  g_main_context_pop_thread_default (context);
}

static void
sleep_until_stopped (Worker *worker)
{
  g_mutex_lock (&worker->mutex);
  g_atomic_int_set (&worker->ready, TRUE);
  while (!g_atomic_int_get (&worker->stop))
    {
      if (g_atomic_int_get (&worker->unblock))
        {
          sigset_t set;

          sigemptyset (&set);
          sigaddset (&set, CAPTURE_SIGNAL);
          g_assert_cmpint (pthread_sigmask (SIG_UNBLOCK, &set, NULL), ==, 0);
          g_atomic_int_set (&worker->unblock, FALSE);
          g_cond_broadcast (&worker->cond);
        }
      g_cond_wait (&worker->cond, &worker->mutex);
    }
  g_mutex_unlock (&worker->mutex);
}

static gpointer
worker_main (gpointer data)
{
  Worker *worker = data;

  if (worker->block_signal)
    {
      sigset_t set;

      sigemptyset (&set);
      sigaddset (&set, CAPTURE_SIGNAL);
      g_assert_cmpint (pthread_sigmask (SIG_BLOCK, &set, NULL), ==, 0);
    }
  if (worker->register_thread)
    _perfmon_stack_capture_register_thread ();
  g_atomic_int_set (&worker->tid, (gint) syscall (SYS_gettid));

  switch (worker->mode)
    {
    case WORKER_SPIN:
      recurse_then_spin (worker, worker->depth);
      break;
    case WORKER_SPIN_IN_DISPATCH:
      dispatch_once ("known-source", dispatch_spin, worker);
      break;
    case WORKER_SPIN_AFTER_DISPATCH:
      dispatch_once ("finished-source", dispatch_nothing, NULL);
      recurse_then_spin (worker, worker->depth);
      break;
    case WORKER_SLEEP:
      sleep_until_stopped (worker);
      break;
    default:
      g_assert_not_reached ();
    }

  return NULL;
}

static Worker *
worker_start (WorkerMode mode,
              gboolean   register_thread)
{
  Worker *worker = g_new0 (Worker, 1);

  worker->mode = mode;
  worker->register_thread = register_thread;
  return worker;
}

/* Starts @worker and waits until it spins or sleeps. */
static Worker *
worker_run (Worker *worker)
{
  g_mutex_init (&worker->mutex);
  g_cond_init (&worker->cond);
  worker->thread = g_thread_new ("stack-capture-worker", worker_main, worker);
  while (!g_atomic_int_get (&worker->ready))
    g_usleep (1000);
  return worker;
}

static void
worker_stop (Worker *worker)
{
  g_mutex_lock (&worker->mutex);
  g_atomic_int_set (&worker->stop, TRUE);
  g_cond_broadcast (&worker->cond);
  g_mutex_unlock (&worker->mutex);
  g_thread_join (worker->thread);
  g_mutex_clear (&worker->mutex);
  g_cond_clear (&worker->cond);
  g_free (worker);
}

static void
init_capture (void)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (_perfmon_stack_capture_init (&error));
  g_assert_no_error (error);
}

/* The name of the function that holds frame @index. Frames above the first
 * hold return addresses, which may be the first byte after the function
 * when its call is its last instruction; one byte back is the call. */
static char *
frame_function (const PerfmonCapturedStack *stack,
                guint                       index)
{
  return _perfmon_symbolize (index == 0 ? stack->pcs[0] : stack->pcs[index] - 1, NULL);
}

static gboolean
stack_has_function (const PerfmonCapturedStack *stack,
                    const char                 *function)
{
  for (guint i = 0; i < stack->n_frames; i++)
    {
      g_autofree char *name = frame_function (stack, i);

      if (g_strcmp0 (name, function) == 0)
        return TRUE;
    }
  return FALSE;
}

/* ThreadSanitizer's runtime does not run an asynchronous signal's handler
 * where it interrupted the thread: it queues the signal and runs the
 * handler at its own next safe point (an interceptor), from its own
 * frames. So the captured innermost frames are TSan's, and a thread that
 * spins in instrumented code may not run the handler within a capture's
 * timeout. The test cases that check those frames, or need the capture of
 * such a thread to succeed every time, skip there (doc/faults.md). */
static gboolean
skip_where_signals_are_deferred (void)
{
  if (!UNDER_TSAN)
    return FALSE;
  g_test_skip ("ThreadSanitizer runs signal handlers at its own safe points, not where the thread was");
  return TRUE;
}

static void
assert_stack_shape (const PerfmonCapturedStack *stack)
{
  g_assert_cmpuint (stack->n_frames, >, 2);
  g_assert_cmpuint (stack->n_frames, <=, PERFMON_STACK_CAPTURE_MAX_FRAMES);
  for (guint i = 0; i < stack->n_frames; i++)
    g_assert_cmpuint (stack->pcs[i], !=, 0);
  /* One stack, growing down: callers are at higher addresses. */
  for (guint i = 1; i < stack->n_frames; i++)
    g_assert_cmpuint (stack->sps[i], >=, stack->sps[i - 1]);
}

static void
capture_ok (Worker               *worker,
            PerfmonCapturedStack *stack)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (_perfmon_stack_capture (g_atomic_int_get (&worker->tid), CAPTURE_TIMEOUT_MS,
                                         stack, &error));
  g_assert_no_error (error);
}

static void
test_in_dispatch (void)
{
  Worker *worker;
  g_autofree PerfmonCapturedStack *stack = g_new0 (PerfmonCapturedStack, 1);
  g_autofree char *innermost = NULL;

  if (skip_where_signals_are_deferred ())
    return;
  worker = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));

  init_capture ();
  capture_ok (worker, stack);

  for (guint i = 0; i < stack->n_frames; i++)
    {
      g_autofree char *name = frame_function (stack, i);

      g_test_message ("#%u pc 0x%" G_GINT64_MODIFIER "x sp 0x%" G_GINT64_MODIFIER "x %s",
                      i, stack->pcs[i], stack->sps[i], name != NULL ? name : "?");
    }
  assert_stack_shape (stack);
  g_assert_false (stack->truncated);
  g_assert_true (stack->has_runnable_name);
  g_assert_cmpstr (stack->runnable_name, ==, "known-source");
  /* Interrupted in the spin loop itself, which calls nothing. */
  innermost = frame_function (stack, 0);
  g_assert_cmpstr (innermost, ==, "spin_in_known_function");
  g_assert_true (stack_has_function (stack, "spin_in_known_function"));
  /* The walk goes on through GLib's frames, in another object. */
  g_assert_true (stack_has_function (stack, "g_main_context_iteration"));

  worker_stop (worker);
}

static void
test_outside_dispatch (void)
{
  /* Registered, dispatched once, now outside any dispatch. */
  Worker *after = worker_run (worker_start (WORKER_SPIN_AFTER_DISPATCH, TRUE));
  /* Never dispatched, and not registered. */
  Worker *plain = worker_run (worker_start (WORKER_SPIN, FALSE));
  /* Inside a dispatch but not registered: the handler may not ask GLib. */
  Worker *unregistered = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, FALSE));
  PerfmonCapturedStack stack;

  init_capture ();

  capture_ok (after, &stack);
  assert_stack_shape (&stack);
  g_assert_false (stack.has_runnable_name);
  g_assert_cmpstr (stack.runnable_name, ==, "");
  g_assert_true (stack_has_function (&stack, "spin_in_known_function"));

  capture_ok (plain, &stack);
  assert_stack_shape (&stack);
  g_assert_false (stack.has_runnable_name);
  g_assert_cmpstr (stack.runnable_name, ==, "");

  capture_ok (unregistered, &stack);
  assert_stack_shape (&stack);
  g_assert_false (stack.has_runnable_name);
  g_assert_true (stack_has_function (&stack, "spin_in_known_function"));

  worker_stop (after);
  worker_stop (plain);
  worker_stop (unregistered);
}

static gpointer
record_tid (gpointer data)
{
  g_atomic_int_set ((gint *) data, (gint) syscall (SYS_gettid));
  return NULL;
}

static void
test_bad_targets (void)
{
  g_autoptr(GError) error = NULL;
  PerfmonCapturedStack stack;
  gint exited_tid = 0;

  init_capture ();

  g_assert_false (_perfmon_stack_capture ((gint64) syscall (SYS_gettid), CAPTURE_TIMEOUT_MS,
                                          &stack, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_assert_nonnull (strstr (error->message, "calling thread"));
  g_clear_error (&error);

  g_assert_false (_perfmon_stack_capture (0, CAPTURE_TIMEOUT_MS, &stack, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);

  g_thread_join (g_thread_new ("stack-capture-exits", record_tid, &exited_tid));
  g_assert_cmpint (exited_tid, >, 0);
  /* A short timeout: should the kernel still be tearing the thread down
   * when the signal is sent, the capture times out and says it exited. */
  g_assert_false (_perfmon_stack_capture (exited_tid, 1000, &stack, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
  g_assert_nonnull (strstr (error->message, "thread has exited"));
}

/* The real-time signals queued for the user (the first number of SigQ). */
static gint64
queued_signals (void)
{
  g_autofree char *status = NULL;
  const char *line;

  g_assert_true (g_file_get_contents ("/proc/self/status", &status, NULL, NULL));
  line = strstr (status, "\nSigQ:");
  g_assert_nonnull (line);
  return g_ascii_strtoll (line + strlen ("\nSigQ:"), NULL, 10);
}

static gpointer
capture_blocked_worker (gpointer data)
{
  PerfmonCapturedStack stack;

  capture_ok (data, &stack);
  assert_stack_shape (&stack);
  return NULL;
}

static void
test_blocked_signal (void)
{
  Worker *blocked;
  Worker *normal;
  Worker *sleeper;
  g_autoptr(GError) error = NULL;
  PerfmonCapturedStack stack;
  GThread *watchdog;
  gint64 start;
  gint64 queued;

  if (skip_where_signals_are_deferred ())
    return;
  /* A thread that blocks the signal but waits in a system call needs no
   * signal: its stack is read through /proc, and none is queued. */
  sleeper = worker_start (WORKER_SLEEP, TRUE);
  sleeper->block_signal = TRUE;
  worker_run (sleeper);
  init_capture ();
  queued = queued_signals ();
  for (guint i = 0; i < 5; i++)
    {
      capture_ok (sleeper, &stack);
      g_assert_cmpint (stack.method, ==, PERFMON_STACK_METHOD_PROC_SYSCALL);
      g_assert_true (stack_has_function (&stack, "g_cond_wait"));
    }
  g_assert_cmpint (queued_signals () - queued, <, 5);
  worker_stop (sleeper);

  /* A running thread that blocks the signal cannot be sampled. */
  blocked = worker_start (WORKER_SPIN, TRUE);
  normal = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  blocked->block_signal = TRUE;
  worker_run (blocked);

  start = g_get_monotonic_time ();
  g_assert_false (_perfmon_stack_capture (g_atomic_int_get (&blocked->tid), 100, &stack, &error));
  g_assert_cmpint (g_get_monotonic_time () - start, >=, 100 * 1000);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
  g_test_message ("blocked: %s", error->message);
  g_assert_nonnull (strstr (error->message, "wchan"));
  g_assert_nonnull (strstr (error->message, "state R"));
  g_assert_nonnull (strstr (error->message, "blocks the signal"));
  g_clear_error (&error);

  /* Further timeouts send no more signals while one is still pending:
   * each would stay queued against the user's RLIMIT_SIGPENDING. The count
   * is the user's, so other processes may add to it; a few at most. */
  queued = queued_signals ();
  for (guint i = 0; i < 5; i++)
    {
      g_assert_false (_perfmon_stack_capture (g_atomic_int_get (&blocked->tid), 20, &stack, &error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
      g_clear_error (&error);
    }
  g_assert_cmpint (queued_signals () - queued, <, 5);

  /* The abandoned request does not stop the next one. */
  capture_ok (normal, &stack);
  assert_stack_shape (&stack);
  g_assert_cmpstr (stack.runnable_name, ==, "known-source");

  /* A capture that waits while the thread unblocks the signal: the signal
   * left pending serves it (or, if the thread took it before the request
   * was up, a new one does). */
  watchdog = g_thread_new ("stack-capture-watchdog", capture_blocked_worker, blocked);
  g_usleep (100 * 1000);
  g_mutex_lock (&blocked->mutex);
  g_atomic_int_set (&blocked->unblock, TRUE);
  g_cond_broadcast (&blocked->cond);
  while (g_atomic_int_get (&blocked->unblock))
    g_cond_wait (&blocked->cond, &blocked->mutex);
  g_mutex_unlock (&blocked->mutex);
  g_thread_join (watchdog);

  capture_ok (normal, &stack);
  g_assert_cmpstr (stack.runnable_name, ==, "known-source");
  capture_ok (blocked, &stack);
  assert_stack_shape (&stack);
  g_assert_false (stack.has_runnable_name);

  worker_stop (blocked);
  worker_stop (normal);
}

static void
test_truncated (void)
{
  Worker *worker;
  PerfmonCapturedStack stack;
  g_autofree char *innermost = NULL;

  if (skip_where_signals_are_deferred ())
    return;
  worker = worker_start (WORKER_SPIN_IN_DISPATCH, TRUE);
  worker->depth = 2 * PERFMON_STACK_CAPTURE_MAX_FRAMES;
  worker_run (worker);
  init_capture ();

  capture_ok (worker, &stack);
  g_assert_cmpuint (stack.n_frames, ==, PERFMON_STACK_CAPTURE_MAX_FRAMES);
  g_assert_true (stack.truncated);
  assert_stack_shape (&stack);
  /* The innermost frames are kept, the outermost dropped. */
  innermost = frame_function (&stack, 0);
  g_assert_cmpstr (innermost, ==, "spin_in_known_function");
  g_assert_false (stack_has_function (&stack, "g_main_context_iteration"));
  g_assert_cmpstr (stack.runnable_name, ==, "known-source");

  worker_stop (worker);
}

static void
test_many (void)
{
  Worker *worker = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  PerfmonCapturedStack stack;

  init_capture ();

  for (guint i = 0; i < 200; i++)
    {
      memset (&stack, 0xaa, sizeof stack);
      capture_ok (worker, &stack);
      assert_stack_shape (&stack);
      g_assert_true (stack.has_runnable_name);
      g_assert_cmpstr (stack.runnable_name, ==, "known-source");
    }
  g_assert_true (stack_has_function (&stack, "spin_in_known_function"));

  worker_stop (worker);
}

typedef struct
{
  Worker *targets[2];
  guint   n_captures;
} Watchdog;

static gpointer
watchdog_main (gpointer data)
{
  Watchdog *watchdog = data;

  for (guint i = 0; i < watchdog->n_captures; i++)
    {
      PerfmonCapturedStack stack;

      capture_ok (watchdog->targets[i % 2], &stack);
      g_assert_cmpstr (stack.runnable_name, ==, "known-source");
    }
  return NULL;
}

/* Several watchdogs capture at once: the captures are serialised and each
 * gets the stack of the thread it asked for. */
static void
test_concurrent_requesters (void)
{
  Worker *first = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  Worker *second = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  Watchdog watchdog = { { first, second }, 50 };
  GThread *threads[4];

  init_capture ();

  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("stack-capture-watchdog", watchdog_main, &watchdog);
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);

  worker_stop (first);
  worker_stop (second);
}

typedef struct
{
  GMutex   mutex;
  GCond    cond;
  gboolean holding;
  gboolean release;
} LinkerLockHolder;

static int
hold_linker_lock (struct dl_phdr_info *info,
                  size_t               size,
                  void                *data)
{
  LinkerLockHolder *holder = data;

  g_mutex_lock (&holder->mutex);
  holder->holding = TRUE;
  g_cond_broadcast (&holder->cond);
  while (!holder->release)
    g_cond_wait (&holder->cond, &holder->mutex);
  g_mutex_unlock (&holder->mutex);
  /* Stop after the first object. */
  return 1;
}

static gpointer
linker_lock_holder_main (gpointer data)
{
  dl_iterate_phdr (hold_linker_lock, data);
  return NULL;
}

/* A handler that cannot finish: libunwind looks up unwind info with
 * dl_iterate_phdr(), whose lock another thread holds (in a callback that
 * waits). The requester gives up after its grace period instead of waiting
 * for the thread it watches; the slot stays busy, and captures fail at
 * once, until the handler finishes. */
static void
test_stuck_handler (void)
{
  /* Fresh threads: libunwind's per-thread cache has not seen their
   * frames, so it has to look them up. */
  Worker *stuck = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  Worker *other = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  LinkerLockHolder holder = { 0 };
  g_autoptr(GError) error = NULL;
  PerfmonCapturedStack stack;
  GThread *holder_thread;
  gboolean captured = FALSE;

  init_capture ();

  g_mutex_init (&holder.mutex);
  g_cond_init (&holder.cond);
  holder_thread = g_thread_new ("stack-capture-linker-lock", linker_lock_holder_main, &holder);
  g_mutex_lock (&holder.mutex);
  while (!holder.holding)
    g_cond_wait (&holder.cond, &holder.mutex);
  g_mutex_unlock (&holder.mutex);

  g_assert_false (_perfmon_stack_capture (g_atomic_int_get (&stuck->tid), 100, &stack, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
  g_test_message ("stuck: %s", error->message);
  g_assert_nonnull (strstr (error->message, "still unwinding"));
  g_clear_error (&error);

  g_assert_false (_perfmon_stack_capture (g_atomic_int_get (&other->tid), 100, &stack, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
  g_test_message ("busy: %s", error->message);
  g_assert_nonnull (strstr (error->message, "earlier capture"));
  g_clear_error (&error);

  g_mutex_lock (&holder.mutex);
  holder.release = TRUE;
  g_cond_broadcast (&holder.cond);
  g_mutex_unlock (&holder.mutex);
  g_thread_join (holder_thread);
  g_mutex_clear (&holder.mutex);
  g_cond_clear (&holder.cond);

  /* The stuck handler now finishes and frees the slot. */
  for (guint attempt = 0; attempt < 500 && !captured; attempt++)
    {
      captured = _perfmon_stack_capture (g_atomic_int_get (&other->tid), CAPTURE_TIMEOUT_MS,
                                         &stack, &error);
      if (!captured)
        {
          g_assert_nonnull (strstr (error->message, "earlier capture"));
          g_clear_error (&error);
          g_usleep (10 * 1000);
        }
    }
  g_assert_true (captured);
  g_assert_cmpstr (stack.runnable_name, ==, "known-source");
  capture_ok (stuck, &stack);
  g_assert_true (stack_has_function (&stack, "spin_in_known_function"));

  worker_stop (stuck);
  worker_stop (other);
}

static void
foreign_handler (int signo)
{
}

/* Both in a subprocess: each needs a process where init never ran.
 *
 * A program that already listens to SIGRTMIN+3 keeps its handler, and
 * perfmon takes the next free real-time signal: stacks of running threads
 * are still taken. */
static void
test_foreign_handler (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GError) error = NULL;
      struct sigaction action;
      Worker *worker;
      PerfmonCapturedStack stack;

      memset (&action, 0, sizeof action);
      action.sa_handler = foreign_handler;
      g_assert_cmpint (sigaction (CAPTURE_SIGNAL, &action, NULL), ==, 0);

      g_assert_true (_perfmon_stack_capture_init (&error));
      g_assert_no_error (error);
      g_assert_cmpint (_perfmon_stack_capture_get_signal (), >, CAPTURE_SIGNAL);
      /* Nothing was taken over. */
      g_assert_cmpint (sigaction (CAPTURE_SIGNAL, NULL, &action), ==, 0);
      g_assert_true (action.sa_handler == foreign_handler);

      worker = worker_run (worker_start (WORKER_SPIN, FALSE));
      capture_ok (worker, &stack);
      g_assert_cmpint (stack.method, ==, PERFMON_STACK_METHOD_SIGNAL);
      g_assert_true (stack_has_function (&stack, "spin_in_known_function"));
      worker_stop (worker);
      return;
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* Where perf sampling is allowed (kernel.perf_event_paranoid <= 2, no
 * seccomp filter), a running thread's stack is one perf sample: no signal
 * reaches it, even one it does not block. */
static void
test_perf_sample (void)
{
  Worker *worker;
  PerfmonCapturedStack stack;
  g_autofree char *innermost = NULL;
  sigset_t pending;

  _perfmon_perf_stack_set_allowed (TRUE);
  worker = worker_start (WORKER_SPIN, TRUE);
  worker->depth = 5;
  worker_run (worker);
  init_capture ();
  for (guint i = 0; i < 10; i++)
    {
      capture_ok (worker, &stack);
      if (stack.method != PERFMON_STACK_METHOD_PERF_SAMPLE)
        {
          g_assert_cmpint (stack.method, ==, PERFMON_STACK_METHOD_SIGNAL);
          g_test_skip (_perfmon_perf_stack_unavailable_reason ());
          break;
        }
      assert_stack_shape (&stack);
      innermost = frame_function (&stack, 0);
      /* The sample may catch it in the clock it reads. */
      g_assert_true (stack_has_function (&stack, "spin_in_known_function"));
      g_clear_pointer (&innermost, g_free);
    }
  sigpending (&pending);
  g_assert_false (sigismember (&pending, CAPTURE_SIGNAL));
  worker_stop (worker);
  _perfmon_perf_stack_set_allowed (FALSE);
}

/* Every real-time signal from SIGRTMIN+3 up has a handler: init fails and
 * says so, and takes none over. */
static void
test_no_free_signal (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr(GError) error = NULL;
      struct sigaction action;

      memset (&action, 0, sizeof action);
      action.sa_handler = foreign_handler;
      for (int signo = CAPTURE_SIGNAL; signo <= SIGRTMAX; signo++)
        g_assert_cmpint (sigaction (signo, &action, NULL), ==, 0);

      g_assert_false (_perfmon_stack_capture_init (&error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
      g_assert_nonnull (strstr (error->message, "already has a handler"));
      for (int signo = CAPTURE_SIGNAL; signo <= SIGRTMAX; signo++)
        {
          g_assert_cmpint (sigaction (signo, NULL, &action), ==, 0);
          g_assert_true (action.sa_handler == foreign_handler);
        }
      return;
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

static void
test_not_initialized (void)
{
  if (g_test_subprocess ())
    {
      Worker *worker = worker_run (worker_start (WORKER_SPIN, FALSE));
      g_autoptr(GError) error = NULL;
      PerfmonCapturedStack stack;

      g_assert_false (_perfmon_stack_capture (g_atomic_int_get (&worker->tid), 100, &stack, &error));
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE);
      g_assert_nonnull (strstr (error->message, "not installed"));
      g_clear_error (&error);

      /* Idempotent. */
      init_capture ();
      init_capture ();
      capture_ok (worker, &stack);
      worker_stop (worker);
      return;
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

/* A watchdog that looks again and again at what a thread dispatches reads
 * the name only when its address moved: the main thread's directly, any
 * other's through the kernel. */
static void
test_runnable_name_if_moved (void)
{
  static const char name_a[] = "[test] first";
  static const char name_b[] = "[test] second";
  gint64 tid = (gint64) syscall (SYS_gettid);
  PerfmonCapturedStack stack;
  guint64 address = 0;
  Worker *worker;

  g_assert_cmpint (tid, ==, getpid ());
  init_capture ();
  _perfmon_stack_capture_register_thread ();

  _perfmon_set_dispatch_name (name_a);
  g_assert_true (_perfmon_stack_capture_runnable_name_if_moved (tid, &address, &stack));
  g_assert_true (stack.has_runnable_name);
  g_assert_cmpstr (stack.runnable_name, ==, name_a);
  g_assert_cmpuint (address, ==, (guint64) (uintptr_t) name_a);

  /* Unmoved: nothing read, nothing written. */
  g_strlcpy (stack.runnable_name, "untouched", sizeof stack.runnable_name);
  g_assert_false (_perfmon_stack_capture_runnable_name_if_moved (tid, &address, &stack));
  g_assert_cmpstr (stack.runnable_name, ==, "untouched");

  _perfmon_set_dispatch_name (name_b);
  g_assert_true (_perfmon_stack_capture_runnable_name_if_moved (tid, &address, &stack));
  g_assert_cmpstr (stack.runnable_name, ==, name_b);
  g_assert_cmpuint (address, ==, (guint64) (uintptr_t) name_b);

  /* No name of perfmon's: GLib's (none here), read every time. */
  _perfmon_set_dispatch_name (NULL);
  g_assert_true (_perfmon_stack_capture_runnable_name_if_moved (tid, &address, &stack));
  g_assert_false (stack.has_runnable_name);
  g_assert_cmpuint (address, ==, 0);
  g_assert_true (_perfmon_stack_capture_runnable_name_if_moved (tid, &address, &stack));

  /* Another thread: GLib's name of its dispatch, through the kernel. */
  worker = worker_run (worker_start (WORKER_SPIN_IN_DISPATCH, TRUE));
  address = 0;
  g_assert_true (_perfmon_stack_capture_runnable_name_if_moved (g_atomic_int_get (&worker->tid), &address, &stack));
  g_assert_true (stack.has_runnable_name);
  g_assert_cmpstr (stack.runnable_name, ==, "known-source");
  g_assert_cmpuint (address, ==, 0);
  worker_stop (worker);

  /* A thread that is not registered has no name. */
  address = 1;
  g_assert_true (_perfmon_stack_capture_runnable_name_if_moved (G_MAXINT32, &address, &stack));
  g_assert_false (stack.has_runnable_name);
  g_assert_cmpuint (address, ==, 0);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  /* Most of these tests are of the signal, which a running thread gets
   * only where perf sampling cannot be used. */
  _perfmon_perf_stack_set_allowed (FALSE);

  g_test_add_func ("/stack-capture/perf-sample", test_perf_sample);
  g_test_add_func ("/stack-capture/foreign-handler", test_foreign_handler);
  g_test_add_func ("/stack-capture/no-free-signal", test_no_free_signal);
  g_test_add_func ("/stack-capture/not-initialized", test_not_initialized);
  g_test_add_func ("/stack-capture/in-dispatch", test_in_dispatch);
  g_test_add_func ("/stack-capture/outside-dispatch", test_outside_dispatch);
  g_test_add_func ("/stack-capture/bad-targets", test_bad_targets);
  g_test_add_func ("/stack-capture/blocked-signal", test_blocked_signal);
  g_test_add_func ("/stack-capture/truncated", test_truncated);
  g_test_add_func ("/stack-capture/stuck-handler", test_stuck_handler);
  g_test_add_func ("/stack-capture/runnable-name-if-moved", test_runnable_name_if_moved);
  g_test_add_func ("/stack-capture/many", test_many);
  g_test_add_func ("/stack-capture/concurrent-requesters", test_concurrent_requesters);

  return g_test_run ();
}
