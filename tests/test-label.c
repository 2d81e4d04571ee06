/* test-label.c: the thread-local label stack
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon.h"
#include "perfmon-label-private.h"
#include "perfmon-no-syscalls.h"


/* The frames of @stack joined with "|", outermost first. */
static char *
read_stack (PerfmonLabelStack *stack,
            guint             *n_dropped)
{
  g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func (g_free);
  guint dropped = G_MAXUINT;

  g_assert_true (_perfmon_label_stack_read (stack, frames, &dropped));
  g_assert_cmpuint (dropped, !=, G_MAXUINT);
  if (n_dropped != NULL)
    *n_dropped = dropped;
  else
    g_assert_cmpuint (dropped, ==, 0);

  g_ptr_array_add (frames, NULL);
  return g_strjoinv ("|", (char **) frames->pdata);
}

static char *
read_current (guint *n_dropped)
{
  return read_stack (_perfmon_label_stack_get_current (), n_dropped);
}

#define assert_current(expected) \
  G_STMT_START { \
    g_autofree char *_frames = read_current (NULL); \
    g_assert_cmpstr (_frames, ==, (expected)); \
  } G_STMT_END

static void
test_push_pop_order (void)
{
  assert_current ("");
  perfmon_label_push ("outer", NULL);
  assert_current ("outer");
  perfmon_label_push ("middle", NULL);
  perfmon_label_push ("inner", NULL);
  assert_current ("outer|middle|inner");
  perfmon_label_pop ();
  assert_current ("outer|middle");
  perfmon_label_push ("again", NULL);
  assert_current ("outer|middle|again");
  perfmon_label_pop ();
  perfmon_label_pop ();
  perfmon_label_pop ();
  assert_current ("");
}

static void
test_dynamic (void)
{
  perfmon_label_push ("ChromeUtils::Import", "resource://gre/modules/A.jsm");
  perfmon_label_push ("plain", NULL);
  perfmon_label_push ("empty", "");
  assert_current ("ChromeUtils::Import resource://gre/modules/A.jsm|plain|empty");
  perfmon_label_pop ();
  perfmon_label_pop ();
  perfmon_label_pop ();
  assert_current ("");
}

static void
test_dynamic_copied (void)
{
  char buffer[32];

  g_strlcpy (buffer, "first", sizeof buffer);
  perfmon_label_push ("label", buffer);
  g_strlcpy (buffer, "second", sizeof buffer);
  memset (buffer, 'x', sizeof buffer - 1);
  assert_current ("label first");
  perfmon_label_pop ();
  assert_current ("");
}

static void
check_truncation (const char *dynamic,
                  gsize       expected_len)
{
  g_autofree char *expected = g_strdup_printf ("label %.*s", (int) expected_len, dynamic);
  g_autofree char *frames = NULL;

  perfmon_label_push ("label", dynamic);
  frames = read_current (NULL);
  perfmon_label_pop ();

  g_assert_cmpstr (frames, ==, expected);
  g_assert_true (g_utf8_validate (frames, -1, NULL));
}

static void
test_truncation (void)
{
  GString *text = g_string_new (NULL);

  /* Exactly the maximum: kept whole. */
  g_string_append_len (text, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                       PERFMON_LABEL_DYNAMIC_MAX);
  check_truncation (text->str, PERFMON_LABEL_DYNAMIC_MAX);

  /* One more ASCII byte: cut at the maximum. */
  g_string_append_c (text, 'b');
  check_truncation (text->str, PERFMON_LABEL_DYNAMIC_MAX);

  /* A 2-byte character over bytes 126 and 127: dropped whole. */
  g_string_truncate (text, PERFMON_LABEL_DYNAMIC_MAX - 1);
  g_string_append (text, "\xc3\xa9tail");   /* é */
  check_truncation (text->str, PERFMON_LABEL_DYNAMIC_MAX - 1);

  /* A 2-byte character over bytes 125 and 126: kept. */
  g_string_truncate (text, PERFMON_LABEL_DYNAMIC_MAX - 2);
  g_string_append (text, "\xc3\xa9tail");
  check_truncation (text->str, PERFMON_LABEL_DYNAMIC_MAX);

  /* A 4-byte character over bytes 125 to 128: dropped whole. */
  g_string_truncate (text, PERFMON_LABEL_DYNAMIC_MAX - 2);
  g_string_append (text, "\xf0\x9f\x98\x80tail");   /* 😀 */
  check_truncation (text->str, PERFMON_LABEL_DYNAMIC_MAX - 2);

  /* A 3-byte character over bytes 124 to 126: kept. */
  g_string_truncate (text, PERFMON_LABEL_DYNAMIC_MAX - 3);
  g_string_append (text, "\xe2\x82\xactail");   /* € */
  check_truncation (text->str, PERFMON_LABEL_DYNAMIC_MAX);

  g_string_free (text, TRUE);
}

