/* test-stack-tree.c: aggregation of sampled stacks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-error.h"
#include "perfmon-stack-tree-private.h"

#define APP_PATH "/system/bin/appspawn"
#define APP_ID "55679d09bcdea35bb1e0d4e1d9a3e58f"
#define LIB_PATH "/system/lib/libfoo.so"
#define LIB_ID "66ac85e964777ae89f0c26c339093cd1"

/* A frame of module 0 (the program) or 1 (the library). */
static PerfmonStackFrame
app_frame (guint64     offset,
           const char *symbol,
           guint64     symbol_offset)
{
  return (PerfmonStackFrame) {
    .pc = 0x555500000000 + offset, .module_index = 0, .offset = offset,
    .symbol = symbol, .symbol_offset = symbol_offset,
    .path = APP_PATH, .build_id = APP_ID,
  };
}

static PerfmonStackFrame
lib_frame (guint64     offset,
           const char *symbol,
           guint64     symbol_offset)
{
  return (PerfmonStackFrame) {
    .pc = 0x7f0000000000 + offset, .module_index = 1, .offset = offset,
    .symbol = symbol, .symbol_offset = symbol_offset,
    .path = LIB_PATH, .build_id = LIB_ID,
  };
}

#define MAIN app_frame (0x90a9, "main", 396)
#define RUN  lib_frame (0x757c, "run", 12)
#define A    lib_frame (0x1000, "a", 1)
#define B    lib_frame (0x2000, "b", 2)
#define C    lib_frame (0x3000, "c", 3)
#define D    lib_frame (0x4000, "d", 4)
#define X    lib_frame (0x1100, "x", 5)
#define Y    lib_frame (0x1200, "y", 6)

#define ADD(tree, times, ...) \
  G_STMT_START { \
    const PerfmonStackFrame _frames[] = { __VA_ARGS__ }; \
    for (guint _i = 0; _i < (times); _i++) \
      _perfmon_stack_tree_add_sample ((tree), _frames, G_N_ELEMENTS (_frames)); \
  } G_STMT_END

#define assert_text(tree, expected) \
  G_STMT_START { \
    g_autofree char *_text = _perfmon_stack_tree_to_text (tree); \
    g_assert_cmpstr (_text, ==, (expected)); \
  } G_STMT_END

#define assert_heaviest(tree, expected) \
  G_STMT_START { \
    g_autofree char *_text = _perfmon_stack_tree_heaviest_stack (tree); \
    g_assert_cmpstr (_text, ==, (expected)); \
  } G_STMT_END

/* The seed's lines, part by part. */
static void
test_format (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();
  PerfmonStackFrame no_symbol = lib_frame (0x3f5c55, NULL, 99);
  PerfmonStackFrame no_build_id = lib_frame (0x123456789a, "far", 0);
  PerfmonStackFrame outside = { .pc = 0x7ffd12345678, .module_index = -1, .offset = 42 };

  no_symbol.path = "/system/lib/platformsdk/libark_jsruntime.so";
  no_symbol.build_id = "4e6a2651ec80a7f639233f414d6486fe";
  no_build_id.build_id = "";

  ADD (tree, 1, MAIN, RUN, no_symbol, no_build_id, outside);

  assert_text (tree,
               "1 #00 pc 000090a9 /system/bin/appspawn(main+396)(55679d09bcdea35bb1e0d4e1d9a3e58f)\n"
               "    1 #01 pc 0000757c /system/lib/libfoo.so(run+12)(66ac85e964777ae89f0c26c339093cd1)\n"
               "        1 #02 pc 003f5c55 /system/lib/platformsdk/libark_jsruntime.so(4e6a2651ec80a7f639233f414d6486fe)\n"
               "            1 #03 pc 123456789a /system/lib/libfoo.so(far+0)\n"
               "                1 #04 pc 7ffd12345678 [unknown]\n");
  assert_heaviest (tree,
                   "#00 pc 000090a9 /system/bin/appspawn(main+396)(55679d09bcdea35bb1e0d4e1d9a3e58f)\n"
                   "#01 pc 0000757c /system/lib/libfoo.so(run+12)(66ac85e964777ae89f0c26c339093cd1)\n"
                   "#02 pc 003f5c55 /system/lib/platformsdk/libark_jsruntime.so(4e6a2651ec80a7f639233f414d6486fe)\n"
                   "#03 pc 123456789a /system/lib/libfoo.so(far+0)\n"
                   "#04 pc 7ffd12345678 [unknown]\n");
  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, 1);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 5);
}

