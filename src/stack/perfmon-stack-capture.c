/* perfmon-stack-capture.c: the native stack of another thread, taken while it runs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* We only ever unwind threads of our own process: the local-only flavour of
 * the API is the one whose memory accessors read memory directly. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "perfmon-error.h"
#include "perfmon-futex-private.h"
#include "perfmon-loop-activity-private.h"
#include "perfmon-proc-stack-private.h"
#include "perfmon-stack-capture-private.h"

/* Design.
 *
 * Which way. A capture must not change what the thread sees. So a thread
 * blocked in a system call is read through /proc, and a thread running in
 * user space is sampled with perf, neither of which disturbs it (see
 * perfmon-proc-stack.c). The signal described below is what is left for a
 * running thread where perf_event_open() is refused or no sample found it
 * in user space (a thread in and out of short system calls, which /proc
 * never catches blocked long enough to read its stack); it is sent only to
 * a thread seen running at a few looks, and its handler says if it ended a
 * system call after all (interrupted_syscall).
 *
 * The watchdog sees that a thread has been busy too long and wants to know
 * where. Stopping the world (ptrace, SIGSTOP) would freeze the whole
 * process and needs privileges, so the thread is asked to look at itself:
 * the watchdog sends it a signal with tgkill(), and the handler, running on
 * the hung thread on top of whatever it was doing, unwinds from the
 * interrupted context that the kernel hands it (the ucontext) and copies
 * the name of the GSource being dispatched.
 *
 * Whatever the thread was doing may be half done: it may hold malloc's
 * arena lock, GLib's context lock, a stdio lock. So the handler does only
 * async-signal-safe work: no allocation, no lock, nothing from libc but
 * system calls. It reads memory, does lock-free atomics (the static
 * assertions below check they are lock-free, which is what makes them
 * usable in a handler), calls the three libunwind functions that
 * libunwind documents as safe in a signal handler for a local cursor
 * (unw_init_local2(), unw_get_reg(), unw_step()), and two GLib accessors
 * that only read (see "The runnable name").
 *
 * The request slot. One global slot serves one capture at a time (a GMutex
 * serialises requesters; there may be several watchdogs). Its word holds
 * the target tid and a state, changed only by atomic compare-and-swap so
 * that the tid check and the state change are one step:
 *
 *   IDLE --requester--> REQUESTED(tid) --handler on tid--> WRITING(tid)
 *        --handler--> DONE(tid) --requester copies the stack--> IDLE
 *
 *   REQUESTED --requester, deadline passed--> IDLE
 *   WRITING --requester, grace passed--> ABANDONED_WRITING --handler--> IDLE
 *
 * A handler claims only REQUESTED with its own tid. So a signal that
 * arrives late (the thread blocked it until after its requester gave up),
 * or that someone else sent (kill -RTMIN+3), finds nothing to claim and
 * returns: a late handler never writes into an abandoned request. And a
 * requester that gives up either withdraws the request before any handler
 * claimed it, or learns that a handler is writing and waits for it.
 *
 * The handler writes into the slot's own buffer, not into the caller's
 * PerfmonCapturedStack, and the requester copies it out once DONE. Waiting
 * for a WRITING handler is normally a matter of microseconds, but the
 * handler can be held up (see "Caveats": the dynamic linker's lock, or
 * the thread being stopped), and a watchdog that waits forever for the
 * thread it watches is no watchdog. With the buffer in the slot the
 * requester may give up after a grace period without the handler later
 * writing into memory the caller has freed; the slot then stays busy
 * (ABANDONED_WRITING) until that handler finishes and frees it, and
 * captures in the meantime fail at once with an error that says so.
 *
 * Waking the requester: the handler bumps a completion counter and calls
 * futex(FUTEX_WAKE) on it, a raw system call, which is async-signal-safe
 * where a GCond (a mutex) is not. The requester reads the counter before
 * it looks at the state and sleeps with FUTEX_WAIT only while the counter
 * still has that value, so a wake between the two cannot be lost.
 *
 * Unwinding: libunwind's local unwinder, from the signal's ucontext with
 * UNW_INIT_SIGNAL_FRAME (pcs[0] is the interrupted instruction, not a
 * return address, so it must not be backed up by one byte to find its
 * unwind info). What makes it signal-safe, checked against libunwind
 * 1.6.2's x86-64 sources:
 *
 * - No register-state cache: unw_set_caching_policy (UNW_CACHE_NONE),
 *   set once at init. With the default global cache, unw_step() holds a
 *   mutex on the cache while it looks up unwind info with
 *   dl_iterate_phdr(), which takes the dynamic linker's lock: a thread
 *   unwinding elsewhere holds cache then linker lock, our handler on a
 *   thread inside dlopen() holds linker then wants cache: deadlock. The
 *   per-thread cache would avoid the lock, but it is compiled in only with
 *   --enable-per-thread-cache, off by default and in Debian's 1.6.2 (its
 *   libunwind.so.8 has 16 bytes of TLS, not a cache); without it,
 *   UNW_CACHE_PER_THREAD silently means the global cache *without* its
 *   lock, and since the policy is process-wide every other libunwind user
 *   in the process would then race on it. Without a cache there is no
 *   shared state, and nothing goes stale when a plugin is unloaded and
 *   another mapped at its address (a cache would need unw_flush_cache()
 *   then). The price is looking every frame up again: here a capture of
 *   a dozen frames takes about 0.12 ms instead of 0.1 ms (the signal round
 *   trip dominates), one of 128 frames 1.5 ms instead of 0.3 ms, once per
 *   hang or jank sample. Without a cache, unw_set_cache_size() does not
 *   matter either.
 * - libunwind's own one-time setup (tdep_init(): a mutex, a pipe) runs in
 *   unw_set_caching_policy(), at init, not in the first handler. What it
 *   still locks while unwinding (its object pools, allocated with mmap())
 *   it locks with every signal blocked, so a handler never interrupts a
 *   thread holding one of those locks.
 * - Memory validation does not read /proc/self/maps: when libunwind
 *   validates an address (every unwind step in builds with conservative
 *   checks, the default, and always once it falls back to frame-pointer
 *   heuristics for code without unwind info) it asks the kernel, with
 *   mincore() and a one-byte write() from that address into a private
 *   pipe, both plain system calls. So a bogus frame pointer or return
 *   address ends the walk with an error instead of a SIGSEGV in the
 *   handler. /proc/self/maps is only read by unw_get_proc_name() and
 *   friends, which we never call in the handler: symbolization happens
 *   later, on the watchdog thread (_perfmon_symbolize()).
 * - .debug_frame loading (which opens and reads ELF files) is compiled in
 *   only on ARM and AArch64; x86-64 finds unwind info through
 *   dl_iterate_phdr() and the mapped .eh_frame_hdr.
 * - We walk with unw_step(), not unw_backtrace(), whose x86-64 fast path
 *   allocates a per-thread frame cache on first use.
 *
 * The signal. A real-time signal, because nobody else gives those a
 * meaning by convention, while SIGUSR1/2 and SIGPROF commonly have
 * handlers in applications and profilers. glibc keeps the first
 * real-time signals (32 and 33, for thread cancellation and setxid) for
 * itself and SIGRTMIN already starts above them, but the lowest ones left
 * are still what programs and libraries reach for first ("SIGRTMIN" for
 * POSIX timers, and LinuxThreads took the first three), so we take
 * SIGRTMIN + 3. If a handler is already installed there we take the next
 * real-time signal without one instead of stealing it (that code would
 * silently stop working), and fail only if none is left.
 * - SA_SIGINFO for the ucontext;
 * - SA_RESTART so that a read() or write() the thread entered after it
 *   was seen running resumes after the handler instead of failing with
 *   EINTR (poll() and waits with a timeout fail with EINTR regardless: the
 *   race the handler reports);
 * - SA_ONSTACK so that a thread with an alternate signal stack runs the
 *   handler there: a hung thread may be deep in a recursion near its stack
 *   limit, and the handler needs a few KiB (the cursor alone is 1 KiB,
 *   dwarf_step() a few more).
 * The mask blocks the asynchronous signals while the handler runs, so that
 * other handlers do not pile up on top of it, but not the synchronous ones
 * (SIGSEGV...): blocked, those would kill the process without giving a
 * crash reporter its chance.
 *
 * Signals left pending. A real-time signal sent to a thread that blocks it
 * stays queued, and queued real-time signals count against the user's
 * RLIMIT_SIGPENDING, which all of the user's processes share: a watchdog
 * that sent one more at every check of a thread that blocks the signal for
 * good would drain it. So we remember the threads whose capture timed out,
 * and before signalling one of them again we read in /proc whether our
 * signal is still pending there. If it is, we send none and wait for that
 * one: a handler serves whatever request stands for its thread, so it
 * claims the new request when the thread finally takes it.
 *
 * The runnable name. g_main_current_source() reads GLib's per-thread
 * dispatch record through a GPrivate (pthread_getspecific(), a lookup in
 * the thread descriptor: no lock, no allocation) and returns its source
 * field. But on a thread that never dispatched, or called
 * g_main_current_source() or g_main_depth(), the record does not exist
 * yet and the same call allocates it, which a handler must not do. Only
 * the thread itself can make it exist safely, so a thread opts in with
 * _perfmon_stack_capture_register_thread(), which creates the record and
 * sets a thread-local flag; the handler asks GLib only if the flag is set.
 * The source it returns is alive: GLib resets the record's source before it
 * drops the reference it holds during the dispatch. g_source_get_name()
 * only reads the field (its checks cannot fail for a source that is
 * referenced), and the name is copied with a bounded byte loop.
 *
 * Caveats.
 * - The dynamic linker: to find a frame's unwind info, libunwind calls
 *   dl_iterate_phdr(), which takes the dynamic linker's (recursive) list
 *   lock. If another thread holds it, the handler waits until that thread
 *   lets go; that thread is not stuck, so this is only a delay, unless it
 *   waits for something the interrupted thread holds (say, a malloc lock
 *   taken in a dl_iterate_phdr() callback): then the handler is stuck and
 *   the requester gives up after the grace period (see above). If the
 *   interrupted thread itself holds the lock, inside dlopen() or dlclose()
 *   while it updates the list of objects, the recursive lock lets the
 *   handler in and it may walk a list being changed: a frame may be
 *   missing, or, at worst, the handler reads a stale entry. Captures of a
 *   thread inside dlopen() are rare and the watchdog takes them anyway.
 * - A thread that blocks the signal, or sleeps uninterruptibly in the
 *   kernel (state D), cannot run the handler: after @timeout_ms the error
 *   reports the thread's state and kernel wait channel, the seed's "wchan"
 *   fallback. The signal stays pending; when the thread finally takes it,
 *   it serves the capture requested then, if any, or does nothing.
 * - A thread that renames its source (g_source_set_name()) from another
 *   thread while it is being captured may have its old name freed under
 *   the copy; the bounded copy then reads at most 127 stale bytes.
 */

