/* fuzz-hang-report.c: perfmon_hang_report_new_from_json() on any bytes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is a hang report as perfmond, the ping store or `perfmon
 * hangs` may get it from another process. It must either be refused with
 * PERFMON_ERROR_INVALID_DATA, or give a report whose JSON reads back to
 * the very same JSON (the writer's output is a fixed point of the
 * reader). A crash, a sanitizer report, a g_critical() or a g_warning() is
 * a finding.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmon.h"
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  g_autoptr(PerfmonHangReport) report = NULL;
  g_autoptr(PerfmonHangReport) again = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;
  g_auto(GStrv) stack = NULL;
  g_auto(GStrv) keys = NULL;

  init_once ();

  /* Not NUL-terminated: the reader takes a length. */
  report = perfmon_hang_report_new_from_json ((const char *) data, (gssize) size, &error);
  if (report == NULL)
    {
      check_error (error);
      return 0;
    }
  if (error != NULL)
    abort ();

  /* What the getters give must be readable (UTF-8, as GI wants it). */
  stack = perfmon_hang_report_dup_stack (report);
  keys = perfmon_hang_report_dup_annotation_keys (report);
  for (guint i = 0; stack[i] != NULL; i++)
    if (!g_utf8_validate (stack[i], -1, NULL))
      abort ();
  for (guint i = 0; keys[i] != NULL; i++)
    if (!g_utf8_validate (perfmon_hang_report_get_annotation (report, keys[i]), -1, NULL))
      abort ();

  first = perfmon_hang_report_to_json (report);
  again = perfmon_hang_report_new_from_json (first, -1, &error);
  if (again == NULL)
    abort ();
  second = perfmon_hang_report_to_json (again);
  if (strcmp (first, second) != 0)
    abort ();

  return 0;
}
