/* perfmond-filter.c: what perfmond's connection drops before it is queued
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "perfmond-filter.h"

#include <limits.h>
#include <perfmon.h>

#include "perfmond-log.h"
#include "perfmon-heap-trim.h"

/* The bytes of Monitor1 signals taken from one process per second (besides
 * --max-signals): a few hang reports. */
#define MAX_SIGNAL_BYTES_PER_S (1024 * 1024)
/* Ping signals of one process per second, a budget of their own: a ping
 * is written every hangs-per-ping hangs (50), a signal is a path, and one
 * dropped only delays its ping until the next rescan of the directory. */
#define MAX_PING_SIGNALS_PER_S 50
/* The arguments of a call to the daemon: its methods take a pid, a time
 * and a hang id at most. */
#define MAX_CALL_BODY_BYTES 4096
/* A message dropped this big gives its memory back to the system (in the
 * filter: GDBus's worker thread). */
#define TRIM_AFTER_BYTES (1024 * 1024)

/* The signal budget of a registered process, kept by the connection's
 * filter (GDBus's worker thread) under its lock. */
typedef struct
{
  guint    pid;
  gint64   window_start;
  guint    window_signals;
  gsize    window_bytes;
  guint64  dropped;
  gint64   drop_logged_at;
  /* Ping signals have a budget of their own: a Hang flood never delays
   * a ping (and a dropped Ping only delays one: the uploader rescans). */
  gint64   ping_window_start;
  guint    ping_window_signals;
} SignalBudget;

struct _PerfmondFilter
{
  GMutex      lock;
  guint       max_signals;      /* --max-signals */
  GHashTable *budgets;          /* unique name → SignalBudget * */
  guint64     signals_dropped;
  guint64     calls_refused;
};

PerfmondFilter *
perfmond_filter_new (guint max_signals)
{
  PerfmondFilter *self = g_atomic_rc_box_new0 (PerfmondFilter);

  g_mutex_init (&self->lock);
  self->max_signals = max_signals;
  self->budgets = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  return self;
}

static void
filter_clear (PerfmondFilter *self)
{
  g_hash_table_unref (self->budgets);
  g_mutex_clear (&self->lock);
}

PerfmondFilter *
perfmond_filter_ref (PerfmondFilter *self)
{
  return g_atomic_rc_box_acquire (self);
}

void
perfmond_filter_unref (PerfmondFilter *self)
{
  g_atomic_rc_box_release_full (self, (GDestroyNotify) filter_clear);
}

/* Once a big message was dropped, the heap is given back a moment later
 * (libperfmon-support.a), by a short-lived thread of perfmon's: never the
 * program's threads. */
static void
schedule_trim (void)
{
  _perfmon_heap_trim_soon ("perfmond-trim");
}

/* GDBus's worker thread, for every message: the Monitor1 signals of a
 * process that is not registered, or over its budget, and calls to the
 * daemon with oversize arguments are dropped here, before GDBus queues
 * them for the main thread, so that a flood costs the time to read it and
 * nothing piles up. */
GDBusMessage *
perfmond_filter_message (GDBusConnection *connection,
                         GDBusMessage    *message,
                         gboolean         incoming,
                         gpointer         user_data)
{
  PerfmondFilter *self = user_data;
  GDBusMessageType type;
  GVariant *body;
  gsize size;

  if (!incoming)
    return message;

  type = g_dbus_message_get_message_type (message);
  body = g_dbus_message_get_body (message);
  size = body != NULL ? g_variant_get_size (body) : 0;

  if (type == G_DBUS_MESSAGE_TYPE_SIGNAL &&
      g_strcmp0 (g_dbus_message_get_interface (message), PERFMON_MONITOR_INTERFACE) == 0)
    {
      const char *sender = g_dbus_message_get_sender (message);
      SignalBudget *budget;
      gint64 now = g_get_monotonic_time ();
      gboolean keep = FALSE;
      gboolean log = FALSE;
      guint64 dropped = 0;
      guint pid = 0;

      g_mutex_lock (&self->lock);
      budget = sender != NULL ? g_hash_table_lookup (self->budgets, sender) : NULL;
      if (budget != NULL && g_strcmp0 (g_dbus_message_get_member (message), "Ping") == 0)
        {
          if (now - budget->ping_window_start >= G_USEC_PER_SEC)
            {
              budget->ping_window_start = now;
              budget->ping_window_signals = 0;
            }
          keep = size <= PATH_MAX + 64 && budget->ping_window_signals < MAX_PING_SIGNALS_PER_S;
          if (keep)
            budget->ping_window_signals++;
          else
            budget->dropped++;
        }
      else if (budget != NULL)
        {
          if (now - budget->window_start >= G_USEC_PER_SEC)
            {
              budget->window_start = now;
              budget->window_signals = 0;
              budget->window_bytes = 0;
            }
          keep = size <= PERFMOND_MAX_HANG_REPORT_BYTES + 1024 &&
                 budget->window_signals < self->max_signals &&
                 budget->window_bytes + size <= MAX_SIGNAL_BYTES_PER_S;
          if (keep)
            {
              budget->window_signals++;
              budget->window_bytes += size;
            }
          else
            {
              budget->dropped++;
              if (budget->drop_logged_at == 0 || now - budget->drop_logged_at >= 60 * G_USEC_PER_SEC)
                {
                  budget->drop_logged_at = now;
                  log = TRUE;
                  dropped = budget->dropped;
                  pid = budget->pid;
                }
            }
        }
      if (!keep)
        self->signals_dropped++;
      g_mutex_unlock (&self->lock);

      /* Said at most once a minute, so that the flood does not move on to
       * the journal. */
      if (log)
        perfmond_log_event (G_LOG_LEVEL_MESSAGE, PERFMOND_MESSAGE_ID_THROTTLED, pid, NULL, -1,
                   "pid %u (%s): dropping its signals over %u or %d KiB a second (--max-signals), "
                   "or of more than %d KiB, %" G_GUINT64_FORMAT " so far", pid, sender,
                   self->max_signals, MAX_SIGNAL_BYTES_PER_S / 1024,
                   PERFMOND_MAX_HANG_REPORT_BYTES / 1024, dropped);
      if (keep)
        return message;
      g_object_unref (message);
      if (size >= TRIM_AFTER_BYTES)
        schedule_trim ();
      return NULL;
    }

  if (_perfmon_refuse_big_call (connection, message, PERFMON_DAEMON_OBJECT_PATH, MAX_CALL_BODY_BYTES,
                                "perfmond-trim"))
    {
      g_mutex_lock (&self->lock);
      self->calls_refused++;
      g_mutex_unlock (&self->lock);
      return NULL;
    }

  return message;
}

void
perfmond_filter_budget_add (PerfmondFilter *self,
                            const char     *bus_name,
                            guint           pid)
{
  SignalBudget *budget = g_new0 (SignalBudget, 1);

  budget->pid = pid;
  g_mutex_lock (&self->lock);
  g_hash_table_replace (self->budgets, g_strdup (bus_name), budget);
  g_mutex_unlock (&self->lock);
}

void
perfmond_filter_budget_remove (PerfmondFilter *self,
                               const char     *bus_name)
{
  g_mutex_lock (&self->lock);
  g_hash_table_remove (self->budgets, bus_name);
  g_mutex_unlock (&self->lock);
}

void
perfmond_filter_get_counts (PerfmondFilter *self,
                            guint64        *signals_dropped,
                            guint64        *calls_refused)
{
  g_mutex_lock (&self->lock);
  *signals_dropped = self->signals_dropped;
  *calls_refused = self->calls_refused;
  g_mutex_unlock (&self->lock);
}