/* How long a requester waits for a handler that has claimed its request
 * and is unwinding, beyond the caller's timeout. Unwinding 128 frames takes
 * a few milliseconds at most; a handler still writing after a second is
 * held up (see "Caveats"). */
#define STUCK_HANDLER_GRACE_MS 1000

typedef enum
{
  SLOT_IDLE = 0,
  SLOT_REQUESTED,
  SLOT_WRITING,
  SLOT_DONE,
  SLOT_ABANDONED_WRITING,
} SlotState;

/* The tid and the state in one word, so that a handler's claim checks both
 * in one compare-and-swap. */
#define SLOT_WORD(tid, state)  (((guint64) (guint32) (tid) << 32) | (guint64) (state))
#define SLOT_WORD_TID(word)    ((gint32) (guint32) ((word) >> 32))
#define SLOT_WORD_STATE(word)  ((SlotState) ((word) & 0xff))

G_STATIC_ASSERT (__atomic_always_lock_free (sizeof (guint64), 0));
G_STATIC_ASSERT (__atomic_always_lock_free (sizeof (guint32), 0));
/* On x86-64 libunwind's unw_context_t is the ucontext_t that the kernel
 * hands the handler, which is what lets us unwind from it directly. */
G_STATIC_ASSERT (sizeof (unw_context_t) == sizeof (ucontext_t));

