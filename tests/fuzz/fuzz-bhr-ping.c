/* fuzz-bhr-ping.c: perfmon_bhr_ping_new_from_json() on any bytes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is a file of a pings directory, as perfmond's uploader reads
 * it before sending it: any process of the user may have written it. It
 * must either be refused with PERFMON_ERROR_INVALID_DATA (or
 * UNSUPPORTED_VERSION), or give a ping whose JSON reads back to the very
 * same JSON (the writer's output is a fixed point of the reader). A crash,
 * a sanitizer report, a g_critical() or a g_warning() is a finding.
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
  g_autoptr(PerfmonBhrPing) ping = NULL;
  g_autoptr(PerfmonBhrPing) again = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;

  init_once ();

  /* Not NUL-terminated: the reader takes a length. */
  ping = perfmon_bhr_ping_new_from_json ((const char *) data, (gssize) size, &error);
  if (ping == NULL)
    {
      check_error (error);
      return 0;
    }
  if (error != NULL)
    abort ();

  /* What the uploader puts in its URL, and each hang. */
  if (*perfmon_bhr_ping_get_id (ping) == '\0' || *perfmon_bhr_ping_get_app_name (ping) == '\0' ||
      *perfmon_bhr_ping_get_app_version (ping) == '\0' || *perfmon_bhr_ping_get_app_channel (ping) == '\0' ||
      strlen (perfmon_bhr_ping_get_app_build_id (ping)) != 14)
    abort ();
  for (guint i = 0; i < perfmon_bhr_ping_get_n_hangs (ping); i++)
    {
      g_auto(GStrv) stack = perfmon_hang_report_dup_stack (perfmon_bhr_ping_get_hang (ping, i));

      for (guint j = 0; stack[j] != NULL; j++)
        if (!g_utf8_validate (stack[j], -1, NULL))
          abort ();
      if (!g_utf8_validate (perfmon_bhr_ping_get_hang_id (ping, i), -1, NULL))
        abort ();
    }

  first = perfmon_bhr_ping_to_json (ping);
  again = perfmon_bhr_ping_new_from_json (first, -1, &error);
  if (again == NULL)
    abort ();
  second = perfmon_bhr_ping_to_json (again);
  if (strcmp (first, second) != 0)
    abort ();

  return 0;
}
