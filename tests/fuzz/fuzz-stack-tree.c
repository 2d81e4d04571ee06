/* fuzz-stack-tree.c: _perfmon_stack_tree_read_text() on any bytes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is a jank stack log, as `perfmon symbolize` reads it: a file
 * of the user's log directory, which any process of the user may have
 * written. It must either be refused with PERFMON_ERROR_INVALID_DATA, or
 * give lines that the writer writes as text that reads back to the very
 * same lines (the writer's output is a fixed point of the reader). A
 * crash, a sanitizer report, a g_critical() or a g_warning() is a finding.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmon.h"
#include "perfmon-stack-tree-private.h"
#include "fuzz-common.h"

static char *
write_lines (GArray *lines)
{
  GString *out = g_string_new (NULL);

  for (guint i = 0; i < lines->len; i++)
    _perfmon_stack_tree_append_line (out, &g_array_index (lines, PerfmonStackTreeLine, i));
  return g_string_free (out, FALSE);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  g_autofree char *text = g_strndup ((const char *) data, size);
  g_autoptr(GArray) lines = NULL;
  g_autoptr(GArray) again = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;
  const char *rest = NULL;

  init_once ();

  /* The reader takes text: what follows a NUL is not read. */
  lines = _perfmon_stack_tree_read_text (text, &rest, &error);
  if (lines == NULL)
    {
      check_error (error);
      return 0;
    }
  if (error != NULL || (rest != NULL && (rest < text || rest > text + strlen (text))))
    abort ();

  first = write_lines (lines);
  again = _perfmon_stack_tree_read_text (first, &rest, &error);
  if (again == NULL || rest != NULL || again->len != lines->len)
    abort ();
  second = write_lines (again);
  if (strcmp (first, second) != 0)
    abort ();

  return 0;
}