static struct
{
  guint64              word;          /* atomic: SLOT_WORD (tid, state) */
  guint                completions;   /* atomic futex word, bumped by each handler */
  PerfmonCapturedStack stack;         /* written by the handler that claimed the slot */
  int                  unwind_error;  /* libunwind's code when no frame was read */
} slot;

static GMutex capture_mutex;          /* serialises requesters */
/* Under capture_mutex: tids whose capture timed out, so that may still have
 * our signal pending. Trimmed by forgetting all; a forgotten thread that
 * still blocks the signal gets at most one more. */
static GHashTable *tids_left_pending;
#define MAX_TIDS_LEFT_PENDING 256
static GMutex init_mutex;
static gint   installed;              /* atomic gboolean */
static int    capture_signal;         /* set before `installed` */

/* Set by the thread itself once GLib's dispatch record exists; read by the
 * handler on the same thread. Initial-exec: a dynamic TLS access may
 * allocate the thread's block on first use, which a handler must not. */
static __thread gboolean dispatch_record_ready __attribute__ ((tls_model ("initial-exec")));

/* The registered threads, for captures through /proc, which run on another
 * thread and cannot ask pthread_self() or read thread-locals there: each
 * one's pthread_self() and the address of its _perfmon_current_dispatch_name.
 * An entry is added at a thread's first _perfmon_stack_capture_register_thread()
 * and removed when it exits; past MAX_REGISTERED threads the oldest entry
 * gives way (that thread's /proc captures then have no runnable name and
 * no Python frames). */
#define MAX_REGISTERED 64
typedef struct
{
  gint64                 tid;
  PerfmonThreadAddresses addresses;
} RegisteredThread;
static GMutex registry_lock;
static RegisteredThread registry[MAX_REGISTERED];   /* under registry_lock */
static guint registry_next;                         /* under registry_lock */

static void
_perfmon_stack_capture_unregister_thread (gpointer data)
{
  gint64 tid = GPOINTER_TO_INT (data);

  g_mutex_lock (&registry_lock);
  for (guint i = 0; i < MAX_REGISTERED; i++)
    if (registry[i].tid == tid)
      memset (&registry[i], 0, sizeof registry[i]);
  g_mutex_unlock (&registry_lock);
}

static GPrivate registry_key = G_PRIVATE_INIT (_perfmon_stack_capture_unregister_thread);

static void _perfmon_stack_capture_add_to_registry (void);

/* The address of GLib's dispatch record of this thread, found by
 * _perfmon_stack_capture_register_thread(); 0 if not found. */
static __thread guint64 glib_dispatch_address __attribute__ ((tls_model ("initial-exec")));

/* Finding GLib's dispatch record. GLib keeps, per thread, a small record
 * of the GSource being dispatched (GMainDispatch: gint depth, GSource
 * *source), behind a pthread key of its own that it does not export. A
 * watchdog reading a blocked or sampled thread's runnable name needs its
 * address. So the thread looks for it once: inside the dispatch of a probe
 * source on a private context, it reads every pthread key's value for the
 * thread, and the record is the one value that points at {depth, probe}
 * (read with process_vm_readv(): other keys' values need not be
 * pointers). */
typedef struct
{
  guint64 address;
  guint   n_found;
} GlibDispatchProbe;

