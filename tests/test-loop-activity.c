/* test-loop-activity.c: the busy stretches a loop publishes for a watchdog
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-clock-private.h"
#include "perfmon-loop-activity-private.h"

typedef struct
{
  PerfmonLoopActivity activity;
} Fixture;

static void
fixture_set_up (Fixture      *fixture,
                gconstpointer data)
{
  _perfmon_loop_activity_init (&fixture->activity);
  g_atomic_int_set (&fixture->activity.watched, TRUE);
}

static void
fixture_tear_down (Fixture      *fixture,
                   gconstpointer data)
{
  _perfmon_loop_activity_clear (&fixture->activity);
}

static gint
phase (PerfmonLoopActivity *activity)
{
  return g_atomic_int_get (&activity->phase);
}

/* busy_begin opens stretch n+1 at the given time, busy_end closes it. */
static void
test_stretches (Fixture      *fixture,
                gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;

  g_assert_cmpuint (activity->n_stretches, ==, 0);
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_IDLE);

  _perfmon_loop_activity_busy_begin (activity, 100);
  g_assert_cmpuint (activity->n_stretches, ==, 1);
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_BUSY);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 1)->begin, ==, 100);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 1)->end, ==, 0);

  _perfmon_loop_activity_busy_end (activity, 250);
  g_assert_cmpuint (activity->n_stretches, ==, 1);
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_IDLE);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 1)->end, ==, 250);

  _perfmon_loop_activity_busy_begin (activity, 300);
  g_assert_cmpuint (activity->n_stretches, ==, 2);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 2)->begin, ==, 300);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 2)->end, ==, 0);
  /* The ring wraps: stretch n and n + RECENT share a slot. */
  g_assert_true (_perfmon_loop_activity_stretch (activity, 2) ==
                 _perfmon_loop_activity_stretch (activity, 2 + PERFMON_LOOP_RECENT_STRETCHES));
}

/* A deliberate wait is idle time inside a stretch: the stretch ends at the
 * outermost idle_begin, a new one begins at the outermost idle_end. On a
 * thread no watchdog adopted, they do nothing. */
static void
test_idle (Fixture      *fixture,
           gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;

  _perfmon_loop_activity_idle_begin ();
  _perfmon_loop_activity_idle_end ();
  g_assert_cmpuint (activity->n_stretches, ==, 0);

  _perfmon_loop_activity_adopt_thread (activity);
  g_assert_cmpint (activity->thread_id, !=, 0);
  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  g_assert_cmpuint (activity->n_stretches, ==, 1);

  _perfmon_loop_activity_idle_begin ();
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_IDLE);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 1)->end, !=, 0);
  _perfmon_loop_activity_idle_begin ();   /* nested: nothing more */
  _perfmon_loop_activity_idle_end ();
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_IDLE);
  g_assert_cmpuint (activity->n_stretches, ==, 1);
  _perfmon_loop_activity_idle_end ();
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_BUSY);
  g_assert_cmpuint (activity->n_stretches, ==, 2);

  /* Not watched any more: nothing is published. */
  g_atomic_int_set (&activity->watched, FALSE);
  _perfmon_loop_activity_idle_begin ();
  _perfmon_loop_activity_idle_end ();
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_BUSY);
  g_assert_cmpuint (activity->n_stretches, ==, 2);
}

static void
test_idle_end_unbalanced (void)
{
  if (g_test_subprocess ())
    {
      _perfmon_loop_activity_idle_end ();
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*no deliberate wait was begun*");
}

/* Waits until a watchdog thread asked to be woken (it sleeps). */
static void
wait_until_asleep (PerfmonLoopActivity *activity)
{
  while (phase (activity) != PERFMON_LOOP_IDLE_WATCHER_ASLEEP)
    g_usleep (1000);
}

/* The wake-ups the thread sent so far. */
static guint64
n_wakes (PerfmonLoopActivity *activity)
{
  guint64 wakes;

  wakes = __atomic_load_n (&activity->n_wakes, __ATOMIC_SEQ_CST);
  return wakes;
}

static gpointer
sleep_while_idle_thread (gpointer data)
{
  PerfmonLoopActivity *activity = data;

  _perfmon_loop_activity_sleep_while_idle (activity, G_MAXINT64);
  return GINT_TO_POINTER (TRUE);
}

/* The watchdog's side: a watchdog that sleeps while the loop is idle, with
 * no deadline, is woken by the next busy_begin, and by a stop. */
static void
test_sleep_while_idle (Fixture      *fixture,
                       gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;
  GThread *watchdog;

  watchdog = g_thread_new ("watchdog", sleep_while_idle_thread, activity);
  /* Until it sleeps, the phase stays IDLE; then it asked to be woken. */
  wait_until_asleep (activity);
  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  g_assert_true (g_thread_join (watchdog));
  g_assert_cmpuint (n_wakes (activity), ==, 1);

  /* A busy loop: the watchdog does not sleep at all. */
  g_assert_true (g_thread_join (g_thread_new ("watchdog", sleep_while_idle_thread, activity)));
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_BUSY);

  /* Idle again, then stopped. */
  _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
  watchdog = g_thread_new ("watchdog", sleep_while_idle_thread, activity);
  wait_until_asleep (activity);
  _perfmon_loop_activity_stop_watcher (activity);
  g_assert_true (g_thread_join (watchdog));
  g_assert_true (_perfmon_loop_activity_watcher_stopping (activity));
}