/* Two-digit depths go on with three digits past #99. */
static void
test_depth_numbering (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();
  PerfmonStackFrame frames[102];
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (frames); i++)
    frames[i] = lib_frame (0x100 + i, NULL, 0);
  _perfmon_stack_tree_add_sample (tree, frames, G_N_ELEMENTS (frames));

  text = _perfmon_stack_tree_to_text (tree);
  lines = g_strsplit (text, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 103);
  g_assert_cmpstr (lines[102], ==, "");
  for (guint i = 0; i < 102; i++)
    {
      g_autofree char *indent = g_strnfill (4 * i, ' ');
      g_autofree char *expected = g_strdup_printf ("%s1 #%02u pc %08x " LIB_PATH "(" LIB_ID ")", indent, i, 0x100 + i);

      g_assert_cmpstr (lines[i], ==, expected);
    }
  g_assert_nonnull (strstr (text, "1 #09 pc"));
  g_assert_nonnull (strstr (text, "1 #100 pc"));
}

static void
test_counts_and_order (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();

  /* b appears first but a is sampled more often: a comes first. */
  ADD (tree, 3, MAIN, RUN, B);
  ADD (tree, 6, MAIN, RUN, A, X);
  ADD (tree, 1, MAIN, RUN, A, Y);

  assert_text (tree,
               "10 #00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
               "    10 #01 pc 0000757c " LIB_PATH "(run+12)(" LIB_ID ")\n"
               "        7 #02 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
               "            6 #03 pc 00001100 " LIB_PATH "(x+5)(" LIB_ID ")\n"
               "            1 #03 pc 00001200 " LIB_PATH "(y+6)(" LIB_ID ")\n"
               "        3 #02 pc 00002000 " LIB_PATH "(b+2)(" LIB_ID ")\n");
  assert_heaviest (tree,
                   "#00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
                   "#01 pc 0000757c " LIB_PATH "(run+12)(" LIB_ID ")\n"
                   "#02 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
                   "#03 pc 00001100 " LIB_PATH "(x+5)(" LIB_ID ")\n");

  /* y overtakes x. */
  ADD (tree, 6, MAIN, RUN, A, Y);
  assert_heaviest (tree,
                   "#00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
                   "#01 pc 0000757c " LIB_PATH "(run+12)(" LIB_ID ")\n"
                   "#02 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
                   "#03 pc 00001200 " LIB_PATH "(y+6)(" LIB_ID ")\n");
  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, 16);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 6);
}

/* Equal counts keep the order of first appearance, at every level and in
 * the heaviest stack; a sample may end inside another's path. */
static void
test_ties (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();

  ADD (tree, 1, MAIN, D);
  ADD (tree, 1, MAIN, C, Y);
  ADD (tree, 1, MAIN, C, X);
  ADD (tree, 1, MAIN, D);
  ADD (tree, 1, MAIN);
  ADD (tree, 2, RUN);
  ADD (tree, 1, MAIN, B);

  assert_text (tree,
               "6 #00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
               "    2 #01 pc 00004000 " LIB_PATH "(d+4)(" LIB_ID ")\n"
               "    2 #01 pc 00003000 " LIB_PATH "(c+3)(" LIB_ID ")\n"
               "        1 #02 pc 00001200 " LIB_PATH "(y+6)(" LIB_ID ")\n"
               "        1 #02 pc 00001100 " LIB_PATH "(x+5)(" LIB_ID ")\n"
               "    1 #01 pc 00002000 " LIB_PATH "(b+2)(" LIB_ID ")\n"
               "2 #00 pc 0000757c " LIB_PATH "(run+12)(" LIB_ID ")\n");
  /* d is a leaf. */
  assert_heaviest (tree,
                   "#00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
                   "#01 pc 00004000 " LIB_PATH "(d+4)(" LIB_ID ")\n");
}