static gboolean
_perfmon_stack_capture_probe_dispatch (gpointer data)
{
  GlibDispatchProbe *probe = data;
  GSource *current = g_main_current_source ();
  gint depth = g_main_depth ();

  for (pthread_key_t key = 0; key < PTHREAD_KEYS_MAX; key++)
    {
      void *value = pthread_getspecific (key);
      struct { gint depth; GSource *source; } record;
      struct iovec local = { &record, sizeof record };
      struct iovec remote = { value, sizeof record };

      if (value == NULL ||
          process_vm_readv (getpid (), &local, 1, &remote, 1, 0) != (ssize_t) sizeof record)
        continue;
      if (record.depth == depth && record.source == current)
        {
          probe->address = (guint64) (uintptr_t) value;
          probe->n_found++;
        }
    }
  return G_SOURCE_REMOVE;
}

static guint64
_perfmon_stack_capture_find_glib_dispatch (void)
{
  GlibDispatchProbe probe = { 0, 0 };
  GMainContext *context = g_main_context_new ();
  GSource *source = g_idle_source_new ();

  g_source_set_callback (source, _perfmon_stack_capture_probe_dispatch, &probe, NULL);
  g_source_attach (source, context);
  g_source_unref (source);
  while (g_main_context_iteration (context, FALSE))
    ;
  g_main_context_unref (context);
  return probe.n_found == 1 ? probe.address : 0;
}

/* fork(): a capture, or a change to the registry, in progress on another
 * thread would leave its mutex held for ever in the child, where a new
 * watchdog needs them. */
static void
_perfmon_stack_capture_before_fork (void)
{
  g_mutex_lock (&capture_mutex);
  g_mutex_lock (&registry_lock);
}

static void
_perfmon_stack_capture_after_fork_in_parent (void)
{
  g_mutex_unlock (&registry_lock);
  g_mutex_unlock (&capture_mutex);
}

static void
_perfmon_stack_capture_after_fork_in_child (void)
{
  /* The parent's threads are not here; the forking thread is, with a new
   * tid. */
  memset (registry, 0, sizeof registry);
  g_mutex_unlock (&registry_lock);
  g_mutex_unlock (&capture_mutex);
  g_clear_pointer (&tids_left_pending, g_hash_table_unref);
  if (__atomic_load_n (&dispatch_record_ready, __ATOMIC_RELAXED))
    _perfmon_stack_capture_add_to_registry ();
}

/* The signal handler's parts. */

/* No no_sanitize_address needed: the reads of the interrupted stack, which
 * AddressSanitizer might find in a redzone, all happen inside libunwind,
 * which is not instrumented; this code only touches the cursor and the
 * slot. */
static void
_perfmon_stack_capture_unwind (PerfmonCapturedStack *stack,
                               int                  *unwind_error,
                               void                 *ucontext)
{
  unw_cursor_t cursor;
  int ret;

  ret = unw_init_local2 (&cursor, (unw_context_t *) ucontext, UNW_INIT_SIGNAL_FRAME);
  if (ret < 0)
    {
      *unwind_error = ret;
      return;
    }

  for (;;)
    {
      unw_word_t pc, sp;

      ret = unw_get_reg (&cursor, UNW_REG_IP, &pc);
      if (ret == 0)
        ret = unw_get_reg (&cursor, UNW_REG_SP, &sp);
      if (ret < 0)
        {
          *unwind_error = ret;
          return;
        }
      /* A zero return address is how the outermost frame ends the chain. */
      if (pc == 0)
        return;

      stack->pcs[stack->n_frames] = pc;
      stack->sps[stack->n_frames] = sp;
      stack->n_frames++;

      /* 0: no caller; < 0: the chain is broken (no unwind info, invalid
       * memory). Either way the frames so far are the stack we have. */
      ret = unw_step (&cursor);
      if (ret <= 0)
        {
          if (ret < 0)
            *unwind_error = ret;
          return;
        }
      if (stack->n_frames == PERFMON_STACK_CAPTURE_MAX_FRAMES)
        {
          stack->truncated = TRUE;
          return;
        }
    }
}

static void
_perfmon_stack_capture_copy_runnable_name (PerfmonCapturedStack *stack)
{
  GSource *source;
  const char *name;
  gsize length = 0;

  /* Without the flag, GLib's dispatch record may not exist and asking for
   * the current source would allocate it here. */
  if (!__atomic_load_n (&dispatch_record_ready, __ATOMIC_ACQUIRE))
    return;

  source = g_main_current_source ();
  if (source == NULL)
    return;

  stack->has_runnable_name = TRUE;
  /* With automatic groups on, the dispatch's group name says more (a
   * callback's symbol, a Python callable) than the source's own. */
  name = _perfmon_current_dispatch_name;
  if (name == NULL)
    name = g_source_get_name (source);
  if (name != NULL)
    {
      while (length < PERFMON_RUNNABLE_NAME_MAX && name[length] != '\0')
        {
          stack->runnable_name[length] = name[length];
          length++;
        }
    }
  stack->runnable_name[length] = '\0';
}

