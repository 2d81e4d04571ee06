/* test-timer.c: named task timers
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-test-dirs.h"
#include "perfmon-timeout-watchdog-private.h"

/* Generous: the machine is shared and slow; nothing here asserts timing,
 * only whether something happened within this. */
#define SAFETY_WAIT_MS 15000

typedef struct
{
  char *dir;
} Fixture;

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-timer-XXXXXX");
  perfmon_timeout_set_log_dir (fixture->dir);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  perfmon_timeout_set_log_dir (NULL);
  test_remove_tree (fixture->dir);
  g_free (fixture->dir);
}

/* The timer logs in @dir, sorted. */
static GPtrArray *
list_logs (const char *dir)
{
  GPtrArray *logs = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GDir) handle = g_dir_open (dir, 0, NULL);
  const char *name;

  while (handle != NULL && (name = g_dir_read_name (handle)) != NULL)
    if (g_str_has_prefix (name, PERFMON_TIMEOUT_LOG_PREFIX) && g_str_has_suffix (name, ".txt"))
      g_ptr_array_add (logs, g_build_filename (dir, name, NULL));
  g_ptr_array_sort (logs, (GCompareFunc) g_strcmp0);
  return logs;
}

static gboolean
wait_for_logs (const char *dir,
               guint       n)
{
  gint64 end = g_get_monotonic_time () + SAFETY_WAIT_MS * 1000;

  while (g_get_monotonic_time () < end)
    {
      g_autoptr(GPtrArray) logs = list_logs (dir);

      if (logs->len >= n)
        return TRUE;
      g_usleep (10000);
    }
  return FALSE;
}

static char *
read_only_log (const char *dir)
{
  g_autoptr(GPtrArray) logs = list_logs (dir);
  g_autoptr(GError) error = NULL;
  char *contents = NULL;

  g_assert_cmpuint (logs->len, ==, 1);
  g_file_get_contents (g_ptr_array_index (logs, 0), &contents, NULL, &error);
  g_assert_no_error (error);
  return contents;
}

/* Global, so that -rdynamic puts them in the dynamic symbol table, where
 * the stack's symbolizer (dladdr) finds them. The timer's thread is still
 * inside when it expires: the log must show it there. */
G_GNUC_NO_INLINE guint set_timer_and_wait_for_log (const char *name,
                                                   const char *dir);
