/* perfmond-process.c: a monitored process as perfmond keeps it, and its
 * history of snapshots
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each process keeps the snapshots of the last --history seconds, and all
 * of them together at most --max-history-mib: over it, the process holding
 * the most gives up its oldest snapshot first. Everyone keeps their newest.
 */
#include "perfmond-process.h"

#include "perfmond-log.h"

static void
history_entry_free (HistoryEntry *entry)
{
  g_variant_unref (entry->variant);
  g_free (entry);
}

static void
process_clear (Process *process)
{
  g_assert (process->watch_id == 0 && process->signal_id == 0);
  g_assert (process->waiters->len == 0);
  g_free (process->bus_name);
  g_free (process->process_name);
  g_free (process->process_type);
  g_clear_object (&process->cancellable);
  g_clear_object (&process->latest);
  g_clear_pointer (&process->region, perfmon_publish_region_free);
  g_queue_clear_full (&process->history, (GDestroyNotify) history_entry_free);
  g_ptr_array_unref (process->waiters);
}

Process *
perfmond_process_ref (Process *process)
{
  return g_rc_box_acquire (process);
}

void
perfmond_process_unref (Process *process)
{
  g_rc_box_release_full (process, (GDestroyNotify) process_clear);
}

/* Rejections are logged for the first few, then for every 100th, so that a
 * process sending garbage every second does not fill the journal. */
void
perfmond_process_reject (Process    *process,
                         const char *what,
                         const char *why)
{
  process->rejected++;
  if (process->rejected <= 3 || process->rejected % 100 == 0)
    perfmond_log_event (G_LOG_LEVEL_WARNING, PERFMOND_MESSAGE_ID_REJECTED, process->pid, NULL, -1,
                        "pid %u (%s): rejected %s (%" G_GUINT64_FORMAT " so far): %s",
                        process->pid, process->bus_name, what, process->rejected, why);
}

/* The snapshot variant of @data, the bytes of a little-endian "v" as
 * GetSnapshotBytes returns them (its "ay") and a process publishes them in
 * its region. Nothing is copied or checked here: the
 * variant holds the bytes as they came, untrusted, which GVariant reads
 * safely (a part out of form reads as its default value), and
 * perfmond_snapshot_from_reply() checks it as it would GetSnapshot's.
 * Returns: (transfer full) */
GVariant *
perfmond_snapshot_variant_from_bytes (GBytes *data)
{
  g_autoptr(GVariant) wrapped = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE_VARIANT,
                                                                              data, FALSE));

  if (G_BYTE_ORDER == G_BIG_ENDIAN)
    {
      GVariant *swapped = g_variant_byteswap (wrapped);

      g_variant_unref (wrapped);
      wrapped = swapped;
    }
  return g_variant_get_variant (wrapped);
}

/* --- the history of snapshots --------------------------------------- */

/* The limits come from @config (checked: a poll interval above 0);
 * @processes (pid → Process *) are the processes whose histories share
 * the budget. */
void
perfmond_history_init (PerfmondHistory      *history,
                       const PerfmondConfig *config,
                       GHashTable           *processes)
{
  history->bytes = 0;
  history->newest_bytes = 0;
  history->max_bytes = (gsize) config->max_history_mib * 1024 * 1024;
  history->max_age_us = (gint64) config->history_s * G_USEC_PER_SEC;
  history->max_count = config->history_s * 1000u / config->poll_interval_ms + 1;
  history->processes = processes;
}

/* The newest snapshot, as a "v" for a reply: the tail of the history,
 * which always keeps the newest one. */
GVariant *
perfmond_history_latest_variant (Process *process)
{
  HistoryEntry *newest = g_queue_peek_tail (&process->history);

  return g_variant_new_variant (newest->variant);
}

static void
history_pop_oldest (PerfmondHistory *history,
                    Process         *process)
{
  HistoryEntry *entry = g_queue_pop_head (&process->history);

  /* The newest one goes only when the whole history does. */
  if (g_queue_is_empty (&process->history))
    history->newest_bytes -= entry->size;
  process->history_bytes -= entry->size;
  history->bytes -= entry->size;
  history_entry_free (entry);
}

/* What a decoded group holds beyond its share of the variant's bytes:
 * the PerfmonGroupStats object, its strings' allocations and its slot in
 * the snapshot's array (measured: about 230 bytes). */
#define DECODED_GROUP_BYTES 256