/* Frames are the same node by module and offset (pc outside modules). */
static void
test_identity (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();
  PerfmonStackFrame moved = A;
  PerfmonStackFrame out1 = { .pc = 0x1234, .module_index = -1, .offset = 1 };
  PerfmonStackFrame out2 = { .pc = 0x1234, .module_index = -1, .offset = 2 };
  PerfmonStackFrame out3 = { .pc = 0x5678, .module_index = -1, .offset = 1 };
  PerfmonStackFrame other_module = A;

  moved.pc += 0x10000;     /* the library was mapped elsewhere */
  moved.symbol = "renamed"; /* the first frame's strings are kept */
  other_module.module_index = 2;

  ADD (tree, 1, MAIN, A);
  ADD (tree, 1, MAIN, moved);
  ADD (tree, 1, MAIN, other_module);
  ADD (tree, 1, MAIN, out1);
  ADD (tree, 1, MAIN, out2);
  ADD (tree, 1, MAIN, out3);

  assert_text (tree,
               "6 #00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
               "    2 #01 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
               "    2 #01 pc 00001234 [unknown]\n"
               "    1 #01 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
               "    1 #01 pc 00005678 [unknown]\n");
}

static void
test_empty (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();

  assert_text (tree, "");
  assert_heaviest (tree, "");

  _perfmon_stack_tree_add_sample (tree, NULL, 0);
  assert_text (tree, "");
  assert_heaviest (tree, "");
  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, 1);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 0);

  /* NULL is fine for the cleanup. */
  _perfmon_stack_tree_free (NULL);
}

/* Parses @text and checks the shape of every line: the depth matches the
 * indentation, a line is at most one level deeper than the previous one,
 * and the counts of each node's children add up to at most its count
 * (those of the outermost frames to at most @n_samples), sorted highest
 * first. */
static void
assert_consistent (const char *text,
                   guint       n_samples)
{
  g_auto(GStrv) lines = g_strsplit (text, "\n", -1);
  guint64 parent_count[PERFMON_STACK_TREE_MAX_FRAMES + 2];
  guint64 children_sum[PERFMON_STACK_TREE_MAX_FRAMES + 2];
  guint64 last_count[PERFMON_STACK_TREE_MAX_FRAMES + 2];
  guint n_lines = g_strv_length (lines);
  guint previous_depth = 0;

  g_assert_cmpuint (n_lines, >=, 1);
  g_assert_cmpstr (lines[n_lines - 1], ==, "");

  parent_count[0] = n_samples;
  children_sum[0] = 0;
  last_count[0] = G_MAXUINT64;

  for (guint i = 0; i + 1 < n_lines; i++)
    {
      const char *line = lines[i];
      guint spaces = 0;
      guint64 count, depth;
      char *end;

      while (line[spaces] == ' ')
        spaces++;
      g_assert_cmpuint (spaces % 4, ==, 0);
      g_assert_cmpuint (spaces / 4, <=, PERFMON_STACK_TREE_MAX_FRAMES);
      if (i == 0)
        g_assert_cmpuint (spaces, ==, 0);
      else
        g_assert_cmpuint (spaces / 4, <=, previous_depth + 1);

      count = g_ascii_strtoull (line + spaces, &end, 10);
      g_assert_cmpuint (count, >, 0);
      g_assert_true (g_str_has_prefix (end, " #"));
      depth = g_ascii_strtoull (end + 2, &end, 10);
      g_assert_cmpuint (depth, ==, spaces / 4);
      g_assert_true (g_str_has_prefix (end, " pc "));

      /* A new child of the node at depth - 1 (the previous line at that
       * depth): close the deeper levels. */
      if (i > 0 && depth <= previous_depth)
        for (guint d = previous_depth + 1; d > depth; d--)
          g_assert_cmpuint (children_sum[d], <=, parent_count[d]);
      if (i == 0 || depth > previous_depth)
        {
          children_sum[depth] = 0;
          last_count[depth] = G_MAXUINT64;
        }

      g_assert_cmpuint (count, <=, last_count[depth]);
      last_count[depth] = count;
      children_sum[depth] += count;
      g_assert_cmpuint (children_sum[depth], <=, parent_count[depth]);
      parent_count[depth + 1] = count;
      children_sum[depth + 1] = 0;
      last_count[depth + 1] = G_MAXUINT64;
      previous_depth = depth;
    }
}

/* @text, read by the strict reader and written line by line by the
 * writer, is @text again. */