G_GNUC_NO_INLINE guint
set_timer_and_wait_for_log (const char *name,
                            const char *dir)
{
  g_autoptr(GError) error = NULL;
  guint id = perfmon_timer_set (name, 50, PERFMON_TIMER_FLAG_LOG, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (id, !=, 0);
  g_assert_true (wait_for_logs (dir, 1));
  /* Keep the wait above from becoming a tail call. */
  __asm__ __volatile__ ("" ::: "memory");
  return id;
}

/* A program that never set its name: the log still names the process. */
static void
test_log_process_name (Fixture       *fixture,
                       gconstpointer  data)
{
  g_autofree char *contents = NULL;
  g_autofree char *cmdline = NULL;
  g_autofree char *name = NULL;
  g_autofree char *expected = NULL;

  /* It unsets the program name: a process of its own. */
  if (test_run_in_own_process ())
    return;

  g_set_prgname (NULL);
  set_timer_and_wait_for_log ("test log process name", fixture->dir);
  contents = read_only_log (fixture->dir);
  g_assert_true (g_file_get_contents ("/proc/self/cmdline", &cmdline, NULL, NULL));
  name = g_path_get_basename (cmdline);
  expected = g_strdup_printf ("Process: %s (pid %d)\n", name, (int) getpid ());
  g_test_message ("%s", contents);
  g_assert_nonnull (strstr (contents, expected));
}

static void
test_log (Fixture       *fixture,
          gconstpointer  data)
{
  g_autofree char *contents = NULL;
  guint id;

  id = set_timer_and_wait_for_log ("test log", fixture->dir);

  contents = read_only_log (fixture->dir);
  g_test_message ("%s", contents);
  g_assert_nonnull (strstr (contents, "Task timeout: test log\n"));
  g_assert_nonnull (strstr (contents, "Timeout: 50 ms\n"));
  g_assert_nonnull (strstr (contents, "PERFMON_TIMER_FLAG_LOG"));
  g_assert_nonnull (strstr (contents, "Stack of that thread:\n"));
  /* The seed's stack format, naming the function that set the timer. */
  g_assert_nonnull (strstr (contents, "(set_timer_and_wait_for_log+"));
  g_assert_nonnull (strstr (contents, "1 #00 pc "));

  /* It expired: nothing left to cancel. */
  g_assert_false (perfmon_timer_cancel (id));
}

typedef struct
{
  GMutex   lock;
  GCond    cond;
  guint    n_calls;
  guint    n_destroys;
  guint    id;
  char    *name;
  gboolean on_watchdog;
  gboolean destroyed_after_call;
} Calls;

static void
calls_init (Calls *calls)
{
  memset (calls, 0, sizeof *calls);
  g_mutex_init (&calls->lock);
  g_cond_init (&calls->cond);
}

static void
calls_clear (Calls *calls)
{
  g_mutex_clear (&calls->lock);
  g_cond_clear (&calls->cond);
  g_free (calls->name);
}

static void
on_timer (guint       id,
          const char *name,
          gpointer    user_data)
{
  Calls *calls = user_data;

  g_mutex_lock (&calls->lock);
  calls->n_calls++;
  calls->id = id;
  g_free (calls->name);
  calls->name = g_strdup (name);
  calls->on_watchdog = _perfmon_timeout_is_watchdog_thread ();
  g_cond_broadcast (&calls->cond);
  g_mutex_unlock (&calls->lock);
}

static void
on_destroy (gpointer user_data)
{
  Calls *calls = user_data;

  g_mutex_lock (&calls->lock);
  calls->n_destroys++;
  calls->destroyed_after_call = calls->n_calls > 0;
  g_cond_broadcast (&calls->cond);
  g_mutex_unlock (&calls->lock);
}

/* Waits until @calls has seen @n_destroys destroy notifies. */
static gboolean
wait_for_destroys (Calls *calls,
                   guint  n_destroys)
{
  gint64 end = g_get_monotonic_time () + SAFETY_WAIT_MS * 1000;
  gboolean done;

  g_mutex_lock (&calls->lock);
  while (calls->n_destroys < n_destroys &&
         g_cond_wait_until (&calls->cond, &calls->lock, end))
    ;
  done = calls->n_destroys >= n_destroys;
  g_mutex_unlock (&calls->lock);
  return done;
}

static void
test_callback (Fixture       *fixture,
               gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  Calls calls;
  guint id;

  calls_init (&calls);
  id = perfmon_timer_set ("test callback", 50, PERFMON_TIMER_FLAG_CALLBACK,
                          on_timer, &calls, on_destroy, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (id, !=, 0);

  g_assert_true (wait_for_destroys (&calls, 1));
  g_assert_cmpuint (calls.n_calls, ==, 1);
  g_assert_cmpuint (calls.id, ==, id);
  g_assert_cmpstr (calls.name, ==, "test callback");
  g_assert_true (calls.on_watchdog);
  g_assert_false (_perfmon_timeout_is_watchdog_thread ());
  g_assert_true (calls.destroyed_after_call);
  g_assert_false (perfmon_timer_cancel (id));

  /* No LOG flag, no log. */
  {
    g_autoptr(GPtrArray) logs = list_logs (fixture->dir);
    g_assert_cmpuint (logs->len, ==, 0);
  }
  calls_clear (&calls);
}

static void
test_cancelled (Fixture       *fixture,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) logs = NULL;
  Calls calls;
  Calls witness;
  guint id;
  guint witness_id;

  calls_init (&calls);
  calls_init (&witness);

  id = perfmon_timer_set ("test cancelled", 300,
                          PERFMON_TIMER_FLAG_LOG | PERFMON_TIMER_FLAG_CALLBACK,
                          on_timer, &calls, on_destroy, &error);
  g_assert_no_error (error);
  /* A later timer that does expire: once it has, the cancelled one's
   * deadline has long passed. */
  witness_id = perfmon_timer_set ("test cancelled witness", 600, PERFMON_TIMER_FLAG_CALLBACK,
                                  on_timer, &witness, on_destroy, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (witness_id, !=, id);

  g_assert_true (perfmon_timer_cancel (id));
  /* Destroyed at once, on this thread. */
  g_assert_cmpuint (calls.n_destroys, ==, 1);
  g_assert_false (perfmon_timer_cancel (id));
  g_assert_false (perfmon_timer_cancel (0));
  g_assert_false (perfmon_timer_cancel (12345678));

  g_assert_true (wait_for_destroys (&witness, 1));
  g_assert_cmpuint (witness.n_calls, ==, 1);
  g_assert_cmpuint (calls.n_calls, ==, 0);
  g_assert_cmpuint (calls.n_destroys, ==, 1);
  logs = list_logs (fixture->dir);
  g_assert_cmpuint (logs->len, ==, 0);

  calls_clear (&calls);
  calls_clear (&witness);
}

static void
test_limit (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  guint ids[PERFMON_TIMER_MAX_LIVE];
  guint id;

  for (guint i = 0; i < PERFMON_TIMER_MAX_LIVE; i++)
    {
      g_autofree char *name = g_strdup_printf ("test limit %u", i);

      ids[i] = perfmon_timer_set (name, 600000, PERFMON_TIMER_FLAG_LOG, NULL, NULL, NULL, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (ids[i], !=, 0);
      for (guint j = 0; j < i; j++)
        g_assert_cmpuint (ids[j], !=, ids[i]);
    }

  id = perfmon_timer_set ("test limit 128", 600000, PERFMON_TIMER_FLAG_LOG, NULL, NULL, NULL, &error);
  g_assert_cmpuint (id, ==, 0);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_LIMIT_REACHED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "128"));
  g_assert_nonnull (strstr (error->message, "test limit 128"));
  g_clear_error (&error);

  /* Cancelling one makes room for one; its slot's new id is a new id. */
  g_assert_true (perfmon_timer_cancel (ids[7]));
  id = perfmon_timer_set ("test limit again", 600000, PERFMON_TIMER_FLAG_LOG, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (id, !=, 0);
  g_assert_cmpuint (id, !=, ids[7]);
  g_assert_false (perfmon_timer_cancel (ids[7]));
  ids[7] = id;

  for (guint i = 0; i < PERFMON_TIMER_MAX_LIVE; i++)
    g_assert_true (perfmon_timer_cancel (ids[i]));
}

static void
count_destroy (gpointer data)
{
  (*(guint *) data)++;
}

static void
assert_bad_argument (const char           *name,
                     guint                 timeout_ms,
                     PerfmonTimerFlags     flags,
                     PerfmonTimerCallback  callback,
                     const char           *field)
{
  g_autoptr(GError) error = NULL;
  guint destroyed = 0;
  guint id;

  id = perfmon_timer_set (name, timeout_ms, flags, callback, &destroyed, count_destroy, &error);
  g_assert_cmpuint (id, ==, 0);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, field));
  /* Nothing is kept on failure: the data is freed at once. */
  g_assert_cmpuint (destroyed, ==, 1);
}

