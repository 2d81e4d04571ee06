/* perfmon-automatic-tasks.c: automatic tasks, the tracer's observer of
 * core/'s per-dispatch hook
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-automatic-tasks-private.h"
#include "perfmon-clock-private.h"
#include "perfmon-dispatch-private.h"
#include "perfmon-tracer-buffer-private.h"
#include "perfmon-utf8.h"

/* With the tracer on, every GSource dispatch on a monitored context is a
 * task, whose parent is the task that was current on the thread that
 * attached the source, whatever thread that was. It costs two records: an
 * AUTO record where it begins (its ids, parent, source event, when it
 * became ready and its name's number) and an END; the writer makes the
 * file's DISPATCH, NAME and BEGIN of the AUTO record.
 *
 * Parents. attached() writes (source, its id, the attaching task, its
 * source event, when the source became ready) into a fixed table of
 * PARENT_SLOTS slots: the source's address picks PARENT_PROBE neighbouring
 * slots, and the entry goes to the first free one, else to the oldest.
 * Memory is bounded whatever the program does, and an entry whose source
 * died is never freed one by one: it is overwritten by a later attach. An
 * entry matches a dispatch only if both the address and the source id
 * (GLib's per-context counter) match, so a new source at a dead one's
 * address does not inherit its parent. (A hook may tell of a source just
 * before GLib attaches it, so that a dispatch on another thread cannot
 * come first; its id is 0 then, and the address alone matches.) A source attached while the tracer
 * was off, or whose entry was overwritten, runs as a root task (its own
 * parent) of the dispatching thread's source event.
 *
 * Each slot is a seqlock: a writer claims it by moving its sequence from
 * even to odd with a compare-and-swap (a writer that loses the race drops
 * its entry, which only makes that source's tasks roots), stores the
 * fields and releases it with the next even number; a reader copies the
 * fields between two loads of the sequence and ignores what changed
 * meanwhile. Every field is accessed atomically (relaxed), so the table is
 * free of data races in C11's sense too. No lock, no system call, no
 * allocation.
 *
 * Queueing. The DISPATCH record is dated when the source became ready,
 * where that is knowable: a source with a ready time (every GLib timeout,
 * g_source_set_ready_time()) at its ready time; an idle (g_idle_funcs) at
 * its attach, for its first dispatch (an idle is known by its prepare,
 * which the hook leaves alone). Other sources (file descriptors,
 * child watches, custom prepare/check) are dated at the dispatch: their
 * queueing time is unknown and shows as 0.
 *
 * Lookups. A thread keeps its last lookup: a source dispatched again with
 * no attach anywhere since (attached() moves attach_generation after it
 * wrote its entry) needs none.
 *
 * Names. Each thread numbers the names it is given and writes a NAME_DEF
 * record (number and text) into its buffer the first time, not one per
 * task: its buffer keeps a small cache, NAME_SLOTS slots picked by the
 * name's pointer, of (pointer, number, where its NAME_DEF is). A hit
 * compares the pointer only, which core allows until it moves
 * _perfmon_dispatch_names_generation (a name freed); after that the slot's
 * text (its NAME_DEF, still in the ring) is compared once again. A name
 * that lost its slot to another gets a new number. What readers need: a
 * dump or a jank capture copies the last capacity of the ring, less a
 * chunk or two, and resolves a number by any NAME_DEF of the copy. A file
 * session never overwrites, so one NAME_DEF per name and session does; the
 * flight recorder writes a name's NAME_DEF again, under the same number,
 * once 1/NAME_REFRESH_FRACTION of its buffer was written since the last
 * one. So every task of the copy but those of its oldest eighth has its
 * name's NAME_DEF before it in the copy, and of those, every one whose
 * name was used again later; the writer leaves out the few others (whose
 * NAME_DEF the ring overwrote). A NAME_DEF that a full file buffer drops
 * is not cached: its tasks' AUTO records carry number 0 and are left out
 * too, like the records dropped around them.
 *
 * Nesting. A dispatch saves the thread's task context on a small
 * per-thread stack (the token is its slot) and its end restores it; more
 * than AUTO_DEPTH nested dispatches (main loops run inside dispatches)
 * are not tasks. */

#define PARENT_SLOTS 4096u   /* a power of two; 56 bytes each */
#define PARENT_PROBE 4u
#define AUTO_DEPTH   16u