static void
assert_reads_back (const char *text)
{
  g_autoptr(GError) error = NULL;
  const char *rest = NULL;
  g_autoptr(GArray) lines = _perfmon_stack_tree_read_text (text, &rest, &error);
  g_autoptr(GString) again = g_string_new (NULL);

  g_assert_no_error (error);
  g_assert_null (rest);
  for (guint i = 0; i < lines->len; i++)
    _perfmon_stack_tree_append_line (again, &g_array_index (lines, PerfmonStackTreeLine, i));
  g_assert_cmpstr (again->str, ==, text);
}

static void
assert_refused (const char *text,
                guint       line)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) lines = _perfmon_stack_tree_read_text (text, NULL, &error);
  g_autofree char *where = g_strdup_printf ("line %u:", line);

  g_assert_null (lines);
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, where));
  g_assert_null (strstr (error->message, "SECRET"));
}

/* The strict reader beside the writer: what the writer writes reads back
 * field by field; the notes after an empty line are left to the caller;
 * anything else is refused, naming the line. */
static void
test_read (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();
  const PerfmonStackFrame script = { .script = "on_timeout (/home/u/ext.js:12)" };
  PerfmonStackFrame deleted = lib_frame (0x10, NULL, 0);
  PerfmonStackFrame outside = { .pc = 0x7ffd12345678, .module_index = -1 };
  g_autofree char *text = NULL;
  g_autofree char *with_notes = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) lines = NULL;
  const char *rest = NULL;
  PerfmonStackTreeLine *line;

  deleted.path = "/usr/lib/libc++ (deleted)";
  deleted.build_id = NULL;
  for (guint i = 0; i < 3; i++)
    _perfmon_stack_tree_add_dispatch_sample (tree, "[app] spell (check)",
                                             (PerfmonStackFrame[]) { MAIN, RUN, script }, 3);
  _perfmon_stack_tree_add_sample (tree, (PerfmonStackFrame[]) { MAIN, deleted, outside }, 3);
  text = _perfmon_stack_tree_to_text (tree);
  assert_reads_back (text);

  with_notes = g_strconcat (text, "\n1 of 4 samples skipped\n#00 pc not a frame\n", NULL);
  lines = _perfmon_stack_tree_read_text (with_notes, &rest, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (rest, ==, "1 of 4 samples skipped\n#00 pc not a frame\n");
  g_assert_cmpuint (lines->len, ==, 7);
  line = &g_array_index (lines, PerfmonStackTreeLine, 0);
  g_assert_cmpint (line->kind, ==, PERFMON_STACK_TREE_LINE_DISPATCH);
  g_assert_cmpuint (line->count, ==, 3);
  g_assert_cmpstr (line->text, ==, "[app] spell (check)");
  line = &g_array_index (lines, PerfmonStackTreeLine, 2);
  g_assert_cmpint (line->kind, ==, PERFMON_STACK_TREE_LINE_FRAME);
  g_assert_cmpuint (line->depth, ==, 1);
  g_assert_cmpuint (line->pc, ==, 0x757c);
  g_assert_cmpstr (line->path, ==, LIB_PATH);
  g_assert_cmpstr (line->symbol, ==, "run");
  g_assert_cmpuint (line->symbol_offset, ==, 12);
  g_assert_cmpstr (line->build_id, ==, LIB_ID);
  line = &g_array_index (lines, PerfmonStackTreeLine, 3);
  g_assert_cmpint (line->kind, ==, PERFMON_STACK_TREE_LINE_SCRIPT);
  g_assert_cmpstr (line->text, ==, "on_timeout (/home/u/ext.js:12)");
  line = &g_array_index (lines, PerfmonStackTreeLine, 5);
  g_assert_cmpstr (line->path, ==, "/usr/lib/libc++ (deleted)");
  g_assert_null (line->symbol);
  g_assert_null (line->build_id);
  line = &g_array_index (lines, PerfmonStackTreeLine, 6);
  g_assert_null (line->path);
  g_assert_cmpuint (line->pc, ==, 0x7ffd12345678);

  /* Empty: no line. */
  g_clear_pointer (&lines, g_array_unref);
  lines = _perfmon_stack_tree_read_text ("", NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (lines->len, ==, 0);

  assert_refused ("1 #00 pc 00001000 /a.so\nSECRET text\n", 2);
  assert_refused ("1 #00 pc zzzz /a.so SECRET\n", 1);
  assert_refused ("1 #00 pc 123456789012345678 /a.so SECRET\n", 1);
  assert_refused ("1 #0 pc 00001000 /a.so SECRET\n", 1);
  assert_refused ("1 #00 pc 00001000 \n", 1);
  assert_refused ("1 #00 pc 0000ABCD /a.so SECRET\n", 1);
  /* Levels: indentation, one deeper at most, from 0 after a header. */
  assert_refused ("1 #00 pc 00001000 /a.so\n  1 #01 pc 00001000 /a.so SECRET\n", 2);
  assert_refused ("1 #00 pc 00001000 /a.so\n        1 #02 pc 00001000 /a.so SECRET\n", 2);
  assert_refused ("1 dispatch: x\n    1 #01 pc 00001000 /a.so SECRET\n", 2);
  assert_refused ("    1 #01 pc 00001000 /a.so SECRET\n", 1);
  /* Counts on every line or none; a heaviest stack counts 0, 1, 2... */
  assert_refused ("1 #00 pc 00001000 /a.so\n#00 pc 00001000 /a.so SECRET\n", 2);
  assert_refused ("#00 pc 00001000 /a.so\n#00 pc 00001000 /a.so SECRET\n", 2);
  assert_refused ("1 #00 pc 00001000 /a.so\n99999999999 #00 pc 1 SECRET\n", 2);
  assert_refused ("1 #00 pc 00001000 /a\xff.so SECRET\n", 1);
}

static void
test_random_consistent (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();
  g_autofree char *text = NULL;
  g_autofree char *heaviest = NULL;
  g_auto(GStrv) heaviest_lines = NULL;
  guint n_samples = 500;

  for (guint s = 0; s < n_samples; s++)
    {
      PerfmonStackFrame frames[12];
      guint n = g_test_rand_int_range (0, G_N_ELEMENTS (frames) + 1);

      for (guint i = 0; i < n; i++)
        frames[i] = lib_frame (g_test_rand_int_range (0, 3) * 0x10, "f", i);
      _perfmon_stack_tree_add_sample (tree, frames, n);
    }

  text = _perfmon_stack_tree_to_text (tree);
  assert_consistent (text, n_samples);

  /* The heaviest stack follows the first child at each level, since the
   * text sorts them the same way. */
  heaviest = _perfmon_stack_tree_heaviest_stack (tree);
  heaviest_lines = g_strsplit (heaviest, "\n", -1);
  for (guint i = 0; heaviest_lines[i] != NULL && heaviest_lines[i][0] != '\0'; i++)
    {
      g_autofree char *prefix = g_strdup_printf ("#%02u pc ", i);

      g_assert_true (g_str_has_prefix (heaviest_lines[i], prefix));
      g_assert_nonnull (strstr (text, heaviest_lines[i]));
    }

  /* Both texts read back, and written again, the same. */
  assert_reads_back (text);
  assert_reads_back (heaviest);
}

static void
test_caps (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new_full (4, 3);

  /* Keeps the 3 outermost frames: 1 truncated, 3 nodes. */
  ADD (tree, 1, MAIN, A, X, Y);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_truncated_frames (tree), ==, 1);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_dropped_frames (tree), ==, 0);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 3);

  /* b is the 4th and last node; y would be a 5th. */
  ADD (tree, 1, MAIN, B, Y);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 4);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_dropped_frames (tree), ==, 1);

  /* Existing paths still count; c and what follows it are dropped. */
  ADD (tree, 2, MAIN, A, X);
  ADD (tree, 1, MAIN, C, X);
  ADD (tree, 1, RUN, C, X, Y, D);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 4);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_dropped_frames (tree), ==, 1 + 2 + 3);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_truncated_frames (tree), ==, 1 + 2);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, 6);

  assert_text (tree,
               "5 #00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
               "    3 #01 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
               "        3 #02 pc 00001100 " LIB_PATH "(x+5)(" LIB_ID ")\n"
               "    1 #01 pc 00002000 " LIB_PATH "(b+2)(" LIB_ID ")\n");
}