static gpointer
sleep_while_idle_deadline_thread (gpointer data)
{
  PerfmonLoopActivity *activity = data;

  /* An hour: what ends this sleep in the test is the thread, or a stop. */
  _perfmon_loop_activity_sleep_while_idle (activity, g_get_monotonic_time () + G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC);
  return GINT_TO_POINTER (TRUE);
}

/* With a deadline too (a jank session that has a sample to take later),
 * the watchdog asleep while the loop is idle is woken by the next
 * busy_begin: it used to sleep on to the deadline, and a stretch that
 * began and ended meanwhile (a hang, a long dispatch with add-on code to
 * sample) went unseen. A deadline that passes takes the wish to be woken
 * back: the next busy_begin makes no system call. */
static void
test_sleep_while_idle_deadline (Fixture      *fixture,
                                gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;
  GThread *watchdog;

  watchdog = g_thread_new ("watchdog", sleep_while_idle_deadline_thread, activity);
  wait_until_asleep (activity);
  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  g_assert_true (g_thread_join (watchdog));
  g_assert_cmpuint (n_wakes (activity), ==, 1);

  /* A deadline that passes: the phase is IDLE again, and busy_begin
   * wakes no one. */
  _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
  g_assert_true (_perfmon_loop_activity_sleep_while_idle (activity, g_get_monotonic_time () + 1000));
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_IDLE);
  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  g_assert_cmpuint (n_wakes (activity), ==, 1);

  /* And a stop ends it. */
  _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
  watchdog = g_thread_new ("watchdog", sleep_while_idle_deadline_thread, activity);
  wait_until_asleep (activity);
  _perfmon_loop_activity_stop_watcher (activity);
  g_assert_true (g_thread_join (watchdog));
}

static gpointer
sleep_until_end_thread (gpointer data)
{
  PerfmonLoopActivity *activity = data;

  /* An hour: what ends this sleep in the test is the stretch's end. */
  _perfmon_loop_activity_sleep_until_end (activity, __atomic_load_n (&activity->n_stretches, __ATOMIC_SEQ_CST), NULL,
                                          g_get_monotonic_time () + G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC);
  return GINT_TO_POINTER (TRUE);
}

/* Starts a watchdog thread running @func (@data) and returns once it set
 * the wish at @wish: asleep then, most likely (it set the wish after it
 * read the count; if it is not asleep yet, its wait returns at once for a
 * wake-up, as it would). */
static GThread *
start_wishing_watchdog (GThreadFunc func,
                        gpointer    data,
                        gint       *wish)
{
  GThread *watchdog = g_thread_new ("watchdog", func, data);

  while (!__atomic_load_n (wish, __ATOMIC_SEQ_CST))
    g_usleep (1000);
  g_usleep (10000);
  return watchdog;
}

/* A watchdog asleep until a deadline of a stretch of a loop that wakes
 * rarely asks to be woken at the stretch's end, while the process runs,
 * not at the deadline, after the loop slept (a wake-up then costs a large
 * process several times more on a VM that shadows page tables:
 * tests/bench/bench-wakeup). busy_end wakes it, once; busy_next, which
 * ends a stretch without sleeping, does not; without the wish, busy_end
 * makes no system call. */
static void
test_wake_at_end (Fixture      *fixture,
                  gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;
  GThread *watchdog;

  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  watchdog = start_wishing_watchdog (sleep_until_end_thread, activity, &activity->watcher_wants_end);
  /* It sleeps: busy_next leaves it be. */
  _perfmon_loop_activity_busy_next (activity, _perfmon_clock_cycles ());
  g_assert_cmpuint (n_wakes (activity), ==, 0);
  g_assert_true (__atomic_load_n (&activity->watcher_wants_end, __ATOMIC_SEQ_CST));
  _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
  g_assert_true (g_thread_join (watchdog));
  g_assert_cmpuint (n_wakes (activity), ==, 1);
  g_assert_false (__atomic_load_n (&activity->watcher_wants_end, __ATOMIC_SEQ_CST));

  /* No wish: no wake-up. */
  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
  g_assert_cmpuint (n_wakes (activity), ==, 1);

  /* A stretch that is over already: no sleep at all, and no wish left. */
  _perfmon_loop_activity_sleep_until_end (activity, __atomic_load_n (&activity->n_stretches, __ATOMIC_SEQ_CST), NULL,
                                          g_get_monotonic_time () + G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC);
  g_assert_false (__atomic_load_n (&activity->watcher_wants_end, __ATOMIC_SEQ_CST));
}

