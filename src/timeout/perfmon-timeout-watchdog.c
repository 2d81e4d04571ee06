/* perfmon-timeout-watchdog.c: the watchdog thread of timers and thread watches
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmon-log-dir-private.h"
#include "perfmon-process-private.h"
#include "perfmon-modules-private.h"
#include "perfmon-stack-capture-private.h"
#include "perfmon-stack-tree-private.h"
#include "perfmon-timeout-watchdog-private.h"
#include "perfmon-timer.h"

/* How the watchdog sleeps. `waiting` and `sleeping_until` say whether and
 * until when it waits on the cond; `wake_pending` asks it to run the due
 * work again before it waits. Someone with an earlier deadline sets
 * wake_pending, and signals only if the watchdog waits: while it is awake
 * the flag is enough, so that a burst of timer_set() calls during one of
 * its rounds costs no system call. */
static GMutex   timeout_lock;
static GCond    timeout_cond;
static GThread *watchdog;
static gboolean waiting;
static gboolean wake_pending;
static gint64   sleeping_until;
static char    *log_dir;       /* NULL: the default */
static guint64  n_rounds;      /* atomic */

static __thread gint64 current_tid;

void
_perfmon_timeout_lock (void)
{
  g_mutex_lock (&timeout_lock);
}

void
_perfmon_timeout_unlock (void)
{
  g_mutex_unlock (&timeout_lock);
}

static gpointer
watchdog_main (gpointer data)
{
  for (;;)
    {
      gint64 now_us = g_get_monotonic_time ();
      gint64 next_us;

      __atomic_fetch_add (&n_rounds, 1, __ATOMIC_RELAXED);
      next_us = MIN (_perfmon_timer_run_due (now_us),
                            _perfmon_thread_watcher_run_due (now_us));

      g_mutex_lock (&timeout_lock);
      if (!wake_pending)
        {
          waiting = TRUE;
          sleeping_until = next_us;
          while (!wake_pending)
            {
              if (next_us == G_MAXINT64)
                g_cond_wait (&timeout_cond, &timeout_lock);
              else if (!g_cond_wait_until (&timeout_cond, &timeout_lock, next_us))
                break;
            }
          waiting = FALSE;
        }
      wake_pending = FALSE;
      g_mutex_unlock (&timeout_lock);
    }

  return NULL;
}

void
_perfmon_timeout_schedule_locked (gint64 deadline_us)
{
  if (G_UNLIKELY (watchdog == NULL))
    {
      /* It runs for the rest of the process: nothing it serves can be
       * told apart from a later use. */
      watchdog = g_thread_new ("perfmon-timeout", watchdog_main, NULL);
      return;
    }

  if (waiting && deadline_us >= sleeping_until)
    return;
  wake_pending = TRUE;
  if (waiting)
    g_cond_signal (&timeout_cond);
}

gboolean
_perfmon_timeout_is_watchdog_thread (void)
{
  return watchdog != NULL && g_thread_self () == watchdog;
}

guint64
_perfmon_timeout_count_rounds (void)
{
  return __atomic_load_n (&n_rounds, __ATOMIC_RELAXED);
}

gint64
_perfmon_timeout_current_tid (void)
{
  if (G_UNLIKELY (current_tid == 0))
    current_tid = (gint64) syscall (SYS_gettid);
  return current_tid;
}

/* --- the log directory ------------------------------------------------- */

/**
 * perfmon_timeout_set_log_dir:
 * @dir: (nullable) (type filename): the directory, or %NULL for the default
 *
 * Sets where task timers ([func@Perfmon.timer_set] with
 * %PERFMON_TIMER_FLAG_LOG) and thread watchers write their logs. The
 * default is `$XDG_STATE_HOME/perfmon/watchdog`, the default
 * [property@Perfmon.HangMonitor:log-dir] too, so that all of perfmon's
 * logs are in one place and age together: before each new log, the oldest
 * of perfmon's logs there go until they take at most 10 MiB. The directory
 * is created when the first log is written.
 *
 * Any thread may call it; logs written from then on go to @dir.
 *
 * Since: 0.1
 */
void
perfmon_timeout_set_log_dir (const char *dir)
{
  char *copy = g_strdup (dir);

  g_mutex_lock (&timeout_lock);
  g_free (log_dir);
  log_dir = copy;
  g_mutex_unlock (&timeout_lock);
}

/**
 * perfmon_timeout_get_log_dir:
 *
 * Gets the directory set with perfmon_timeout_set_log_dir(), or the
 * default.
 *
 * Returns: (transfer full) (type filename): the log directory
 *
 * Since: 0.1
 */
char *
perfmon_timeout_get_log_dir (void)
{
  return _perfmon_timeout_dup_log_dir ();
}

char *
_perfmon_timeout_dup_log_dir (void)
{
  char *dir;

  g_mutex_lock (&timeout_lock);
  dir = g_strdup (log_dir);
  g_mutex_unlock (&timeout_lock);
  if (dir == NULL)
    dir = g_build_filename (g_get_user_state_dir (), "perfmon", "watchdog", NULL);
  return dir;
}

char *
_perfmon_timeout_write_log (const char *dir,
                            const char *prefix,
                            const char *contents)
{
  /* Every log of perfmon's in the directory counts towards its limit,
   * jank logs of the hang monitor included. */
  static const char * const own_prefixes[] = {
    PERFMON_TIMEOUT_LOG_PREFIX,
    PERFMON_THREAD_STUCK_LOG_PREFIX,
    PERFMON_LOG_DIR_JANK_PREFIX,
    NULL,
  };
  g_autoptr(GError) error = NULL;
  gsize length = strlen (contents);
  char *path;

  path = _perfmon_log_dir_write_new (dir, own_prefixes, PERFMON_LOG_DIR_DEFAULT_LIMIT, prefix,
                                     PERFMON_LOG_DIR_STACK_SUFFIX, contents, length, NULL, &error);
  if (path == NULL)
    g_warning ("Could not write a log in %s: %s", dir, error->message);
  return path;
}

/* --- stacks ------------------------------------------------------------ */

char *
_perfmon_timeout_describe_thread (gint64 tid)
{
  g_autofree char *name = _perfmon_thread_name (tid);

  return g_strdup_printf ("%s (tid %" G_GINT64_FORMAT ")", name, tid);
}

char *
_perfmon_timeout_capture_stack_text (gint64   tid,
                                     GError **error)
{
  g_autofree PerfmonCapturedStack *captured = g_new0 (PerfmonCapturedStack, 1);
  g_autoptr(PerfmonModules) modules = NULL;
  g_autoptr(PerfmonStackTree) tree = NULL;

  if (!_perfmon_stack_capture_init (error) ||
      !_perfmon_stack_capture (tid, PERFMON_STACK_CAPTURE_TIMEOUT_MS, captured, error))
    return NULL;

  /* One sample in the jank seed's tree format: the same text as a jank
   * stack log, so one reader serves both. */
  modules = _perfmon_modules_new ();
  tree = _perfmon_stack_tree_new ();
  _perfmon_stack_tree_add_captured (tree, modules, captured);

  return _perfmon_stack_tree_to_text (tree);
}