static const char *const overflow_labels[] = {
  "l00", "l01", "l02", "l03", "l04", "l05", "l06", "l07", "l08", "l09",
  "l10", "l11", "l12", "l13", "l14", "l15", "l16", "l17", "l18", "l19",
  "l20", "l21", "l22", "l23", "l24", "l25", "l26", "l27", "l28", "l29",
  "l30", "l31", "l32", "l33", "l34", "l35", "l36", "l37", "l38", "l39",
  "l40", "l41", "l42", "l43", "l44", "l45", "l46", "l47", "l48", "l49",
  "l50", "l51", "l52", "l53", "l54", "l55", "l56", "l57", "l58", "l59",
  "l60", "l61", "l62", "l63", "l64", "l65", "l66", "l67", "l68", "l69",
};

static char *
expected_overflow (guint depth)
{
  GString *expected = g_string_new (NULL);

  for (guint i = 0; i < MIN (depth, PERFMON_LABEL_STACK_CAPACITY); i++)
    {
      if (i > 0)
        g_string_append_c (expected, '|');
      g_string_append (expected, overflow_labels[i]);
      if (i % 2 == 1)
        g_string_append_printf (expected, " d%u", i);
    }
  return g_string_free (expected, FALSE);
}

static void
test_overflow (void)
{
  const guint total = G_N_ELEMENTS (overflow_labels);
  guint dropped;

  G_STATIC_ASSERT (G_N_ELEMENTS (overflow_labels) > PERFMON_LABEL_STACK_CAPACITY + 2);

  for (guint i = 0; i < total; i++)
    {
      char dynamic[16];

      g_snprintf (dynamic, sizeof dynamic, "d%u", i);
      perfmon_label_push (overflow_labels[i], i % 2 == 1 ? dynamic : NULL);
    }

  for (guint depth = total; depth > 0; depth--)
    {
      g_autofree char *frames = read_current (&dropped);
      g_autofree char *expected = expected_overflow (depth);

      g_assert_cmpstr (frames, ==, expected);
      g_assert_cmpuint (dropped, ==, depth > PERFMON_LABEL_STACK_CAPACITY ? depth - PERFMON_LABEL_STACK_CAPACITY : 0);
      perfmon_label_pop ();
    }
  assert_current ("");

  /* Below the capacity again, a new push lands where it should. */
  for (guint i = 0; i < PERFMON_LABEL_STACK_CAPACITY + 3; i++)
    perfmon_label_push (overflow_labels[i], NULL);
  for (guint i = 0; i < 4; i++)
    perfmon_label_pop ();
  perfmon_label_push ("replaced", "yes");
  {
    g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func (g_free);

    g_assert_true (_perfmon_label_stack_read (_perfmon_label_stack_get_current (), frames, &dropped));
    g_assert_cmpuint (dropped, ==, 0);
    g_assert_cmpuint (frames->len, ==, PERFMON_LABEL_STACK_CAPACITY);
    g_assert_cmpstr (g_ptr_array_index (frames, PERFMON_LABEL_STACK_CAPACITY - 2), ==, "l62");
    g_assert_cmpstr (g_ptr_array_index (frames, PERFMON_LABEL_STACK_CAPACITY - 1), ==, "replaced yes");
  }
  for (guint i = 0; i < PERFMON_LABEL_STACK_CAPACITY; i++)
    perfmon_label_pop ();
  assert_current ("");
}