typedef struct
{
  PerfmonLoopActivity *activity;
  guint64              n_exact_ends;
} ExactEndWait;

static gpointer
sleep_until_exact_end_thread (gpointer data)
{
  ExactEndWait *wait = data;

  /* An hour: what ends this sleep in the test is the thread's word. */
  _perfmon_loop_activity_sleep_until_end (wait->activity,
                                          __atomic_load_n (&wait->activity->n_stretches, __ATOMIC_SEQ_CST),
                                          &wait->n_exact_ends,
                                          g_get_monotonic_time () + G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC);
  return GINT_TO_POINTER (TRUE);
}

/* A watchdog that found the thread in something charged exactly (the JS
 * sampler's ticks would find the same) sleeps until the thread says it
 * ended: exact_end wakes it, once; without the wish it makes no system
 * call; an end that came after the watchdog looked, before
 * it slept, keeps it awake; so does the stretch's end. */
static void
test_wake_at_exact_end (Fixture      *fixture,
                        gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;
  ExactEndWait wait = { activity, 0 };
  GThread *watchdog;

  _perfmon_loop_activity_busy_begin (activity, _perfmon_clock_cycles ());
  for (guint i = 0; i < 2; i++)
    {
      guint64 wakes = n_wakes (activity);

      wait.n_exact_ends = __atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST);
      watchdog = start_wishing_watchdog (sleep_until_exact_end_thread, &wait, &activity->watcher_wants_exact_end);
      /* Asleep: a poll that cannot sleep leaves it be. */
      _perfmon_loop_activity_busy_next (activity, _perfmon_clock_cycles ());
      g_assert_cmpuint (n_wakes (activity), ==, wakes);
      _perfmon_loop_activity_exact_end (activity);
      g_assert_true (g_thread_join (watchdog));
      g_assert_cmpuint (n_wakes (activity), ==, wakes + 1);
      g_assert_false (__atomic_load_n (&activity->watcher_wants_exact_end, __ATOMIC_SEQ_CST));
      g_assert_false (__atomic_load_n (&activity->watcher_wants_end, __ATOMIC_SEQ_CST));
    }

  /* No wish: counted, no wake-up. */
  wait.n_exact_ends = __atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST);
  _perfmon_loop_activity_exact_end (activity);
  _perfmon_loop_activity_exact_end (activity);
  g_assert_cmpuint (n_wakes (activity), ==, 2);
  g_assert_cmpuint (__atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST), ==, wait.n_exact_ends + 2);

  /* Ends since the watchdog looked: it does not sleep (an hour, else). */
  sleep_until_exact_end_thread (&wait);
  g_assert_false (__atomic_load_n (&activity->watcher_wants_exact_end, __ATOMIC_SEQ_CST));

  /* The stretch's end wakes it too. */
  wait.n_exact_ends = __atomic_load_n (&activity->n_exact_ends, __ATOMIC_SEQ_CST);
  watchdog = start_wishing_watchdog (sleep_until_exact_end_thread, &wait, &activity->watcher_wants_exact_end);
  _perfmon_loop_activity_busy_end (activity, _perfmon_clock_cycles ());
  g_assert_true (g_thread_join (watchdog));
  g_assert_cmpuint (n_wakes (activity), ==, 3);

  /* A stretch that is over already: no sleep at all. */
  sleep_until_exact_end_thread (&wait);
}

/* A poll that cannot sleep: busy_next closes the stretch and opens the
 * next at the same time, with the phase left BUSY; before the first
 * stretch, or with a watchdog asleep, it is busy_end + busy_begin and
 * wakes the watchdog. */
static void
test_busy_next (Fixture      *fixture,
                gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;
  GThread *watchdog;

  _perfmon_loop_activity_busy_begin (activity, 100);
  _perfmon_loop_activity_busy_next (activity, 180);
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_BUSY);
  g_assert_cmpuint (activity->n_stretches, ==, 2);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 1)->end, ==, 180);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 2)->begin, ==, 180);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, 2)->end, ==, 0);

  /* The ring's slot of stretch n+1 held an old, ended stretch. */
  for (guint i = 0; i < PERFMON_LOOP_RECENT_STRETCHES; i++)
    _perfmon_loop_activity_busy_next (activity, 200 + i);
  g_assert_cmpuint (activity->n_stretches, ==, 2 + PERFMON_LOOP_RECENT_STRETCHES);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, activity->n_stretches)->end, ==, 0);

  /* Idle, the watchdog asleep: the next poll that cannot sleep wakes it. */
  _perfmon_loop_activity_busy_end (activity, 1000);
  watchdog = g_thread_new ("watchdog", sleep_while_idle_thread, activity);
  wait_until_asleep (activity);
  _perfmon_loop_activity_busy_next (activity, 2000);
  g_assert_true (g_thread_join (watchdog));
  g_assert_cmpint (phase (activity), ==, PERFMON_LOOP_BUSY);
  g_assert_cmpuint (_perfmon_loop_activity_stretch (activity, activity->n_stretches)->begin, ==, 2000);
  g_assert_cmpuint (n_wakes (activity), ==, 1);
}

