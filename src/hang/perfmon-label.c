/* perfmon-label.c: the thread-local label stack
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-error.h"
#include "perfmon-label-private.h"
#include "perfmon-utf8.h"

/* Design.
 *
 * Every thread that pushes a label gets a PerfmonLabelStack on its first
 * push: one allocation of fixed size (PERFMON_LABEL_STACK_CAPACITY frames),
 * registered in a global registry under a mutex. After that, push and pop
 * only touch the thread's own stack: no lock, no system call, no
 * allocation (tests/test-label.c proves it under seccomp). The thread finds
 * its stack through an initial-exec TLS variable; a GPrivate with a destroy
 * notify unregisters the stack and drops the thread's reference when the
 * thread exits.
 *
 * Static labels are not copied. A label names a place in the code ("the
 * static string of AUTO_PROFILER_LABEL" in the seed), so it is a string
 * literal that lives as long as the program: storing the pointer costs one
 * store, and the reader can dereference it whenever it likes, even a stale
 * one left in a slot above the current depth. Bindings cannot promise that
 * (their strings are temporaries), so they get
 * perfmon_label_push_interned(), which stores g_intern_string (label),
 * which also lives forever. Dynamic text is copied, at most
 * PERFMON_LABEL_DYNAMIC_MAX bytes cut at a UTF-8 character boundary, into
 * the frame's own buffer, because it usually is a temporary.
 *
 * Why a seqlock. The reader is a watchdog thread that looks at a thread
 * which is stuck, or not: the owner keeps running while it reads, and
 * must never wait for it (a lock would put a futex on the hot path and let
 * a descheduled watchdog stall the thread it watches). So the owner bumps a
 * sequence counter to an odd value before it changes the stack and to the
 * next even value after; the reader copies the depth and the frames between
 * two reads of the counter and keeps the copy only if the counter was even
 * and unchanged, otherwise it retries, at most READ_ATTEMPTS times, then
 * gives up (FALSE).
 *
 * Race-free by the C11 memory model, not only in practice: every field the
 * reader copies, the dynamic text included (as 64-bit words), is an atomic
 * object; the owner stores each with release ordering and the reader loads
 * each with acquire ordering, and there are no fences (which ThreadSanitizer
 * cannot model, and gcc refuses under -fsanitize=thread). Why a kept copy is
 * consistent:
 *  - the reader's first counter load (acquire) reads an even value 2k from
 *    the owner's release store that ended update k, so everything update k
 *    and earlier stored happens before the reader's copy;
 *  - if any load of the copy reads a value stored by a later update k+1,
 *    that store (release) synchronizes with the load (acquire); update
 *    k+1's odd counter store is sequenced before it, so it happens before
 *    the reader's second counter load, which by coherence reads 2k+1 or
 *    later: the copy is thrown away.
 * So a copy is kept only if every load read update k's value. On x86-64 a
 * release store and an acquire load are plain moves, but the compiler may
 * not merge them: callgrind counts a push+pop at 83 instructions with a
 * static label (91 with the former memcpy() scheme) and 207 with 41 bytes
 * of dynamic text (148 before), the word-by-word copy. On weakly ordered
 * CPUs each word costs an stlr/ldar.
 *
 * Overflow: a push beyond the capacity only increments the depth (and the
 * counter), the matching pop decrements it. The depth stays right, the
 * reader reports the stored frames (the outermost ones) and how many deeper
 * ones were dropped, and once the depth is back below the capacity the
 * frames are exact again.
 *
 * Lifetime: the stack is refcounted (atomically). The registry's entry and
 * the thread own one reference together, dropped by the thread-exit notify
 * after it has removed the stack from the registry under the lock. A
 * reader takes its reference under the same lock (_perfmon_label_list_stacks)
 * or from the owner, and _perfmon_label_stack_read() takes one more while it
 * reads; so a stack is freed only when its thread is gone and no reader
 * holds it. */

#define READ_ATTEMPTS 256
#define DYNAMIC_WORDS ((PERFMON_LABEL_DYNAMIC_MAX + 8) / 8)

/* The orderings of the seqlock's data (see "Race-free" above). */
#define STORE(field, value) __atomic_store_n (&(field), (value), __ATOMIC_RELEASE)
#define LOAD(field) __atomic_load_n (&(field), __ATOMIC_ACQUIRE)

typedef struct
{
  const char *label;          /* atomic: written by the owner, read by readers */
  /* The caller's stack pointer at the push (the push's canonical frame
   * address): where the frame sits among the native frames, so a hang
   * report can interleave the two stacks. */
  guint64     stack_address;
  guint8      dynamic_len;    /* 0: no dynamic text */
  /* The dynamic text, dynamic_len bytes, in atomic 64-bit words (the tail
   * of the last word is zero). */
  guint64     dynamic[DYNAMIC_WORDS];
} Frame;