typedef struct
{
  guint    seq;                /* odd while written */
  guint    source_id;
  gpointer source;
  guint64  parent_id;          /* 0: the attacher ran no task */
  guint64  source_event_id;
  guint32  source_event_type;
  guint32  reserved;
  guint64  attach_cycles;      /* which entry is oldest */
  guint64  ready_cycles;       /* idle: its attach, until its first dispatch; else 0 */
} ParentSlot;

static ParentSlot parent_slots[PARENT_SLOTS];

typedef struct
{
  PerfmonTaskContext saved[AUTO_DEPTH];   /* _perfmon_tracer_tls.auto_depth of them used */
  /* The thread's last lookup (see "Lookups"). */
  GSource           *looked_up;
  guint              looked_up_id;
  guint              looked_up_generation;
  gboolean           found;
  ParentSlot         entry;
} AutoStack;

/* Not initial-exec: dlopen()ed with PyGObject, the library must not take
 * this much of the static TLS surplus. Each access may be a call to
 * __tls_get_addr(): the observer takes its address once. */
static __thread AutoStack auto_stack;

/* Moved by every attached(), after its entry is written. */
static guint attach_generation;

static inline guint
parent_slot_index (gconstpointer source)
{
  guint64 key = (guint64) (guintptr) source;

  /* Fibonacci hashing of the address, without its alignment bits. */
  return (guint) (((key >> 4) * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)) >> 52) & (PARENT_SLOTS - 1) & ~(PARENT_PROBE - 1);
}