/* Dispatches of the marks' minimum or more are marks, in order, with
 * their end and length; shorter ones are not; a reader that falls more
 * than the ring behind is told how many it lost. */
static void
test_marks (Fixture      *fixture,
            gconstpointer data)
{
  PerfmonLoopActivity *activity = &fixture->activity;
  PerfmonLoopMarkCopy marks[PERFMON_LOOP_MARKS];
  /* Long ago: the dispatches below fit in the stretch. */
  guint64 begin = _perfmon_clock_cycles () - 1000000;
  guint64 next = 0, lost = 0;
  guint n;

  /* No consumer: nothing noted. */
  _perfmon_loop_activity_busy_begin (activity, begin);
  _perfmon_loop_activity_note_dispatch (activity, "before", 5000);
  g_assert_cmpuint (_perfmon_loop_activity_read_marks (activity, &next, marks, 8, &lost), ==, 0);

  _perfmon_loop_activity_set_mark_min_cycles (activity, 1000);
  _perfmon_loop_activity_note_dispatch (activity, "short", 999);
  _perfmon_loop_activity_note_dispatch (activity, "long", 1000);
  _perfmon_loop_activity_note_dispatch (activity, "longer", 2000);
  n = _perfmon_loop_activity_read_marks (activity, &next, marks, 8, &lost);
  g_assert_cmpuint (n, ==, 2);
  g_assert_cmpuint (lost, ==, 0);
  g_assert_cmpstr (marks[0].name, ==, "long");
  g_assert_cmpuint (marks[0].cycles, ==, 1000);
  g_assert_cmpstr (marks[1].name, ==, "longer");
  g_assert_cmpuint (marks[1].cycles, ==, 2000);
  g_assert_cmpuint (marks[1].end, >=, begin + 2000);
  g_assert_cmpuint (marks[1].end, <=, _perfmon_clock_cycles ());
  g_assert_cmpuint (_perfmon_loop_activity_read_marks (activity, &next, marks, 8, &lost), ==, 0);

  /* Overrun by 10. */
  for (guint i = 0; i < PERFMON_LOOP_MARKS + 10; i++)
    _perfmon_loop_activity_note_dispatch (activity, "many", 1000 + i);
  n = _perfmon_loop_activity_read_marks (activity, &next, marks, PERFMON_LOOP_MARKS, &lost);
  g_assert_cmpuint (lost, ==, 10);
  g_assert_cmpuint (n, ==, PERFMON_LOOP_MARKS);
  g_assert_cmpuint (marks[0].cycles, ==, 1010);

  /* Stopped. */
  _perfmon_loop_activity_set_mark_min_cycles (activity, 0);
  _perfmon_loop_activity_note_dispatch (activity, "after", 5000);
  g_assert_cmpuint (_perfmon_loop_activity_read_marks (activity, &next, marks, 8, &lost), ==, 0);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/loop-activity/stretches", Fixture, NULL, fixture_set_up, test_stretches,
              fixture_tear_down);
  g_test_add ("/loop-activity/idle", Fixture, NULL, fixture_set_up, test_idle, fixture_tear_down);
  g_test_add_func ("/loop-activity/idle-end-unbalanced", test_idle_end_unbalanced);
  g_test_add ("/loop-activity/marks", Fixture, NULL, fixture_set_up, test_marks, fixture_tear_down);
  g_test_add ("/loop-activity/sleep-while-idle", Fixture, NULL, fixture_set_up,
              test_sleep_while_idle, fixture_tear_down);
  g_test_add ("/loop-activity/sleep-while-idle-deadline", Fixture, NULL, fixture_set_up,
              test_sleep_while_idle_deadline, fixture_tear_down);
  g_test_add ("/loop-activity/busy-next", Fixture, NULL, fixture_set_up, test_busy_next,
              fixture_tear_down);
  g_test_add ("/loop-activity/wake-at-exact-end", Fixture, NULL, fixture_set_up, test_wake_at_exact_end,
              fixture_tear_down);
  g_test_add ("/loop-activity/wake-at-end", Fixture, NULL, fixture_set_up, test_wake_at_end,
              fixture_tear_down);

  return g_test_run ();
}