static void
_perfmon_stack_capture_handler (int        signo,
                                siginfo_t *info,
                                void      *ucontext)
{
  int saved_errno = errno;
  pid_t self = (pid_t) syscall (SYS_gettid);
  guint64 expected = SLOT_WORD (self, SLOT_REQUESTED);

  /* Claim the request only if it is for this thread and still stands. */
  if (__atomic_compare_exchange_n (&slot.word, &expected, SLOT_WORD (self, SLOT_WRITING),
                                   FALSE, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    {
      ucontext_t *context = ucontext;

      /* The arrays are only read up to n_frames. */
      slot.stack.method = PERFMON_STACK_METHOD_SIGNAL;
      slot.stack.interrupted_syscall = FALSE;
#if defined(__x86_64__)
      /* A system call this signal ended with EINTR: RAX holds -EINTR and
       * the instruction before the PC is `syscall` (0f 05), which is
       * mapped since the thread just ran it. */
      if (context->uc_mcontext.gregs[REG_RAX] == -EINTR)
        {
          const guint8 *code = (const guint8 *) (uintptr_t) context->uc_mcontext.gregs[REG_RIP];

          slot.stack.interrupted_syscall = code[-2] == 0x0f && code[-1] == 0x05;
        }
#else
      (void) context;
#endif
      slot.stack.n_frames = 0;
      slot.stack.truncated = FALSE;
      slot.stack.has_runnable_name = FALSE;
      slot.stack.runnable_name[0] = '\0';
      /* pthread_self() reads the thread pointer: no lock, no call out. */
      slot.stack.thread_handle = (guint64) pthread_self ();
      slot.unwind_error = 0;

      _perfmon_stack_capture_unwind (&slot.stack, &slot.unwind_error, ucontext);
      _perfmon_stack_capture_copy_runnable_name (&slot.stack);

      expected = SLOT_WORD (self, SLOT_WRITING);
      if (!__atomic_compare_exchange_n (&slot.word, &expected, SLOT_WORD (self, SLOT_DONE),
                                        FALSE, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        {
          /* ABANDONED_WRITING: the requester stopped waiting for us and
           * nobody will read this stack; the slot is free again. */
          __atomic_store_n (&slot.word, SLOT_WORD (0, SLOT_IDLE), __ATOMIC_RELEASE);
        }

      _perfmon_futex_bump_and_wake (&slot.completions, G_MAXINT);
    }

  errno = saved_errno;
}

/* The requester's side. */

gboolean
_perfmon_stack_capture_init (GError **error)
{
  g_autoptr(GMutexLocker) locker = NULL;
  struct sigaction action;
  struct sigaction previous;
  int signo = SIGRTMIN + 3;
  int ret;

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (g_atomic_int_get (&installed))
    return TRUE;

  locker = g_mutex_locker_new (&init_mutex);
  if (g_atomic_int_get (&installed))
    return TRUE;

  /* SIGRTMIN + 3, or the first real-time signal above it with no handler:
   * code in the process that listens to one keeps it. SIG_IGN is taken
   * over: an ignored disposition survives exec(), so it usually comes from
   * whatever started the process, not from code in it that listens to this
   * signal. */
  for (signo = SIGRTMIN + 3; signo <= SIGRTMAX; signo++)
    {
      if (sigaction (signo, NULL, &previous) != 0)
        continue;
      if ((previous.sa_flags & SA_SIGINFO)
            ? previous.sa_sigaction == _perfmon_stack_capture_handler
            : (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN))
        break;
    }
  if (signo > SIGRTMAX)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "cannot capture stacks of running threads: every real-time signal from "
                   "SIGRTMIN+3 to SIGRTMAX (%d to %d) already has a handler installed by other "
                   "code in this process; perfmon does not take one over",
                   SIGRTMIN + 3, SIGRTMAX);
      return FALSE;
    }

  /* Before the handler can run: this also performs libunwind's one-time
   * setup, which takes a mutex. The policy applies to every local unwind
   * in the process: the others get slower, never wrong. */
  ret = unw_set_caching_policy (unw_local_addr_space, UNW_CACHE_NONE);
  if (ret != 0)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "cannot capture stacks: libunwind refused to turn its cache off: %s",
                   unw_strerror (ret));
      return FALSE;
    }

  memset (&action, 0, sizeof action);
  action.sa_sigaction = _perfmon_stack_capture_handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigfillset (&action.sa_mask);
  sigdelset (&action.sa_mask, SIGSEGV);
  sigdelset (&action.sa_mask, SIGBUS);
  sigdelset (&action.sa_mask, SIGILL);
  sigdelset (&action.sa_mask, SIGFPE);
  sigdelset (&action.sa_mask, SIGTRAP);
  sigdelset (&action.sa_mask, SIGABRT);
  if (sigaction (signo, &action, NULL) != 0)
    {
      int saved_errno = errno;

      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "cannot capture stacks: cannot install the handler of signal SIGRTMIN+%d (%d): %s",
                   signo - SIGRTMIN, signo, g_strerror (saved_errno));
      return FALSE;
    }

  capture_signal = signo;
  pthread_atfork (_perfmon_stack_capture_before_fork, _perfmon_stack_capture_after_fork_in_parent,
                  _perfmon_stack_capture_after_fork_in_child);
  g_atomic_int_set (&installed, TRUE);
  return TRUE;
}

void
_perfmon_stack_capture_register_thread (void)
{
  if (G_LIKELY (__atomic_load_n (&dispatch_record_ready, __ATOMIC_RELAXED)))
    return;

  /* The answer does not matter: asking makes GLib allocate the thread's
   * dispatch record, here, where allocating is allowed. The release store
   * keeps the flag from being set before the record exists. */
  (void) g_main_current_source ();
  glib_dispatch_address = _perfmon_stack_capture_find_glib_dispatch ();
  __atomic_store_n (&dispatch_record_ready, TRUE, __ATOMIC_RELEASE);

  _perfmon_stack_capture_add_to_registry ();
}