static void
test_bad_arguments (Fixture       *fixture,
                    gconstpointer  data)
{
  assert_bad_argument (NULL, 100, PERFMON_TIMER_FLAG_LOG, NULL, "name");
  assert_bad_argument ("", 100, PERFMON_TIMER_FLAG_LOG, NULL, "name");
  assert_bad_argument ("zero", 0, PERFMON_TIMER_FLAG_LOG, NULL, "timeout_ms");
  assert_bad_argument ("no callback", 100, PERFMON_TIMER_FLAG_CALLBACK, NULL, "callback is NULL");
  assert_bad_argument ("no flag", 100, PERFMON_TIMER_FLAG_LOG, on_timer, "lack CALLBACK");
  assert_bad_argument ("unknown", 100, (PerfmonTimerFlags) (1 << 5), NULL, "flags");
}

/* The recovery test's child: sets a LOG | RECOVERY timer and outlives it
 * by far, unless the timer aborts it first. */
G_GNUC_NO_INLINE void set_recovery_timer_and_hang (void);
G_GNUC_NO_INLINE void
set_recovery_timer_and_hang (void)
{
  g_autoptr(GError) error = NULL;

  perfmon_timer_set ("test recovery", 50, PERFMON_TIMER_FLAG_LOG | PERFMON_TIMER_FLAG_RECOVERY,
                     NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_usleep (SAFETY_WAIT_MS * 1000);
  __asm__ __volatile__ ("" ::: "memory");
}

static void
test_recovery (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *contents = NULL;
  g_autofree char *child_err = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) envp = NULL;
  const char *argv[] = { "/proc/self/exe", "-p", "/timer/recovery", "--GTestSubprocess", NULL };
  int status = 0;

  if (g_test_subprocess ())
    {
      perfmon_timeout_set_log_dir (g_getenv ("PERFMON_TEST_TIMER_LOG_DIR"));
      set_recovery_timer_and_hang ();
      _exit (3);   /* the timer did not abort */
    }

  /* g_test_trap_subprocess() does not tell how the child died; this needs
   * its wait status. */
  dir = test_make_tmp_dir ("perfmon-timer-XXXXXX");
  envp = g_environ_setenv (g_get_environ (), "PERFMON_TEST_TIMER_LOG_DIR", dir, TRUE);
  g_spawn_sync (NULL, (char **) argv, envp, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &child_err,
                &status, &error);
  g_assert_no_error (error);
  g_test_message ("child stderr: %s", g_strchomp (child_err));

  g_assert_true (WIFSIGNALED (status));
  g_assert_cmpint (WTERMSIG (status), ==, SIGABRT);
  g_assert_nonnull (strstr (child_err, "test recovery"));
  g_assert_nonnull (strstr (child_err, "aborting"));

  /* The log was written before the abort. */
  contents = read_only_log (dir);
  g_assert_nonnull (strstr (contents, "Task timeout: test recovery\n"));
  g_assert_nonnull (strstr (contents, "PERFMON_TIMER_FLAG_RECOVERY"));
  g_assert_nonnull (strstr (contents, "(set_recovery_timer_and_hang+"));
  test_remove_tree (dir);
}

