/* fuzz-snapshot-variant.c: perfmon_snapshot_new_from_variant() on any
 * serialized data
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is the serialized form of a PERFMON_SNAPSHOT_VARIANT_TYPE
 * variant, as a peer on D-Bus could send it: untrusted, possibly not in
 * normal form. It must either be refused with a PERFMON_ERROR or give a
 * snapshot equal to the input whose variant reads back to an equal one;
 * perfmon_snapshot_check_variant() must agree, message and all. A
 * crash, a sanitizer report, a g_critical() or a g_warning() is a finding.
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
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GVariant) input = NULL;
  g_autoptr(GVariant) first = NULL;
  g_autoptr(GVariant) second = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(PerfmonSnapshot) again = NULL;
  g_autoptr(PerfmonSnapshot) from_json = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *json = NULL;

  init_once ();

  bytes = g_bytes_new (data, size);
  input = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE),
                                                        bytes, FALSE));

  snapshot = perfmon_snapshot_new_from_variant (input, &error);

  /* The check without decoding (perfmond's, at every poll) accepts the
   * same inputs and refuses the others with the same message. */
  {
    g_autoptr(GError) check_error = NULL;
    gboolean checked = perfmon_snapshot_check_variant (input, &check_error);

    if (checked != (snapshot != NULL) || (checked && check_error != NULL) ||
        (!checked && (check_error == NULL || strcmp (check_error->message, error->message) != 0)))
      abort ();
  }

  if (snapshot == NULL)
    {
      check_error (error);
      return 0;
    }

  if (error != NULL)
    abort ();

  /* Nothing is lost or invented: the snapshot says what the input says,
   * as GVariant reads it (untrusted data that is not in normal form reads
   * with default values where it is malformed). */
  first = perfmon_snapshot_to_variant (snapshot);
  if (g_variant_is_floating (first) || !g_variant_is_normal_form (first) ||
      !g_variant_equal (input, first))
    abort ();

  again = perfmon_snapshot_new_from_variant (first, &error);
  if (again == NULL)
    abort ();

  second = perfmon_snapshot_to_variant (again);
  if (!g_variant_equal (first, second))
    abort ();

  /* What reads from a variant must also survive the JSON form. */
  json = perfmon_snapshot_to_json (snapshot);
  from_json = perfmon_snapshot_new_from_json (json, &error);
  if (from_json == NULL)
    abort ();

  g_clear_pointer (&second, g_variant_unref);
  second = perfmon_snapshot_to_variant (from_json);
  if (!g_variant_equal (first, second))
    abort ();

  return 0;
}