struct _PerfmonLabelStack
{
  /* Written by the owner only, read by anyone under the seqlock. */
  guint          sequence;
  guint          depth;
  Frame          frames[PERFMON_LABEL_STACK_CAPACITY];

  gatomicrefcount ref_count;
  gboolean       alive;       /* atomic */
  gint64         thread_id;
  char           thread_name[17];
};

static GMutex registry_lock;
static GPtrArray *registry;   /* of PerfmonLabelStack *, under registry_lock */

static __thread PerfmonLabelStack *current_stack __attribute__ ((tls_model ("initial-exec")));

static void label_stack_thread_exit (gpointer data);

static GPrivate thread_exit_notify = G_PRIVATE_INIT (label_stack_thread_exit);

static void
label_stack_thread_exit (gpointer data)
{
  PerfmonLabelStack *stack = data;

  g_mutex_lock (&registry_lock);
  g_ptr_array_remove_fast (registry, stack);
  g_mutex_unlock (&registry_lock);

  if (current_stack == stack)
    current_stack = NULL;
  g_atomic_int_set (&stack->alive, FALSE);
  _perfmon_label_stack_unref (stack);
}

static PerfmonLabelStack *
label_stack_new (void)
{
  PerfmonLabelStack *stack = g_new0 (PerfmonLabelStack, 1);

  g_atomic_ref_count_init (&stack->ref_count);
  stack->alive = TRUE;
  stack->thread_id = (gint64) syscall (SYS_gettid);
  if (prctl (PR_GET_NAME, stack->thread_name, 0, 0, 0) != 0)
    g_snprintf (stack->thread_name, sizeof stack->thread_name, "%" G_GINT64_FORMAT, stack->thread_id);
  stack->thread_name[sizeof stack->thread_name - 1] = '\0';

  return stack;
}

/* Not a new reference: the calling thread's stack, which lives at least
 * until the thread exits. */
PerfmonLabelStack *
_perfmon_label_stack_get_current (void)
{
  PerfmonLabelStack *stack = current_stack;

  if (G_LIKELY (stack != NULL))
    return stack;

  stack = label_stack_new ();

  g_mutex_lock (&registry_lock);
  if (registry == NULL)
    registry = g_ptr_array_new ();
  g_ptr_array_add (registry, stack);
  g_mutex_unlock (&registry_lock);

  g_private_set (&thread_exit_notify, stack);
  current_stack = stack;

  return stack;
}

PerfmonLabelStack *
_perfmon_label_stack_ref (PerfmonLabelStack *stack)
{
  g_return_val_if_fail (stack != NULL, NULL);

  g_atomic_ref_count_inc (&stack->ref_count);
  return stack;
}

void
_perfmon_label_stack_unref (PerfmonLabelStack *stack)
{
  g_return_if_fail (stack != NULL);

  if (g_atomic_ref_count_dec (&stack->ref_count))
    g_free (stack);
}

GPtrArray *
_perfmon_label_list_stacks (void)
{
  GPtrArray *stacks = g_ptr_array_new_with_free_func ((GDestroyNotify) _perfmon_label_stack_unref);

  g_mutex_lock (&registry_lock);
  for (guint i = 0; registry != NULL && i < registry->len; i++)
    g_ptr_array_add (stacks, _perfmon_label_stack_ref (g_ptr_array_index (registry, i)));
  g_mutex_unlock (&registry_lock);

  return stacks;
}

guint
_perfmon_label_count_stacks (void)
{
  guint n;

  g_mutex_lock (&registry_lock);
  n = registry != NULL ? registry->len : 0;
  g_mutex_unlock (&registry_lock);

  return n;
}

const char *
_perfmon_label_stack_get_thread_name (PerfmonLabelStack *stack)
{
  g_return_val_if_fail (stack != NULL, NULL);

  return stack->thread_name;
}

gint64
_perfmon_label_stack_get_thread_id (PerfmonLabelStack *stack)
{
  g_return_val_if_fail (stack != NULL, 0);

  return stack->thread_id;
}

gboolean
_perfmon_label_stack_is_alive (PerfmonLabelStack *stack)
{
  g_return_val_if_fail (stack != NULL, FALSE);

  return g_atomic_int_get (&stack->alive);
}

/* The owner's side of the seqlock. */
static inline guint
write_begin (PerfmonLabelStack *stack)
{
  guint sequence = stack->sequence;   /* only the owner writes it */

  /* Relaxed: the release stores of the data that follow publish it. */
  __atomic_store_n (&stack->sequence, sequence + 1, __ATOMIC_RELAXED);
  return sequence;
}

static inline void
write_end (PerfmonLabelStack *stack,
           guint              sequence)
{
  __atomic_store_n (&stack->sequence, sequence + 2, __ATOMIC_RELEASE);
}

