/* fuzz-snapshot-json.c: perfmon_snapshot_new_from_json() on any bytes
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Any input must either be refused with a PERFMON_ERROR or give a snapshot
 * whose JSON reads back to the very same JSON, and whose variant form
 * reads back too. A crash, a sanitizer report, a g_critical() or a
 * g_warning() is a finding.
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
  g_autofree char *json = NULL;
  g_autofree char *first = NULL;
  g_autofree char *second = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(PerfmonSnapshot) again = NULL;
  g_autoptr(PerfmonSnapshot) from_variant = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(GError) error = NULL;

  init_once ();

  json = g_malloc (size + 1);
  memcpy (json, data, size);
  json[size] = '\0';

  snapshot = perfmon_snapshot_new_from_json (json, &error);
  if (snapshot == NULL)
    {
      check_error (error);
      return 0;
    }

  if (error != NULL)
    abort ();

  first = perfmon_snapshot_to_json (snapshot);
  again = perfmon_snapshot_new_from_json (first, &error);
  if (again == NULL)
    abort ();

  second = perfmon_snapshot_to_json (again);
  if (strcmp (first, second) != 0)
    abort ();

  /* What reads from JSON must also survive the variant form. */
  variant = perfmon_snapshot_to_variant (snapshot);
  from_variant = perfmon_snapshot_new_from_variant (variant, &error);
  if (from_variant == NULL)
    abort ();

  g_free (second);
  second = perfmon_snapshot_to_json (from_variant);
  if (strcmp (first, second) != 0)
    abort ();

  return 0;
}