static void
test_rate_limit (Fixture       *fixture,
                 gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) logs = NULL;
  Calls calls;

  calls_init (&calls);

  /* Two expiries of one task within the minute: one log. */
  for (guint i = 0; i < 2; i++)
    {
      guint id = perfmon_timer_set ("test rate limit", 20,
                                    PERFMON_TIMER_FLAG_LOG | PERFMON_TIMER_FLAG_CALLBACK,
                                    on_timer, &calls, on_destroy, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (id, !=, 0);
      /* The callback runs after the log: once it is done, so is the log. */
      g_assert_true (wait_for_destroys (&calls, i + 1));
    }
  logs = list_logs (fixture->dir);
  g_assert_cmpuint (logs->len, ==, 1);
  g_clear_pointer (&logs, g_ptr_array_unref);

  /* Another task has its own allowance. */
  perfmon_timer_set ("test rate limit other", 20,
                     PERFMON_TIMER_FLAG_LOG | PERFMON_TIMER_FLAG_CALLBACK,
                     on_timer, &calls, on_destroy, &error);
  g_assert_no_error (error);
  g_assert_true (wait_for_destroys (&calls, 3));
  logs = list_logs (fixture->dir);
  g_assert_cmpuint (logs->len, ==, 2);

  calls_clear (&calls);
}

/* The watchdog sleeps without a deadline while no timer is live: a
 * cancelled timer wakes it once at most (at its old deadline), and then
 * nothing does until the next timer is set. */
