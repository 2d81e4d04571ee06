/* perfmon-snapshot-variant.c: a snapshot's GVariant form, both ways
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The type is PERFMON_SNAPSHOT_VARIANT_TYPE (perfmon-snapshot.h): columns,
 * one entry per group each, so that GDBus copies almost all of it in one
 * go.
 */
#include "config.h"

#include <string.h>

#include "perfmon-error.h"
#include "perfmon-snapshot-private.h"

/* PERFMON_SNAPSHOT_VARIANT_TYPE without its last members, the sampled CPU
 * times, and the wall time: what processes built before them send. */
#define SNAPSHOT_VARIANT_TYPE_NO_SAMPLED "(uxxusttatauasatasauatatatatx)"
#define SNAPSHOT_VARIANT_TYPE_NO_WALL_TIME "(uxxusttatauasatasauatatatat)"

/* --- Encoder ------------------------------------------------------------- */

/**
 * perfmon_snapshot_to_variant:
 * @self: a `PerfmonSnapshot`
 *
 * Serializes @self to a #GVariant of type %PERFMON_SNAPSHOT_VARIANT_TYPE,
 * in normal form: for example to send it over D-Bus.
 *
 * Returns: (transfer full): a new, non-floating #GVariant
 *
 * Since: 0.1
 */
GVariant *
perfmon_snapshot_to_variant (PerfmonSnapshot *self)
{
  guint n;
  g_autofree guint64 *ids = NULL;
  g_autofree guint32 *kinds = NULL;
  g_autofree const char **names = NULL;
  g_autofree guint64 *window_ids = NULL;
  g_autofree guint32 *addon_indexes = NULL;
  g_autofree guint64 *cpu_times = NULL;
  g_autofree guint64 *blocked_times = NULL;
  g_autofree guint64 *ticks = NULL;
  g_autofree guint64 *durations = NULL;
  g_autofree guint64 *sampled_cpu_times = NULL;
  g_autoptr(GPtrArray) addon_ids = NULL;
  g_autoptr(GHashTable) addon_index_of = NULL;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  /* Columns, so that almost everything is an array of fixed-size numbers,
   * which GDBus copies in one go: for an array of tuples it builds and
   * walks a GVariant per member of every group. Sending and receiving
   * 1,000 groups took GDBus 2.4 ms as tuples, 0.24 ms as columns, and
   * making and reading the variant itself ten times less as well. */
  n = self->groups->len;
  ids = g_new (guint64, n);
  kinds = g_new (guint32, n);
  names = g_new (const char *, n + 1);
  window_ids = g_new (guint64, n);
  addon_indexes = g_new (guint32, n);
  cpu_times = g_new (guint64, n);
  blocked_times = g_new (guint64, n);
  ticks = g_new (guint64, n);
  durations = g_new (guint64, (gsize) n * PERFMON_N_DURATIONS);
  sampled_cpu_times = g_new (guint64, n);
  addon_ids = g_ptr_array_new ();
  addon_index_of = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < n; i++)
    {
      const PerfmonGroupStats *stats = g_ptr_array_index (self->groups, i);

      ids[i] = stats->id;
      kinds[i] = (guint32) stats->kind;
      names[i] = stats->name;
      window_ids[i] = stats->window_id;
      addon_indexes[i] = 0;
      if (stats->addon_id != NULL)
        {
          gpointer index;

          if (!g_hash_table_lookup_extended (addon_index_of, stats->addon_id, NULL, &index))
            {
              g_ptr_array_add (addon_ids, stats->addon_id);
              index = GUINT_TO_POINTER (addon_ids->len);
              g_hash_table_insert (addon_index_of, stats->addon_id, index);
            }
          addon_indexes[i] = GPOINTER_TO_UINT (index);
        }
      cpu_times[i] = stats->cpu_time;
      blocked_times[i] = stats->blocked_time;
      ticks[i] = stats->ticks;
      sampled_cpu_times[i] = stats->sampled_cpu_time;
      memcpy (&durations[(gsize) i * PERFMON_N_DURATIONS], stats->durations, sizeof stats->durations);
    }
  names[n] = NULL;

#define FIXED_ARRAY(type, data, count) \
  g_variant_new_fixed_array (type, data, count, sizeof *(data))

  return g_variant_ref_sink (g_variant_new ("(uxxustt@at@au@as@at@as@au@at@at@at@atx@at)",
                                            (guint32) PERFMON_SNAPSHOT_FORMAT_VERSION,
                                            self->timestamp,
                                            self->interval,
                                            (guint32) self->pid,
                                            self->process_name,
                                            self->user_time,
                                            self->system_time,
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, ids, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT32, kinds, n),
                                            g_variant_new_strv (names, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, window_ids, n),
                                            g_variant_new_strv ((const char * const *) addon_ids->pdata,
                                                                addon_ids->len),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT32, addon_indexes, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, cpu_times, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, blocked_times, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, ticks, n),
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, durations,
                                                         (gsize) n * PERFMON_N_DURATIONS),
                                            self->wall_time,
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, sampled_cpu_times, n)));
#undef FIXED_ARRAY
}