static void
auto_attached (GSource *source)
{
  guint first = parent_slot_index (source);
  ParentSlot *slot = NULL;
  guint64 oldest = G_MAXUINT64;
  guint64 now;
  guint seq;

  if (G_UNLIKELY (__atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED) == 0 || source == NULL))
    return;

  for (guint i = 0; i < PARENT_PROBE; i++)
    {
      ParentSlot *candidate = &parent_slots[first + i];
      gpointer owner = __atomic_load_n (&candidate->source, __ATOMIC_RELAXED);
      guint64 attached_at = __atomic_load_n (&candidate->attach_cycles, __ATOMIC_RELAXED);

      if (owner == NULL || owner == source)
        {
          slot = candidate;
          break;
        }
      if (attached_at < oldest)
        {
          oldest = attached_at;
          slot = candidate;
        }
    }

  seq = __atomic_load_n (&slot->seq, __ATOMIC_RELAXED);
  if ((seq & 1) != 0 ||
      !__atomic_compare_exchange_n (&slot->seq, &seq, seq + 1, FALSE, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return;
  __atomic_store_n (&slot->source, source, __ATOMIC_RELEASE);
  __atomic_store_n (&slot->source_id, source->source_id, __ATOMIC_RELEASE);
  __atomic_store_n (&slot->parent_id, _perfmon_tracer_tls.task_id, __ATOMIC_RELEASE);
  __atomic_store_n (&slot->source_event_id, _perfmon_tracer_tls.source_event_id, __ATOMIC_RELEASE);
  __atomic_store_n (&slot->source_event_type, _perfmon_tracer_tls.source_event_type, __ATOMIC_RELEASE);
  now = _perfmon_clock_cycles ();
  __atomic_store_n (&slot->attach_cycles, now, __ATOMIC_RELEASE);
  __atomic_store_n (&slot->ready_cycles, source->source_funcs->prepare == g_idle_funcs.prepare ? now : 0, __ATOMIC_RELEASE);
  __atomic_store_n (&slot->seq, seq + 2, __ATOMIC_RELEASE);
  __atomic_fetch_add (&attach_generation, 1, __ATOMIC_RELEASE);
}

/* The entry of @source, copied into @out; FALSE if it has none. The
 * entry's ready time is taken: the first lookup (the first dispatch of an
 * idle) gets it, later ones 0. */
static G_GNUC_NO_INLINE gboolean
auto_lookup (GSource    *source,
             ParentSlot *out)
{
  guint first = parent_slot_index (source);

  for (guint i = 0; i < PARENT_PROBE; i++)
    {
      ParentSlot *slot = &parent_slots[first + i];
      guint seq = __atomic_load_n (&slot->seq, __ATOMIC_ACQUIRE);

      if ((seq & 1) != 0 || __atomic_load_n (&slot->source, __ATOMIC_RELAXED) != source)
        continue;
      /* Acquires, not a fence (ThreadSanitizer models none): the seq's
       * second load is not done before them. Plain moves on x86. */
      out->source_id = __atomic_load_n (&slot->source_id, __ATOMIC_ACQUIRE);
      out->parent_id = __atomic_load_n (&slot->parent_id, __ATOMIC_ACQUIRE);
      out->source_event_id = __atomic_load_n (&slot->source_event_id, __ATOMIC_ACQUIRE);
      out->source_event_type = __atomic_load_n (&slot->source_event_type, __ATOMIC_ACQUIRE);
      out->ready_cycles = __atomic_load_n (&slot->ready_cycles, __ATOMIC_ACQUIRE);
      /* Id 0: the hook told of the source before GLib attached it. */
      if (__atomic_load_n (&slot->seq, __ATOMIC_RELAXED) != seq ||
          (out->source_id != 0 && out->source_id != source->source_id))
        continue;
      /* Only the first dispatch of an idle waited since its attach. */
      if (out->ready_cycles != 0)
        {
          guint64 expected = out->ready_cycles;

          if (!__atomic_compare_exchange_n (&slot->ready_cycles, &expected, 0, FALSE,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            out->ready_cycles = 0;
        }
      return TRUE;
    }
  return FALSE;
}

/* auto_lookup(), or the calling thread's last answer for @source if no
 * source was attached since: its entry, or NULL. */
static inline const ParentSlot *
auto_lookup_cached (AutoStack *stack,
                    GSource   *source)
{
  guint generation = __atomic_load_n (&attach_generation, __ATOMIC_ACQUIRE);

  if (G_LIKELY (stack->looked_up == source && stack->looked_up_id == source->source_id &&
                stack->looked_up_generation == generation))
    {
      /* The ready time is the first dispatch's only. */
      stack->entry.ready_cycles = 0;
      return stack->found ? &stack->entry : NULL;
    }
  stack->found = auto_lookup (source, &stack->entry);
  stack->looked_up = source;
  stack->looked_up_id = source->source_id;
  stack->looked_up_generation = generation;
  return stack->found ? &stack->entry : NULL;
}

/* The text of @slot's NAME_DEF, in the owner's buffer. Intact while the
 * record is less than a capacity behind the head: name_refresh sees to
 * that. */
static inline const char *
name_slot_text (const Buffer   *buffer,
                const NameSlot *slot)
{
  return (const char *) buffer->data + (slot->defined_at & (buffer->capacity - 1)) +
         sizeof (PerfmonTaskRingNameRecord);
}

static inline NameSlot *
name_slot_for (Buffer     *buffer,
               const char *name)
{
  guint64 key = (guint64) (guintptr) name;

  return &buffer->names[((key * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)) >> 57) & (NAME_SLOTS - 1)];
}

/* The number of @name in @buffer when the name cache cannot tell at once:
 * the slot's, if it holds the same text, else a new one; a NAME_DEF is
 * written unless the slot's is recent enough. 0 if that record was
 * dropped. */
static G_GNUC_NO_INLINE guint32
name_id_slowly (Buffer     *buffer,
                NameSlot   *slot,
                const char *name,
                guint       generation)
{
  RecordSlot record_slot;
  PerfmonTaskRingNameRecord *record;
  guint64 age = buffer->head - slot->defined_at;
  gboolean same = slot->key == name && slot->id != 0 && age < buffer->name_intact &&
                  strncmp (name, name_slot_text (buffer, slot), slot->compare_len) == 0;
  gsize len;
  guint size;
  guint32 id;

  if (same && age < buffer->name_refresh)
    {
      slot->generation = generation;
      return slot->id;
    }

  len = _perfmon_utf8_cut (name, strnlen (name, AUTO_NAME_MAX + 1), AUTO_NAME_MAX);
  size = (guint) ((sizeof *record + len + 1 + 7) & ~(gsize) 7);
  record = record_open_in (&record_slot, buffer, size);
  if (record == NULL)
    return 0;
  /* A refresh keeps the number: a reader may find only the later one. */
  if (same)
    id = slot->id;
  else if ((id = ++buffer->last_name_id) == 0)
    id = ++buffer->last_name_id;
  record->name_id = id;
  record->reserved = 0;
  memcpy (record->text, name, len);
  memset (record->text + len, 0, size - sizeof *record - len);
  record_close (&record_slot, &record->header, PERFMON_TASK_RING_NAME_DEF, size);

  slot->key = name;
  slot->id = id;
  slot->defined_at = record_slot.start;
  slot->compare_len = (guint32) (name[len] == '\0' ? len + 1 : len);
  slot->generation = generation;
  return id;
}

/* The number of @name in @buffer, defining it if needed. The common case
 * compares the pointer only: core says when a pointer may name another
 * text. */
static inline guint32
name_id_for (Buffer     *buffer,
             const char *name)
{
  NameSlot *slot = name_slot_for (buffer, name);
  guint generation = __atomic_load_n (&_perfmon_dispatch_names_generation, __ATOMIC_ACQUIRE);

  if (G_LIKELY (slot->key == name && slot->generation == generation && slot->id != 0 &&
                buffer->head - slot->defined_at < buffer->name_refresh))
    return slot->id;
  return name_id_slowly (buffer, slot, name, generation);
}

static inline void
record_auto (const PerfmonTaskIds *ids,
             guint64               parent_id,
             guint64               ready_cycles,
             const char           *name)
{
  Buffer *buffer = current_buffer ();
  RecordSlot slot;
  PerfmonTaskRingAutoRecord *record;
  guint32 name_id;

  if (buffer == NULL)
    return;
  name_id = name_id_for (buffer, name);
  record = record_open_in (&slot, buffer, sizeof *record);
  if (record == NULL)
    return;
  record->task_id = ids->task_id;
  record->parent_id = parent_id;
  record->source_event_id = ids->source_event_id;
  record->source_event_type = ids->source_event_type;
  record->name_id = name_id;
  record->ready_time = ready_cycles;
  record_close (&slot, &record->header, PERFMON_TASK_RING_AUTO, sizeof *record);
}

/* A source's ready time (monotonic µs) as a cycle-counter reading. */
static G_GNUC_NO_INLINE guint64
ready_time_to_cycles (gint64 ready_us)
{
  gint64 late_us = g_get_monotonic_time () - ready_us;
  guint64 now = _perfmon_clock_cycles ();
  guint64 late = late_us > 0 ? _perfmon_clock_us_to_cycles (late_us) : 0;

  return late < now ? now - late : 0;
}

static gpointer
auto_dispatch_begin (GSource    *source,
                     const char *name)
{
  AutoStack *stack;
  PerfmonTaskContext *saved;
  PerfmonTaskIds ids;
  const ParentSlot *entry;
  guint64 parent;
  guint64 ready_cycles = 0;
  gint64 ready_us;

  if (G_UNLIKELY (__atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED) == 0))
    return NULL;
  /* The wrappers' sources are tasks of their own already. (By prepare:
   * the hook may replace a source's dispatch, not its prepare.) */
  if (_perfmon_dispatch_is_task_source (source))
    return NULL;
  stack = &auto_stack;
  /* Keeps the address in a register: gcc would call __tls_get_addr() again
   * after every call. */
  __asm__ ("" : "+r" (stack));
  if (G_UNLIKELY (_perfmon_tracer_tls.auto_depth >= AUTO_DEPTH))
    return NULL;

  ids.task_id = new_id ();
  entry = auto_lookup_cached (stack, source);
  if (entry != NULL)
    {
      parent = entry->parent_id != 0 ? entry->parent_id : ids.task_id;
      ids.source_event_id = entry->source_event_id;
      ids.source_event_type = entry->source_event_type;
      ready_cycles = entry->ready_cycles;
    }
  else
    {
      parent = ids.task_id;
      ids.source_event_id = _perfmon_tracer_tls.source_event_id;
      ids.source_event_type = _perfmon_tracer_tls.source_event_type;
    }

  ready_us = g_source_get_ready_time (source);
  if (ready_us >= 0)
    ready_cycles = ready_time_to_cycles (ready_us);

  record_auto (&ids, parent, ready_cycles, name);
  saved = &stack->saved[_perfmon_tracer_tls.auto_depth++];
  context_enter (&ids, saved);
  return saved;
}

static void
auto_dispatch_end (GSource  *source,
                   gpointer  token)
{
  if (token == NULL)
    return;
  context_leave (token);
  _perfmon_tracer_tls.auto_depth--;
}

const PerfmonDispatchObserver _perfmon_automatic_task_observer = {
  .attached = auto_attached,
  .dispatch_begin = auto_dispatch_begin,
  .dispatch_end = auto_dispatch_end,
};

