/* fuzz-daemon-snapshot.c: perfmond's handling of what a process answers to
 * GetSnapshot
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is the serialized "v" of the "(v)" reply, as any peer on the
 * bus could send it: a variant of any type, possibly not in normal form;
 * it is also exactly the "ay" of a GetSnapshotBytes reply.
 * perfmond_snapshot_from_reply() must refuse it with a PERFMON_ERROR or
 * give a snapshot, and perfmond_snapshot_check_reply() agree; a snapshot must merge (with itself, as two processes)
 * into an aggregate that perfmon_snapshot_new_from_variant() reads, and
 * merging again must give the same aggregate, but for its wall time. A
 * crash, a sanitizer report, a g_critical() or a g_warning() is a finding.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmond-aggregate.h"
#include "fuzz-common.h"

#define MAX_GROUPS 1000

/* The wall time's member in PERFMON_SNAPSHOT_VARIANT_TYPE: the one
 * before the modules and the sampled CPU times. */
#define WALL_TIME_MEMBER 17

/* Two aggregates of the same snapshots: equal but for their wall time,
 * which each merge reads from the clock. */
static gboolean
same_but_wall_time (GVariant *a,
                    GVariant *b)
{
  gsize n = g_variant_n_children (a);

  if (n == 0 || g_variant_n_children (b) != n)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    {
      if (i == WALL_TIME_MEMBER)
        continue;
      g_autoptr(GVariant) x = g_variant_get_child_value (a, i);
      g_autoptr(GVariant) y = g_variant_get_child_value (b, i);

      if (!g_variant_equal (x, y))
        return FALSE;
    }
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(GVariant) boxed = NULL;
  g_autoptr(GVariant) variant = NULL;
  g_autoptr(GVariant) merged = NULL;
  guint omitted = 0;
  g_autoptr(GVariant) again = NULL;
  g_autoptr(PerfmonSnapshot) snapshot = NULL;
  g_autoptr(PerfmonSnapshot) aggregate = NULL;
  g_autoptr(PerfmondAggregator) aggregator = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonSnapshot *two[2];
  const guint pids[2] = { 100, 200 };

  init_once ();

  bytes = g_bytes_new (data, size);
  boxed = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE_VARIANT, bytes, FALSE));
  variant = g_variant_get_variant (boxed);

  snapshot = perfmond_snapshot_from_reply (variant, MAX_GROUPS, &error);

  /* The check of every poll, which decodes nothing, agrees, message and
   * all. */
  {
    g_autoptr(GError) check_error = NULL;
    gboolean checked = perfmond_snapshot_check_reply (variant, MAX_GROUPS, &check_error);

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

  aggregator = perfmond_aggregator_new ();
  two[0] = two[1] = snapshot;
  merged = perfmond_aggregator_merge (aggregator, two, pids, 2, 1, 1000, G_MAXSIZE, &omitted);
  if (merged == NULL)
    abort ();
  aggregate = perfmon_snapshot_new_from_variant (merged, &error);
  if (aggregate == NULL)
    abort ();

  /* The same processes again: the same ids, so the same aggregate. */
  again = perfmond_aggregator_merge (aggregator, two, pids, 2, 1, 1000, G_MAXSIZE, &omitted);
  if (again == NULL || !same_but_wall_time (merged, again))
    abort ();

  return 0;
}