static void
test_default_caps (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new ();
  PerfmonStackFrame frames[PERFMON_STACK_TREE_MAX_FRAMES + 72];
  g_autofree char *text = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (frames); i++)
    frames[i] = lib_frame (i, NULL, 0);
  _perfmon_stack_tree_add_sample (tree, frames, G_N_ELEMENTS (frames));
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, PERFMON_STACK_TREE_MAX_FRAMES);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_truncated_frames (tree), ==, 72);

  /* Distinct leaves under the first frame until the tree is full. */
  for (guint i = 0; i < PERFMON_STACK_TREE_MAX_NODES; i++)
    {
      PerfmonStackFrame pair[2] = { frames[0], lib_frame (0x100000 + i, "leaf", i) };

      _perfmon_stack_tree_add_sample (tree, pair, 2);
    }
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, PERFMON_STACK_TREE_MAX_NODES);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_dropped_frames (tree), ==, PERFMON_STACK_TREE_MAX_FRAMES);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, PERFMON_STACK_TREE_MAX_NODES + 1);

  text = _perfmon_stack_tree_to_text (tree);
  assert_consistent (text, PERFMON_STACK_TREE_MAX_NODES + 1);
  g_assert_true (g_str_has_prefix (text, "4097 #00 pc 00000000 " LIB_PATH "(" LIB_ID ")\n"));
}