static void
test_idle (Fixture       *fixture,
           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  Calls calls;
  guint64 rounds;

  calls_init (&calls);
  g_assert_true (perfmon_timer_cancel (perfmon_timer_set ("test idle", 10, PERFMON_TIMER_FLAG_LOG,
                                                          NULL, NULL, NULL, &error)));
  g_assert_no_error (error);
  /* Expires after the cancelled one's deadline, in a later round. */
  perfmon_timer_set ("test idle witness", 50, PERFMON_TIMER_FLAG_CALLBACK, on_timer, &calls,
                     on_destroy, &error);
  g_assert_no_error (error);
  g_assert_true (wait_for_destroys (&calls, 1));

  rounds = _perfmon_timeout_count_rounds ();
  g_usleep (G_USEC_PER_SEC);
  g_assert_cmpuint (_perfmon_timeout_count_rounds (), ==, rounds);

  /* And it still wakes for the next timer. */
  perfmon_timer_set ("test idle after", 10, PERFMON_TIMER_FLAG_CALLBACK, on_timer, &calls,
                     on_destroy, &error);
  g_assert_no_error (error);
  g_assert_true (wait_for_destroys (&calls, 2));
  g_assert_cmpuint (calls.n_calls, ==, 2);
  calls_clear (&calls);
}

static gpointer
set_timer_and_exit (gpointer data)
{
  g_autoptr(GError) error = NULL;

  perfmon_timer_set ("test setter exited", 20, PERFMON_TIMER_FLAG_LOG, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return NULL;
}

/* The thread that set the timer is gone when it expires: the log says
 * why it has no stack, and nothing crashes. */
static void
test_setter_exited (Fixture       *fixture,
                    gconstpointer  data)
{
  g_autofree char *contents = NULL;

  g_thread_join (g_thread_new ("short-lived", set_timer_and_exit, NULL));
  g_assert_true (wait_for_logs (fixture->dir, 1));
  contents = read_only_log (fixture->dir);
  g_test_message ("%s", contents);
  g_assert_nonnull (strstr (contents, "Task timeout: test setter exited\n"));
  g_assert_nonnull (strstr (contents, "Stack of that thread unavailable: "));
}

static void
set_another_timer (guint       id,
                   const char *name,
                   gpointer    user_data)
{
  g_autoptr(GError) error = NULL;
  Calls *calls = user_data;

  /* Set on the watchdog, which is awake: it must look again before it
   * sleeps, or this one would wait for some later wake-up. */
  perfmon_timer_set ("test nested inner", 10,
                     PERFMON_TIMER_FLAG_CALLBACK | PERFMON_TIMER_FLAG_LOG,
                     on_timer, calls, on_destroy, &error);
  g_assert_no_error (error);
}

static void
test_set_from_callback (Fixture       *fixture,
                        gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  Calls calls;

  calls_init (&calls);
  perfmon_timer_set ("test nested outer", 10, PERFMON_TIMER_FLAG_CALLBACK, set_another_timer,
                     &calls, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (wait_for_destroys (&calls, 1));
  g_assert_cmpuint (calls.n_calls, ==, 1);
  g_assert_cmpstr (calls.name, ==, "test nested inner");

  /* Its LOG could not take the watchdog's own stack, and says so. */
  contents = read_only_log (fixture->dir);
  g_assert_nonnull (strstr (contents, "Stack of that thread unavailable: "));
  calls_clear (&calls);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/timer/log", Fixture, NULL, fixture_set_up, test_log, fixture_tear_down);
  g_test_add ("/timer/log-process-name", Fixture, NULL, fixture_set_up, test_log_process_name, fixture_tear_down);
  g_test_add ("/timer/callback", Fixture, NULL, fixture_set_up, test_callback, fixture_tear_down);
  g_test_add ("/timer/cancelled", Fixture, NULL, fixture_set_up, test_cancelled, fixture_tear_down);
  g_test_add ("/timer/limit", Fixture, NULL, fixture_set_up, test_limit, fixture_tear_down);
  g_test_add ("/timer/bad-arguments", Fixture, NULL, fixture_set_up, test_bad_arguments,
              fixture_tear_down);
  g_test_add ("/timer/rate-limit", Fixture, NULL, fixture_set_up, test_rate_limit, fixture_tear_down);
  g_test_add ("/timer/idle", Fixture, NULL, fixture_set_up, test_idle, fixture_tear_down);
  g_test_add ("/timer/setter-exited", Fixture, NULL, fixture_set_up, test_setter_exited,
              fixture_tear_down);
  g_test_add ("/timer/set-from-callback", Fixture, NULL, fixture_set_up, test_set_from_callback,
              fixture_tear_down);
  g_test_add_func ("/timer/recovery", test_recovery);

  return g_test_run ();
}