/* For captures through /proc: who the calling thread is, and where its
 * dispatch name is. */
static void
_perfmon_stack_capture_add_to_registry (void)
{
  {
    gint64 tid = (gint64) syscall (SYS_gettid);
    guint slot_index = MAX_REGISTERED;

    g_mutex_lock (&registry_lock);
    for (guint i = 0; i < MAX_REGISTERED && slot_index == MAX_REGISTERED; i++)
      if (registry[i].tid == tid || registry[i].tid == 0)
        slot_index = i;
    if (slot_index == MAX_REGISTERED)
      slot_index = registry_next++ % MAX_REGISTERED;
    registry[slot_index].tid = tid;
    registry[slot_index].addresses.thread_handle = (guint64) pthread_self ();
    registry[slot_index].addresses.dispatch_name_address = (guint64) (uintptr_t) &_perfmon_current_dispatch_name;
    registry[slot_index].addresses.glib_dispatch_address = glib_dispatch_address;
    g_mutex_unlock (&registry_lock);
    g_private_set (&registry_key, GINT_TO_POINTER ((gint) tid));
  }
}

const char *
_perfmon_stack_method_to_string (PerfmonStackMethod method)
{
  switch (method)
    {
    case PERFMON_STACK_METHOD_PROC_SYSCALL: return "proc-syscall";
    case PERFMON_STACK_METHOD_SIGNAL:       return "signal";
    case PERFMON_STACK_METHOD_PERF_SAMPLE:  return "perf-sample";
    default:                                return "none";
    }
}

int
_perfmon_stack_capture_get_signal (void)
{
  return g_atomic_int_get (&installed) ? capture_signal : 0;
}

/* Waits while the slot is in @state or @other_state, until @deadline
 * (monotonic µs). Returns the slot's last word. */
static guint64
_perfmon_stack_capture_wait (SlotState state,
                             SlotState other_state,
                             gint64    deadline)
{
  for (;;)
    {
      guint seen = _perfmon_futex_read (&slot.completions);
      guint64 word = __atomic_load_n (&slot.word, __ATOMIC_ACQUIRE);

      if ((SLOT_WORD_STATE (word) != state && SLOT_WORD_STATE (word) != other_state) ||
          deadline <= g_get_monotonic_time ())
        return word;

      /* Returns on a wake, at the deadline, on a signal (EINTR),
       * spuriously, or at once if a handler finished after `seen` was
       * read: in every case the loop looks again. */
      _perfmon_futex_wait_until (&slot.completions, seen, deadline);
    }
}

/* Compare-and-swap of the slot's word from @expected to @desired; on
 * failure stores the word seen in @expected. */
static gboolean
_perfmon_stack_capture_slot_move (guint64 *expected,
                                  guint64  desired)
{
  return __atomic_compare_exchange_n (&slot.word, expected, desired,
                                      FALSE, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static const char *
_perfmon_stack_capture_describe_state (char state)
{
  switch (state)
    {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "in uninterruptible sleep, where signals wait until it leaves the kernel";
    case 'T': return "stopped";
    case 't': return "stopped by a tracer";
    case 'Z': return "exited (zombie)";
    case 'X': return "dead";
    case 'I': return "idle";
    case 'P': return "parked";
    default:  return "in an unknown state";
    }
}

/* Whether the mask @field ("SigBlk", "SigPnd"...) of thread @tid's
 * /proc status has our signal; FALSE if it cannot be read. */
static gboolean
_perfmon_stack_capture_status_has_signal (gint64      tid,
                                          const char *field)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%" G_GINT64_FORMAT "/status", tid);
  g_autofree char *status = NULL;
  g_autofree char *key = g_strdup_printf ("\n%s:", field);
  const char *line;
  guint64 mask;

  if (!g_file_get_contents (path, &status, NULL, NULL))
    return FALSE;
  line = strstr (status, key);
  if (line == NULL)
    return FALSE;
  mask = g_ascii_strtoull (line + strlen (key), NULL, 16);
  return (mask & (G_GUINT64_CONSTANT (1) << (capture_signal - 1))) != 0;
}

/* The error for a thread that did not run the handler in time: the seed's
 * "wchan" fallback, what the kernel says the thread is doing. */
static void
_perfmon_stack_capture_set_not_handled_error (gint64   tid,
                                              guint    timeout_ms,
                                              GError **error)
{
  g_autofree char *stat_path = g_strdup_printf ("/proc/self/task/%" G_GINT64_FORMAT "/stat", tid);
  g_autofree char *wchan_path = g_strdup_printf ("/proc/self/task/%" G_GINT64_FORMAT "/wchan", tid);
  g_autofree char *stat = NULL;
  g_autofree char *wchan = NULL;
  const char *after_name;
  char state = '?';

  if (!g_file_get_contents (stat_path, &stat, NULL, NULL))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "no stack of thread %" G_GINT64_FORMAT ": the thread has exited", tid);
      return;
    }

  /* "tid (comm) S ...": the name may hold spaces and parentheses, the state
   * follows the last ')'. */
  after_name = strrchr (stat, ')');
  if (after_name != NULL && after_name[1] == ' ' && after_name[2] != '\0')
    state = after_name[2];
  if (state == 'Z' || state == 'X')
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "no stack of thread %" G_GINT64_FORMAT ": the thread has exited", tid);
      return;
    }

  /* "0" when the thread is not waiting in the kernel (or the kernel hides
   * wait channels from us). */
  if (g_file_get_contents (wchan_path, &wchan, NULL, NULL))
    g_strstrip (wchan);
  if (wchan == NULL || wchan[0] == '\0')
    {
      g_free (wchan);
      wchan = g_strdup ("unknown");
    }

  g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
               "no stack of thread %" G_GINT64_FORMAT ": it did not handle the capture signal "
               "within %u ms; state %c (%s), wchan %s%s",
               tid, timeout_ms, state, _perfmon_stack_capture_describe_state (state), wchan,
               _perfmon_stack_capture_status_has_signal (tid, "SigBlk")
                 ? ", and it blocks the signal" : "");
}