/* --- Decoder: untrusted input, checked in full --------------------------- */

/**
 * perfmon_snapshot_new_from_variant:
 * @variant: a #GVariant of type %PERFMON_SNAPSHOT_VARIANT_TYPE, as returned
 *   by perfmon_snapshot_to_variant()
 * @error: return location for a #GError
 *
 * Reads a snapshot back from its #GVariant form. @variant may come from an
 * untrusted source, such as g_variant_new_from_bytes() on data read from a
 * peer.
 *
 * The data is checked like that of perfmon_snapshot_new_from_json(): if the
 * variant does not have the expected type or is not a valid snapshot, this
 * fails with %PERFMON_ERROR_INVALID_DATA and a message that names the
 * offending member, or with %PERFMON_ERROR_UNSUPPORTED_VERSION if its
 * format version is not 1.
 *
 * Returns: (transfer full): a new snapshot
 *
 * Since: 0.1
 */
PerfmonSnapshot *
perfmon_snapshot_new_from_variant (GVariant  *variant,
                                   GError   **error)
{
  g_auto(PerfmonSnapshotFields) fields = { 0, };
  g_autoptr(GVariant) ids_v = NULL, kinds_v = NULL, names_v = NULL, window_ids_v = NULL;
  g_autoptr(GVariant) addon_ids_v = NULL, addon_indexes_v = NULL, cpu_times_v = NULL;
  g_autoptr(GVariant) blocked_times_v = NULL, ticks_v = NULL, durations_v = NULL;
  g_autoptr(GVariant) sampled_cpu_times_v = NULL;
  g_autofree const char **names = NULL;
  g_autofree const char **addon_ids = NULL;
  const guint64 *ids, *window_ids, *cpu_times, *blocked_times, *ticks, *durations, *sampled_cpu_times;
  const guint32 *kinds, *addon_indexes;
  gsize n, n_addon_ids, length;
  guint32 version, pid, next_addon_index = 1;

  g_return_val_if_fail (variant != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (g_variant_type_equal (g_variant_get_type (variant), G_VARIANT_TYPE (SNAPSHOT_VARIANT_TYPE_NO_WALL_TIME)))
    {
      /* The form of processes built before snapshots had a wall time:
       * the same but the last member. */
      g_autoptr(GVariant) wall_time = g_variant_new_int64 (0);
      g_autoptr(GVariant) extended = NULL;
      g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);

      for (gsize i = 0; i < g_variant_n_children (variant); i++)
        g_ptr_array_add (children, g_variant_get_child_value (variant, i));
      g_ptr_array_add (children, g_variant_ref_sink (g_steal_pointer (&wall_time)));
      extended = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
      return perfmon_snapshot_new_from_variant (extended, error);
    }
  if (g_variant_type_equal (g_variant_get_type (variant), G_VARIANT_TYPE (SNAPSHOT_VARIANT_TYPE_NO_SAMPLED)))
    {
      /* Before sampled CPU times: none. */
      gsize n_groups;
      g_autoptr(GVariant) ids_column = g_variant_get_child_value (variant, 7);
      g_autofree guint64 *zeros = NULL;
      g_autoptr(GVariant) extended = NULL;
      g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);

      n_groups = g_variant_n_children (ids_column);
      zeros = g_new0 (guint64, MAX (n_groups, 1));
      for (gsize i = 0; i < g_variant_n_children (variant); i++)
        g_ptr_array_add (children, g_variant_get_child_value (variant, i));
      g_ptr_array_add (children, g_variant_ref_sink (g_variant_new_fixed_array (G_VARIANT_TYPE_UINT64, zeros,
                                                                                n_groups, sizeof (guint64))));
      extended = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
      return perfmon_snapshot_new_from_variant (extended, error);
    }

  if (!g_variant_type_equal (g_variant_get_type (variant),
                             G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE)))
    {
      _perfmon_snapshot_set_field_error (error, NULL, "(root)", "expected a variant of type %s, got %s",
                       PERFMON_SNAPSHOT_VARIANT_TYPE, g_variant_get_type_string (variant));
      return NULL;
    }

  /* No '&' format: g_variant_get() would first serialise a variant in
   * tree form, which is how GDBus hands it over. */
  g_variant_get (variant, "(uxxustt@at@au@as@at@as@au@at@at@at@atx@at)",
                 &version,
                 &fields.timestamp,
                 &fields.interval,
                 &pid,
                 &fields.process_name,
                 &fields.user_time,
                 &fields.system_time,
                 &ids_v, &kinds_v, &names_v, &window_ids_v, &addon_ids_v, &addon_indexes_v,
                 &cpu_times_v, &blocked_times_v, &ticks_v, &durations_v,
                 &fields.wall_time, &sampled_cpu_times_v);

  if (!_perfmon_snapshot_check_version (version, error))
    return NULL;
  fields.pid = pid;

  /* Every column has one entry per group (durations PERFMON_N_DURATIONS). */
  ids = g_variant_get_fixed_array (ids_v, &n, sizeof (guint64));
  {
    const struct {
      const char *member;
      GVariant   *column;
      gsize       per_group;
    } columns[] = {
      { "kinds", kinds_v, 1 },
      { "names", names_v, 1 },
      { "window_ids", window_ids_v, 1 },
      { "addon_indexes", addon_indexes_v, 1 },
      { "cpu_times", cpu_times_v, 1 },
      { "blocked_times", blocked_times_v, 1 },
      { "ticks", ticks_v, 1 },
      { "durations", durations_v, PERFMON_N_DURATIONS },
      { "sampled_cpu_times", sampled_cpu_times_v, 1 },
    };

    for (guint c = 0; c < G_N_ELEMENTS (columns); c++)
    {
      gsize expected = n * columns[c].per_group;

      length = g_variant_n_children (columns[c].column);
      if (length != expected)
        {
          _perfmon_snapshot_set_field_error (error, NULL, columns[c].member,
                           "expected %" G_GSIZE_FORMAT " elements (%" G_GSIZE_FORMAT " per id, %"
                           G_GSIZE_FORMAT " ids), got %" G_GSIZE_FORMAT,
                           expected, columns[c].per_group, n, length);
          return NULL;
        }
    }
  }

  kinds = g_variant_get_fixed_array (kinds_v, &length, sizeof (guint32));
  names = g_variant_get_strv (names_v, NULL);
  window_ids = g_variant_get_fixed_array (window_ids_v, &length, sizeof (guint64));
  addon_ids = g_variant_get_strv (addon_ids_v, &n_addon_ids);
  addon_indexes = g_variant_get_fixed_array (addon_indexes_v, &length, sizeof (guint32));
  cpu_times = g_variant_get_fixed_array (cpu_times_v, &length, sizeof (guint64));
  blocked_times = g_variant_get_fixed_array (blocked_times_v, &length, sizeof (guint64));
  ticks = g_variant_get_fixed_array (ticks_v, &length, sizeof (guint64));
  durations = g_variant_get_fixed_array (durations_v, &length, sizeof (guint64));
  sampled_cpu_times = g_variant_get_fixed_array (sampled_cpu_times_v, &length, sizeof (guint64));

  fields.groups = g_ptr_array_new_full (n, (GDestroyNotify) perfmon_group_stats_unref);
  for (gsize i = 0; i < n; i++)
    {
      PerfmonGroupStats *stats;

      /* The table lists each add-on id once, in the order of the groups
       * that first use it, as perfmon_snapshot_to_variant() writes it:
       * any other table would not read back to the same variant. */
      if (addon_indexes[i] > next_addon_index || addon_indexes[i] > n_addon_ids)
        {
          char prefix[32];

          g_snprintf (prefix, sizeof prefix, "groups[%" G_GSIZE_FORMAT "]", i);
          _perfmon_snapshot_set_field_error (error, prefix, "addon_id",
                           "addon_indexes[%" G_GSIZE_FORMAT "] = %u, expected 0 (none) or an index "
                           "in [1, %u] of addon_ids (%" G_GSIZE_FORMAT " entries, each first used "
                           "in table order)",
                           i, addon_indexes[i], MIN (next_addon_index, (guint32) MIN (n_addon_ids, G_MAXUINT32)),
                           n_addon_ids);
          return NULL;
        }
      if (addon_indexes[i] == next_addon_index)
        next_addon_index++;

      stats = _perfmon_group_stats_new (ids[i], (PerfmonGroupKind) kinds[i], names[i], window_ids[i],
                                        addon_indexes[i] != 0 ? addon_ids[addon_indexes[i] - 1] : NULL);
      stats->cpu_time = cpu_times[i];
      stats->blocked_time = blocked_times[i];
      stats->ticks = ticks[i];
      stats->sampled_cpu_time = sampled_cpu_times[i];
      memcpy (stats->durations, &durations[i * PERFMON_N_DURATIONS], sizeof stats->durations);
      g_ptr_array_add (fields.groups, stats);
    }

  if (next_addon_index - 1 != n_addon_ids)
    {
      _perfmon_snapshot_set_field_error (error, NULL, "addon_ids",
                       "%" G_GSIZE_FORMAT " entries, but groups use %u", n_addon_ids, next_addon_index - 1);
      return NULL;
    }
  {
    /* Entry → its index: a set, not a pairwise scan, for untrusted input
     * of thousands of add-ons. */
    g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

    for (gsize i = 0; i < n_addon_ids; i++)
      {
        gpointer first;

        if (g_hash_table_lookup_extended (seen, addon_ids[i], NULL, &first))
          {
            _perfmon_snapshot_set_field_error (error, NULL, "addon_ids",
                             "entries %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT " are both \"%s\"",
                             (gsize) GPOINTER_TO_SIZE (first), i, addon_ids[i]);
            return NULL;
          }
        g_hash_table_insert (seen, (gpointer) addon_ids[i], GSIZE_TO_POINTER (i));
      }
  }

  return _perfmon_snapshot_new_checked (&fields, error);
}