static inline gsize
dynamic_length (const char *text)
{
  return _perfmon_utf8_cut (text, strnlen (text, PERFMON_LABEL_DYNAMIC_MAX + 1), PERFMON_LABEL_DYNAMIC_MAX);
}

/* Stores @len bytes of @text in @frame's words, each an atomic store. */
static inline void
store_dynamic (Frame      *frame,
               const char *text,
               gsize       len)
{
  gsize i = 0;

  for (; i + 8 <= len; i += 8)
    {
      guint64 word;

      memcpy (&word, text + i, 8);
      STORE (frame->dynamic[i / 8], word);
    }
  if (i < len)
    {
      /* Byte by byte into a zeroed word: a memcpy() of variable length
       * would be a call. */
      char tail[8] = { 0 };
      guint64 word;

      for (gsize j = 0; i + j < len; j++)
        tail[j] = text[i + j];
      memcpy (&word, tail, 8);
      STORE (frame->dynamic[i / 8], word);
    }
}

static inline void
label_push_at (const char *label,
               const char *dynamic,
               guint64     stack_address)
{
  PerfmonLabelStack *stack;
  guint sequence;
  guint depth;

  stack = _perfmon_label_stack_get_current ();
  depth = stack->depth;
  sequence = write_begin (stack);

  if (G_LIKELY (depth < PERFMON_LABEL_STACK_CAPACITY))
    {
      Frame *frame = &stack->frames[depth];
      gsize len = (dynamic != NULL) ? dynamic_length (dynamic) : 0;

      STORE (frame->label, label);
      STORE (frame->stack_address, stack_address);
      store_dynamic (frame, dynamic, len);
      STORE (frame->dynamic_len, (guint8) len);
    }
  STORE (stack->depth, depth + 1);

  write_end (stack, sequence);
}

/**
 * perfmon_label_push:
 * @label: (transfer none): a static string naming the code that runs, e.g. a
 *   string literal: the pointer is stored, not copied, so it must outlive the
 *   push (in practice, the program)
 * @dynamic: (nullable): text that details @label, e.g. a URI, or %NULL;
 *   copied, at most 127 bytes, cut at a UTF-8 character boundary
 *
 * Pushes a frame on the calling thread's label stack, the "pseudo stack"
 * that hang reports show: the frame reads as @label, or as @label, a space
 * and @dynamic. Pop it with perfmon_label_pop(), or use the scope guards
 * PERFMON_AUTO_LABEL() and PERFMON_AUTO_LABEL_DYNAMIC() in C.
 *
 * The first push of a thread allocates its stack; later pushes and pops
 * take no lock, make no system call and allocate nothing. A stack holds 64
 * frames: deeper pushes are counted (and must be popped) but not stored,
 * and hang reports say how many were dropped.
 *
 * Bindings call perfmon_label_push_interned() under this name, since their
 * strings do not outlive the call.
 *
 * Since: 0.1
 */
void
perfmon_label_push (const char *label,
                    const char *dynamic)
{
  g_return_if_fail (label != NULL);

  label_push_at (label, dynamic, (guint64) (guintptr) __builtin_dwarf_cfa ());
}

/**
 * perfmon_label_push_interned: (rename-to perfmon_label_push)
 * @label: a string naming the code that runs; interned, so it need not
 *   outlive the call
 * @dynamic: (nullable): text that details @label, or %NULL; copied, at most
 *   127 bytes, cut at a UTF-8 character boundary
 *
 * Like perfmon_label_push(), but stores g_intern_string (@label), which
 * lives as long as the program: what bindings call as `label_push`. Each
 * call takes GLib's global intern lock, and the first push of each distinct
 * @label allocates, so C code with string literals should call
 * perfmon_label_push().
 *
 * Since: 0.1
 */
void
perfmon_label_push_interned (const char *label,
                             const char *dynamic)
{
  g_return_if_fail (label != NULL);

  label_push_at (g_intern_string (label), dynamic, (guint64) (guintptr) __builtin_dwarf_cfa ());
}

/* Pops a frame; FALSE if the stack is empty. */
static inline gboolean
label_pop_frame (void)
{
  PerfmonLabelStack *stack = current_stack;
  guint sequence;
  guint depth;

  if (G_UNLIKELY (stack == NULL || stack->depth == 0))
    return FALSE;

  depth = stack->depth;
  sequence = write_begin (stack);
  STORE (stack->depth, depth - 1);
  write_end (stack, sequence);
  return TRUE;
}

/**
 * perfmon_label_pop:
 *
 * Pops the frame pushed last by perfmon_label_push() on the calling thread.
 * Popping an empty stack is a programming error: it is reported with
 * g_critical() and does nothing. Bindings call perfmon_label_pop_checked()
 * under this name, and get an exception instead.
 *
 * Since: 0.1
 */