/* A copy of thread @tid's registration, all zeros if it has none. */
static RegisteredThread
find_registered (gint64 tid)
{
  RegisteredThread registered = { 0, };

  g_mutex_lock (&registry_lock);
  for (guint i = 0; i < MAX_REGISTERED; i++)
    if (registry[i].tid == tid)
      registered = registry[i];
  g_mutex_unlock (&registry_lock);
  return registered;
}

static gboolean
_perfmon_stack_capture_locked (gint64                tid,
                               guint                 timeout_ms,
                               PerfmonCapturedStack *out,
                               GError              **error)
{
  guint64 word;
  gboolean send = TRUE;
  gint64 deadline;
  int unwind_error;
  RegisteredThread registered = find_registered (tid);

  /* First without a signal: a thread blocked in a system call is read
   * through /proc and not disturbed at all. */
  /* A thread that is neither seen blocked nor sampled running is looked
   * at again, a few times. */
  for (guint attempt = 0; attempt < 3; attempt++)
    {
      switch (_perfmon_proc_stack_capture (tid, &registered.addresses, out, error))
        {
        case PERFMON_PROC_STACK_TAKEN:
          return TRUE;
        case PERFMON_PROC_STACK_FAILED:
          return FALSE;
        default:
          break;
        }
      /* It runs in user space: a perf sample takes its stack there without
       * a signal, where the kernel allows it. */
      switch (_perfmon_perf_stack_capture (tid, MAX (timeout_ms / 3, 10),
                                           &registered.addresses, out, error))
        {
        case PERFMON_PROC_STACK_TAKEN:
          return TRUE;
        case PERFMON_PROC_STACK_FAILED:
          return FALSE;
        case PERFMON_PROC_STACK_NOT_SAMPLED:
          continue;
        default:
          break;
        }
      break;
    }
  /* Here the thread was seen running at every look (in user space, or in
   * and out of short system calls faster than its stack could be read),
   * and perf either is refused or never found it in user space: it runs,
   * so it may be signalled. A system call it is in when the signal comes
   * may return EINTR; the report says so (InterruptedSyscall). */
  word = __atomic_load_n (&slot.word, __ATOMIC_ACQUIRE);

  /* Under the mutex the slot is IDLE, unless an earlier requester gave up
   * on a handler that is still running. */
  if (SLOT_WORD_STATE (word) != SLOT_IDLE)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "no stack of thread %" G_GINT64_FORMAT ": an earlier capture of thread %d "
                   "is still unwinding it, stuck in the capture's signal handler",
                   tid, SLOT_WORD_TID (word));
      return FALSE;
    }

  __atomic_store_n (&slot.word, SLOT_WORD (tid, SLOT_REQUESTED), __ATOMIC_RELEASE);
  deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

  /* Looked at after the request is up: a pending signal taken before
   * then found no request and is gone, so /proc no longer shows it. */
  if (tids_left_pending != NULL &&
      g_hash_table_contains (tids_left_pending, GINT_TO_POINTER ((gint) tid)))
    {
      if (_perfmon_stack_capture_status_has_signal (tid, "SigPnd"))
        send = FALSE;
      else
        g_hash_table_remove (tids_left_pending, GINT_TO_POINTER ((gint) tid));
    }

  if (send && syscall (SYS_tgkill, (pid_t) getpid (), (pid_t) tid, capture_signal) != 0)
    {
      int saved_errno = errno;

      word = SLOT_WORD (tid, SLOT_REQUESTED);
      /* Withdraw the request. It may already have been claimed after an
       * EAGAIN, by a signal of an earlier request still pending on the
       * thread: then it is served like any other. */
      if (_perfmon_stack_capture_slot_move (&word, SLOT_WORD (0, SLOT_IDLE)))
        {
          if (saved_errno == ESRCH)
            g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                         "no stack of thread %" G_GINT64_FORMAT ": the thread has exited "
                         "(no such thread in this process)", tid);
          else if (saved_errno == EAGAIN)
            g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                         "no stack of thread %" G_GINT64_FORMAT ": the capture signal cannot be "
                         "queued, too many signals are pending (RLIMIT_SIGPENDING)", tid);
          else
            g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                         "no stack of thread %" G_GINT64_FORMAT ": cannot signal it: %s",
                         tid, g_strerror (saved_errno));
          return FALSE;
        }
    }

  word = _perfmon_stack_capture_wait (SLOT_REQUESTED, SLOT_WRITING, deadline);

  if (SLOT_WORD_STATE (word) == SLOT_REQUESTED)
    {
      /* The deadline passed before the thread took the signal. Withdraw
       * the request, unless its handler claims it at this very moment. */
      if (_perfmon_stack_capture_slot_move (&word, SLOT_WORD (0, SLOT_IDLE)))
        {
          if (tids_left_pending == NULL)
            tids_left_pending = g_hash_table_new (NULL, NULL);
          if (g_hash_table_size (tids_left_pending) >= MAX_TIDS_LEFT_PENDING)
            g_hash_table_remove_all (tids_left_pending);
          g_hash_table_add (tids_left_pending, GINT_TO_POINTER ((gint) tid));
          _perfmon_stack_capture_set_not_handled_error (tid, timeout_ms, error);
          return FALSE;
        }
    }

  if (SLOT_WORD_STATE (word) == SLOT_WRITING)
    {
      word = _perfmon_stack_capture_wait (SLOT_WRITING, SLOT_WRITING,
                                          g_get_monotonic_time () + STUCK_HANDLER_GRACE_MS * 1000);
      if (SLOT_WORD_STATE (word) == SLOT_WRITING &&
          _perfmon_stack_capture_slot_move (&word, SLOT_WORD (tid, SLOT_ABANDONED_WRITING)))
        {
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                       "no stack of thread %" G_GINT64_FORMAT ": its capture signal handler is "
                       "still unwinding after %u ms (the thread is stopped, or waits for a "
                       "lock in the dynamic linker)",
                       tid, timeout_ms + STUCK_HANDLER_GRACE_MS);
          return FALSE;
        }
    }

  /* Only the handler leaves WRITING, and only for DONE (ours is not
   * abandoned): the stack is complete and ours to read. */
  g_assert (SLOT_WORD_STATE (word) == SLOT_DONE);
  *out = slot.stack;
  unwind_error = slot.unwind_error;
  __atomic_store_n (&slot.word, SLOT_WORD (0, SLOT_IDLE), __ATOMIC_RELEASE);

  if (out->n_frames == 0)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "no stack of thread %" G_GINT64_FORMAT ": libunwind read no frame: %s",
                   tid, unwind_error != 0 ? unw_strerror (unwind_error) : "empty stack");
      return FALSE;
    }

  return TRUE;
}