/* Samples taken in dispatches are grouped by the dispatch's name, a header
 * line each, heaviest first; the heaviest stack is the heaviest
 * dispatch's. */
static void
test_dispatches (void)
{
  g_autoptr(PerfmonStackTree) tree = _perfmon_stack_tree_new_full (6, 8);
  const PerfmonStackFrame spell[] = { MAIN, RUN, A };
  const PerfmonStackFrame paint[] = { MAIN, RUN, B };

  for (guint i = 0; i < 3; i++)
    _perfmon_stack_tree_add_dispatch_sample (tree, "[app] spell-check", spell, G_N_ELEMENTS (spell));
  _perfmon_stack_tree_add_dispatch_sample (tree, "[gtk] paint\nidle\xff", paint, G_N_ELEMENTS (paint));
  _perfmon_stack_tree_add_dispatch_sample (tree, "[gtk] paint\nidle\xff", paint, G_N_ELEMENTS (paint));
  /* A failed capture: a sample without a dispatch or frames. */
  _perfmon_stack_tree_add_sample (tree, NULL, 0);

  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, 6);
  assert_text (tree,
               "3 dispatch: [app] spell-check\n"
               "3 #00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
               "    3 #01 pc 0000757c " LIB_PATH "(run+12)(" LIB_ID ")\n"
               "        3 #02 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n"
               "2 dispatch: [gtk] paint idle\xef\xbf\xbd\n"
               "2 #00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n");
  /* The tree is full (6 nodes): the second dispatch's stack was cut. */
  g_assert_cmpuint (_perfmon_stack_tree_get_n_nodes (tree), ==, 6);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_dropped_frames (tree), ==, 4);
  assert_heaviest (tree,
                   "#00 pc 000090a9 " APP_PATH "(main+396)(" APP_ID ")\n"
                   "#01 pc 0000757c " LIB_PATH "(run+12)(" LIB_ID ")\n"
                   "#02 pc 00001000 " LIB_PATH "(a+1)(" LIB_ID ")\n");

  /* Past max_nodes a new dispatch gets no node: the sample only counts. */
  _perfmon_stack_tree_add_dispatch_sample (tree, "third", spell, G_N_ELEMENTS (spell));
  g_assert_cmpuint (_perfmon_stack_tree_get_n_samples (tree), ==, 7);
  g_assert_cmpuint (_perfmon_stack_tree_get_n_dropped_frames (tree), ==, 7);
  {
    g_autofree char *text = _perfmon_stack_tree_to_text (tree);

    g_assert_null (strstr (text, "third"));
  }
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/stack-tree/format", test_format);
  g_test_add_func ("/stack-tree/depth-numbering", test_depth_numbering);
  g_test_add_func ("/stack-tree/counts-and-order", test_counts_and_order);
  g_test_add_func ("/stack-tree/ties", test_ties);
  g_test_add_func ("/stack-tree/identity", test_identity);
  g_test_add_func ("/stack-tree/empty", test_empty);
  g_test_add_func ("/stack-tree/random-consistent", test_random_consistent);
  g_test_add_func ("/stack-tree/caps", test_caps);
  g_test_add_func ("/stack-tree/default-caps", test_default_caps);
  g_test_add_func ("/stack-tree/dispatches", test_dispatches);
  g_test_add_func ("/stack-tree/read", test_read);

  return g_test_run ();
}