static gpointer
pop_on_fresh_thread (gpointer data)
{
  perfmon_label_pop ();
  return GUINT_TO_POINTER (_perfmon_label_count_stacks ());
}

static void
test_pop_empty (void)
{
  guint before = _perfmon_label_count_stacks ();
  GThread *thread;

  assert_current ("");
  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "*label stack*empty*");
  perfmon_label_pop ();
  g_test_assert_expected_messages ();
  assert_current ("");

  /* A thread that never pushed: no stack is created for the pop. */
  g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "*label stack*empty*");
  thread = g_thread_new ("pop-empty", pop_on_fresh_thread, NULL);
  g_assert_cmpuint (GPOINTER_TO_UINT (g_thread_join (thread)), ==, before);
  g_test_assert_expected_messages ();

  /* Still usable. */
  perfmon_label_push ("after", NULL);
  assert_current ("after");
  perfmon_label_pop ();
}

static void
guarded (void)
{
  PERFMON_AUTO_LABEL ("guarded");
  assert_current ("guarded");
  {
    char temporary[16];
    g_strlcpy (temporary, "dyn", sizeof temporary);
    PERFMON_AUTO_LABEL_DYNAMIC ("inner", temporary);
    PERFMON_AUTO_LABEL ("innermost");
    assert_current ("guarded|inner dyn|innermost");
  }
  assert_current ("guarded");
}

static void
test_guards (void)
{
  guarded ();
  assert_current ("");

  for (guint i = 0; i < 3; i++)
    {
      PERFMON_AUTO_LABEL_DYNAMIC ("loop", i == 1 ? "one" : NULL);
      if (i == 1)
        {
          assert_current ("loop one");
          continue;
        }
      assert_current ("loop");
    }
  assert_current ("");
}

/* --- threads ------------------------------------------------------------ */

typedef struct
{
  GMutex             lock;
  GCond              cond;
  const char        *label;
  PerfmonLabelStack *stack;     /* a reference */
  gboolean           pushed;
  gboolean           release;
} ThreadData;

static gpointer
push_and_wait (gpointer user_data)
{
  ThreadData *data = user_data;

  perfmon_label_push (data->label, "thread");

  g_mutex_lock (&data->lock);
  data->stack = _perfmon_label_stack_ref (_perfmon_label_stack_get_current ());
  data->pushed = TRUE;
  g_cond_broadcast (&data->cond);
  while (!data->release)
    g_cond_wait (&data->cond, &data->lock);
  g_mutex_unlock (&data->lock);

  /* Exits with the frame still pushed: the stack goes anyway. */
  return NULL;
}

static GThread *
start_pusher (ThreadData *data,
              const char *label)
{
  GThread *thread;

  g_mutex_init (&data->lock);
  g_cond_init (&data->cond);
  data->label = label;
  thread = g_thread_new (label, push_and_wait, data);

  g_mutex_lock (&data->lock);
  while (!data->pushed)
    g_cond_wait (&data->cond, &data->lock);
  g_mutex_unlock (&data->lock);

  return thread;
}

static void
release_pusher (ThreadData *data,
                GThread    *thread)
{
  g_mutex_lock (&data->lock);
  data->release = TRUE;
  g_cond_broadcast (&data->cond);
  g_mutex_unlock (&data->lock);
  g_thread_join (thread);
}