gboolean
_perfmon_stack_capture (gint64                tid,
                        guint                 timeout_ms,
                        PerfmonCapturedStack *out,
                        GError              **error)
{
  g_autoptr(GMutexLocker) locker = NULL;

  g_return_val_if_fail (out != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (tid <= 0 || tid > G_MAXINT32)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "cannot capture the stack of thread %" G_GINT64_FORMAT ": not a thread id", tid);
      return FALSE;
    }
  if (tid == (gint64) syscall (SYS_gettid))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "cannot capture the stack of thread %" G_GINT64_FORMAT ": it is the calling "
                   "thread, which would wait for a signal handler only it can run",
                   tid);
      return FALSE;
    }
  if (!g_atomic_int_get (&installed))
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_STACK_UNAVAILABLE,
                   "no stack of thread %" G_GINT64_FORMAT ": the capture's signal handler is not "
                   "installed (_perfmon_stack_capture_init() was not called, or failed)", tid);
      return FALSE;
    }

  locker = g_mutex_locker_new (&capture_mutex);
  return _perfmon_stack_capture_locked (tid, timeout_ms, out, error);
}

gboolean
_perfmon_stack_capture_runnable_name (gint64                tid,
                                      PerfmonCapturedStack *out)
{
  RegisteredThread registered;

  g_return_val_if_fail (out != NULL, FALSE);

  out->has_runnable_name = FALSE;
  out->runnable_name[0] = '\0';
  registered = find_registered (tid);
  if (registered.tid == 0)
    return FALSE;
  _perfmon_proc_stack_read_runnable_name (&registered.addresses, out);
  return out->has_runnable_name;
}

gboolean
_perfmon_stack_capture_runnable_name_if_moved (gint64                tid,
                                               guint64              *name_address,
                                               PerfmonCapturedStack *out)
{
  RegisteredThread registered;
  guint64 address;

  g_return_val_if_fail (name_address != NULL && out != NULL, FALSE);

  registered = find_registered (tid);
  if (registered.tid == 0)
    {
      *name_address = 0;
      out->has_runnable_name = FALSE;
      out->runnable_name[0] = '\0';
      return TRUE;
    }
  /* The main thread's thread-local variables live as long as the process:
   * its name pointer is loaded directly (the thread stores it
   * atomically, see _perfmon_set_dispatch_name()). Another thread's go
   * with it when it exits: read through the kernel, which fails cleanly. */
  if (registered.tid == _perfmon_proc_stack_own_pid ())
    address = (guint64) (uintptr_t) __atomic_load_n ((const char *const *) (uintptr_t)
                                                     registered.addresses.dispatch_name_address,
                                                     __ATOMIC_RELAXED);
  else
    address = _perfmon_proc_stack_read_dispatch_name_address (&registered.addresses);
  if (address != 0 && address == *name_address)
    return FALSE;
  *name_address = address;
  _perfmon_proc_stack_read_runnable_name_at (&registered.addresses, address, out);
  return TRUE;
}