/* What keeping a snapshot of @variant_size bytes and @n_groups groups
 * costs: the variant, and while it is the newest, its decoded copy (as
 * big, and DECODED_GROUP_BYTES a group more). */
static gsize
history_cost (gsize variant_size,
              gsize n_groups)
{
  return 2 * variant_size + n_groups * DECODED_GROUP_BYTES + sizeof (HistoryEntry) + sizeof (GList);
}

void
perfmond_history_drop (PerfmondHistory *history,
                       Process         *process)
{
  while (!g_queue_is_empty (&process->history))
    history_pop_oldest (history, process);
  g_clear_object (&process->latest);
}

/* Whether a snapshot of @variant_size bytes of @process fits in the total
 * budget next to the newest snapshot of every other process (older ones
 * make room). In constant time: it is asked at every poll of every
 * process. */
gboolean
perfmond_history_has_room (PerfmondHistory *history,
                           Process         *process,
                           gsize            variant_size,
                           gsize            n_groups)
{
  HistoryEntry *own_newest = g_queue_peek_tail (&process->history);
  gsize others = history->newest_bytes - (own_newest != NULL ? own_newest->size : 0);
  gsize cost = history_cost (variant_size, n_groups);

  return cost <= history->max_bytes && others <= history->max_bytes - cost;
}

/* The newest snapshot of @process decoded, or %NULL before its first: for
 * the aggregate, the metrics and the page. Decoded when first asked for
 * after each poll, not at every poll: perfmond_snapshot_check_reply()
 * made sure it decodes. Owned by @process. */
PerfmonSnapshot *
perfmond_process_get_latest (Process *process)
{
  HistoryEntry *newest = g_queue_peek_tail (&process->history);
  g_autoptr(GError) error = NULL;

  if (process->latest != NULL || newest == NULL)
    return process->latest;
  process->latest = perfmon_snapshot_new_from_variant (newest->variant, &error);
  /* The check and the reader apply the same rules (fuzz-snapshot-variant
   * asserts it). */
  if (process->latest == NULL)
    g_critical ("pid %u: a checked snapshot does not decode: %s", process->pid, error->message);
  return process->latest;
}

/* Keeps @variant, checked (perfmond_snapshot_check_reply()), as the
 * newest snapshot of @process, taken at @timestamp. */
void
perfmond_history_add (PerfmondHistory *history,
                      Process         *process,
                      gint64           timestamp,
                      GVariant        *variant,
                      gsize            variant_size,
                      gsize            n_groups)
{
  HistoryEntry *entry = g_new0 (HistoryEntry, 1);
  gint64 max_age = history->max_age_us;
  guint max_count = history->max_count;
  gsize budget = history->max_bytes;
  HistoryEntry *newest;

  entry->timestamp = timestamp;
  /* The variant as received, checked: from GetSnapshotBytes it is one
   * buffer already; from GetSnapshot GDBus built it as a tree of small
   * values, which g_variant_get_data() flattens into one buffer, the
   * compact form to keep. */
  entry->variant = g_variant_ref (variant);
  g_variant_get_data (entry->variant);
  entry->variant_size = variant_size;
  entry->size = history_cost (variant_size, n_groups);
  newest = g_queue_peek_tail (&process->history);
  history->newest_bytes -= newest != NULL ? newest->size : 0;
  history->newest_bytes += entry->size;
  g_queue_push_tail (&process->history, entry);
  g_clear_object (&process->latest);
  process->history_bytes += entry->size;
  history->bytes += entry->size;

  newest = entry;
  while (process->history.length > 1)
    {
      HistoryEntry *oldest = g_queue_peek_head (&process->history);

      if (process->history.length <= max_count && newest->timestamp - oldest->timestamp <= max_age)
        break;
      history_pop_oldest (history, process);
    }

  /* Over the total budget, the process holding the most history gives up
   * its oldest snapshot: a process with huge snapshots shortens its own
   * history before anyone else's. Everyone keeps their newest one, which
   * perfmond_history_has_room() made sure fit. */
  while (history->bytes > budget)
    {
      Process *victim = NULL;
      GHashTableIter iter;
      gpointer value;

      g_hash_table_iter_init (&iter, history->processes);
      while (g_hash_table_iter_next (&iter, NULL, &value))
        {
          Process *candidate = value;

          if (candidate->history.length > 1 &&
              (victim == NULL || candidate->history_bytes > victim->history_bytes))
            victim = candidate;
        }
      if (victim == NULL)
        break;
      history_pop_oldest (history, victim);
    }
}