static void
test_threads_independent (void)
{
  ThreadData one = { 0 }, two = { 0 };
  GThread *thread_one, *thread_two;
  g_autofree char *frames_one = NULL;
  g_autofree char *frames_two = NULL;

  perfmon_label_push ("main", NULL);
  thread_one = start_pusher (&one, "one");
  thread_two = start_pusher (&two, "two");

  g_assert_true (one.stack != two.stack);
  g_assert_true (one.stack != _perfmon_label_stack_get_current ());
  frames_one = read_stack (one.stack, NULL);
  frames_two = read_stack (two.stack, NULL);
  g_assert_cmpstr (frames_one, ==, "one thread");
  g_assert_cmpstr (frames_two, ==, "two thread");
  assert_current ("main");
  g_assert_cmpstr (_perfmon_label_stack_get_thread_name (one.stack), ==, "one");
  g_assert_cmpint (_perfmon_label_stack_get_thread_id (one.stack), !=,
                   _perfmon_label_stack_get_thread_id (two.stack));
  g_assert_true (_perfmon_label_stack_is_alive (one.stack));

  release_pusher (&one, thread_one);
  release_pusher (&two, thread_two);

  /* Our references keep the stacks of the exited threads readable. */
  g_assert_false (_perfmon_label_stack_is_alive (one.stack));
  g_clear_pointer (&frames_one, g_free);
  frames_one = read_stack (one.stack, NULL);
  g_assert_cmpstr (frames_one, ==, "one thread");

  _perfmon_label_stack_unref (one.stack);
  _perfmon_label_stack_unref (two.stack);
  g_mutex_clear (&one.lock);
  g_cond_clear (&one.cond);
  g_mutex_clear (&two.lock);
  g_cond_clear (&two.cond);
  perfmon_label_pop ();
}

static void
test_thread_exit_frees (void)
{
  ThreadData data = { 0 };
  GThread *thread;
  guint before, during;
  g_autoptr(GPtrArray) stacks = NULL;
  gboolean listed = FALSE;

  _perfmon_label_stack_get_current ();
  before = _perfmon_label_count_stacks ();

  thread = start_pusher (&data, "exiting");
  during = _perfmon_label_count_stacks ();
  g_assert_cmpuint (during, ==, before + 1);

  stacks = _perfmon_label_list_stacks ();
  g_assert_cmpuint (stacks->len, ==, during);
  for (guint i = 0; i < stacks->len; i++)
    listed |= g_ptr_array_index (stacks, i) == data.stack;
  g_assert_true (listed);
  g_clear_pointer (&stacks, g_ptr_array_unref);

  _perfmon_label_stack_unref (data.stack);   /* ours: the thread's is left */
  data.stack = NULL;
  release_pusher (&data, thread);

  /* The exit notify ran before the join returned; ASan checks the free. */
  g_assert_cmpuint (_perfmon_label_count_stacks (), ==, before);

  g_mutex_clear (&data.lock);
  g_cond_clear (&data.cond);
}

/* --- a reader against a writer ------------------------------------------ */

#define N_READS 100000
#define LONG_DYNAMIC 100

typedef struct
{
  PerfmonLabelStack *stack;      /* a reference, set by the writer */
  gint               stop;
  guint64            n_cycles;
} RaceData;

static gpointer
race_writer (gpointer user_data)
{
  RaceData *data = user_data;
  char ones[LONG_DYNAMIC + 1], twos[LONG_DYNAMIC + 1];

  memset (ones, '1', LONG_DYNAMIC);
  memset (twos, '2', LONG_DYNAMIC);
  ones[LONG_DYNAMIC] = twos[LONG_DYNAMIC] = '\0';

  perfmon_label_push ("warm-up", NULL);
  perfmon_label_pop ();
  g_atomic_pointer_set (&data->stack, _perfmon_label_stack_ref (_perfmon_label_stack_get_current ()));

  while (!g_atomic_int_get (&data->stop))
    {
      perfmon_label_push ("a", NULL);
      perfmon_label_push ("b", data->n_cycles % 2 ? ones : twos);
      perfmon_label_push ("c", NULL);
      perfmon_label_pop ();
      perfmon_label_pop ();
      perfmon_label_pop ();
      data->n_cycles++;
    }
  return NULL;
}