void
perfmon_label_pop (void)
{
  if (G_UNLIKELY (!label_pop_frame ()))
    g_critical ("perfmon_label_pop: the label stack of this thread is empty");
}

/**
 * perfmon_label_pop_checked: (rename-to perfmon_label_pop)
 * @error: return location for a #GError
 *
 * Pops the frame pushed last by perfmon_label_push() on the calling thread,
 * as perfmon_label_pop() does, but says so with an error when the stack is
 * empty. Bindings get this function under the name `label_pop`, which then
 * raises an exception.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_INVALID_ARGUMENT)
 *   if the calling thread's label stack is empty
 *
 * Since: 0.3
 */
gboolean
perfmon_label_pop_checked (GError **error)
{
  if (G_UNLIKELY (!label_pop_frame ()))
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "label_pop: the label stack of this thread is empty "
                           "(more pops than pushes)");
      return FALSE;
    }
  return TRUE;
}

/* A reader's copy of the stored frames. */
typedef struct
{
  guint depth;
  struct
  {
    const char *label;
    guint64     stack_address;
    guint8      dynamic_len;
    char        dynamic[DYNAMIC_WORDS * 8];
  } frames[PERFMON_LABEL_STACK_CAPACITY];
} StackCopy;

static gboolean
try_copy (PerfmonLabelStack *stack,
          StackCopy         *copy)
{
  guint before = __atomic_load_n (&stack->sequence, __ATOMIC_ACQUIRE);
  guint after;
  guint n;

  if (before & 1)
    return FALSE;   /* the owner is writing */

  copy->depth = LOAD (stack->depth);
  n = MIN (copy->depth, PERFMON_LABEL_STACK_CAPACITY);
  for (guint i = 0; i < n; i++)
    {
      Frame *frame = &stack->frames[i];
      guint8 len = MIN (LOAD (frame->dynamic_len), PERFMON_LABEL_DYNAMIC_MAX);

      copy->frames[i].label = LOAD (frame->label);
      copy->frames[i].stack_address = LOAD (frame->stack_address);
      copy->frames[i].dynamic_len = len;
      for (guint w = 0; w * 8 < len; w++)
        {
          guint64 word = LOAD (frame->dynamic[w]);

          memcpy (copy->frames[i].dynamic + w * 8, &word, 8);
        }
    }

  /* Acquire loads above: this load cannot move before them. */
  after = __atomic_load_n (&stack->sequence, __ATOMIC_RELAXED);
  return after == before;
}

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#elif defined(__aarch64__)
  __asm__ __volatile__ ("yield");
#endif
}

gboolean
_perfmon_label_stack_read (PerfmonLabelStack *stack,
                           GPtrArray         *frames_out,
                           guint             *n_dropped)
{
  return _perfmon_label_stack_read_full (stack, frames_out, NULL, n_dropped);
}

gboolean
_perfmon_label_stack_read_full (PerfmonLabelStack *stack,
                                GPtrArray         *frames_out,
                                GArray            *stack_addresses_out,
                                guint             *n_dropped)
{
  g_autofree StackCopy *copy = NULL;
  gboolean stable = FALSE;
  guint n;

  g_return_val_if_fail (stack != NULL, FALSE);
  g_return_val_if_fail (frames_out != NULL, FALSE);

  copy = g_new (StackCopy, 1);
  _perfmon_label_stack_ref (stack);
  for (guint attempt = 0; attempt < READ_ATTEMPTS && !stable; attempt++)
    {
      stable = try_copy (stack, copy);
      if (!stable)
        cpu_relax ();
    }
  _perfmon_label_stack_unref (stack);

  if (!stable)
    return FALSE;

  /* The copy is consistent: build the strings from it alone. The labels
   * are static (or interned) strings, so dereferencing them is safe. */
  n = MIN (copy->depth, PERFMON_LABEL_STACK_CAPACITY);
  for (guint i = 0; i < n; i++)
    {
      const char *label = copy->frames[i].label;
      char *text;

      if (copy->frames[i].dynamic_len > 0)
        text = g_strdup_printf ("%s %.*s", label, (int) copy->frames[i].dynamic_len,
                                copy->frames[i].dynamic);
      else
        text = g_strdup (label);

      if (!g_utf8_validate (text, -1, NULL))
        {
          char *valid = g_utf8_make_valid (text, -1);

          g_free (text);
          text = valid;
        }
      g_ptr_array_add (frames_out, text);
      if (stack_addresses_out != NULL)
        g_array_append_val (stack_addresses_out, copy->frames[i].stack_address);
    }

  if (n_dropped != NULL)
    *n_dropped = copy->depth - n;

  return TRUE;
}