static void
test_reader_consistent (void)
{
  RaceData data = { 0 };
  GThread *writer = g_thread_new ("writer", race_writer, &data);
  g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func (g_free);
  PerfmonLabelStack *stack;
  char b_ones[LONG_DYNAMIC + 3], b_twos[LONG_DYNAMIC + 3];
  guint seen[4] = { 0 };
  guint n_failed = 0;

  memset (b_ones, '1', sizeof b_ones);
  memset (b_twos, '2', sizeof b_twos);
  b_ones[0] = b_twos[0] = 'b';
  b_ones[1] = b_twos[1] = ' ';
  b_ones[LONG_DYNAMIC + 2] = b_twos[LONG_DYNAMIC + 2] = '\0';

  while ((stack = g_atomic_pointer_get (&data.stack)) == NULL)
    g_thread_yield ();

  for (guint i = 0; i < N_READS; i++)
    {
      guint dropped = G_MAXUINT;

      g_ptr_array_set_size (frames, 0);
      if (!_perfmon_label_stack_read (stack, frames, &dropped))
        {
          n_failed++;
          continue;
        }
      g_assert_cmpuint (dropped, ==, 0);
      g_assert_cmpuint (frames->len, <=, 3);
      if (frames->len >= 1)
        g_assert_cmpstr (g_ptr_array_index (frames, 0), ==, "a");
      if (frames->len >= 2)
        {
          const char *b = g_ptr_array_index (frames, 1);
          if (strcmp (b, b_ones) != 0)
            g_assert_cmpstr (b, ==, b_twos);
        }
      if (frames->len >= 3)
        g_assert_cmpstr (g_ptr_array_index (frames, 2), ==, "c");
      seen[frames->len]++;
    }

  g_atomic_int_set (&data.stop, 1);
  g_thread_join (writer);

  g_test_message ("%u reads: %u empty, %u [a], %u [a,b], %u [a,b,c], %u unstable; %" G_GUINT64_FORMAT " writer cycles",
                  N_READS, seen[0], seen[1], seen[2], seen[3], n_failed, data.n_cycles);
  /* What the reader promises is in the loop above: a read that returns is
   * a stack the writer had, never a torn one. Whether its bounded retry
   * gets through while the writer rewrites the stack in a tight loop is a
   * matter of scheduling (a loaded machine, a sanitizer slowing the
   * reader's copy more than the writer's stores: most reads then give
   * up), and no promise: the stack of a hung thread, the one a hang report
   * reads, does not change. Once the writer is quiet, a read gets through
   * (read_stack() below asserts it). */
  g_assert_cmpuint (data.n_cycles, >, 0);

  /* The writer exited with an empty stack. */
  {
    g_autofree char *last = read_stack (stack, NULL);
    g_assert_cmpstr (last, ==, "");
  }
  _perfmon_label_stack_unref (stack);
}

/* --- no system calls ---------------------------------------------------- */

#define N_PAIRS 100000

static void
push_and_pop (gpointer data)
{
  const char *dynamic = data;

  for (guint i = 0; i < N_PAIRS; i++)
    {
      perfmon_label_push ("outer", NULL);
      perfmon_label_push ("inner", dynamic);
      {
        PERFMON_AUTO_LABEL ("guard");
        PERFMON_AUTO_LABEL_DYNAMIC ("guard-dynamic", dynamic);
      }
      perfmon_label_pop ();
      perfmon_label_pop ();
    }
  for (guint i = 0; i < PERFMON_LABEL_STACK_CAPACITY + 10; i++)
    perfmon_label_push ("deep", dynamic);
  for (guint i = 0; i < PERFMON_LABEL_STACK_CAPACITY + 10; i++)
    perfmon_label_pop ();
}

static void
test_no_syscalls (void)
{
  if (g_test_subprocess ())
    {
      char dynamic[64];

      g_strlcpy (dynamic, "some dynamic text", sizeof dynamic);
      /* The first push allocates and registers the stack. */
      perfmon_label_push ("warm-up", NULL);
      perfmon_label_pop ();

      run_without_system_calls (push_and_pop, dynamic);
    }

  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/label/push-pop-order", test_push_pop_order);
  g_test_add_func ("/label/dynamic", test_dynamic);
  g_test_add_func ("/label/dynamic-copied", test_dynamic_copied);
  g_test_add_func ("/label/truncation", test_truncation);
  g_test_add_func ("/label/overflow", test_overflow);
  g_test_add_func ("/label/pop-empty", test_pop_empty);
  g_test_add_func ("/label/guards", test_guards);
  g_test_add_func ("/label/threads-independent", test_threads_independent);
  g_test_add_func ("/label/thread-exit-frees", test_thread_exit_frees);
  g_test_add_func ("/label/reader-consistent", test_reader_consistent);
  g_test_add_func ("/label/no-syscalls", test_no_syscalls);

  return g_test_run ();
}
