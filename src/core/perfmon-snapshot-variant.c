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

/* PERFMON_SNAPSHOT_VARIANT_TYPE without its last member, the sampled CPU
 * times (0.3 before them), without the last two, the modules too (0.2),
 * and without the last three, the wall time too (0.1): what processes
 * built before them send. */
#define SNAPSHOT_VARIANT_TYPE_NO_SAMPLED "(uxxusttatauasatasauatatatatxa(ssts))"
#define SNAPSHOT_VARIANT_TYPE_NO_MODULES "(uxxusttatauasatasauatatatatx)"
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
  GVariantBuilder modules;

  g_return_val_if_fail (PERFMON_IS_SNAPSHOT (self), NULL);

  g_variant_builder_init (&modules, G_VARIANT_TYPE ("a(ssts)"));
  for (guint i = 0; self->modules != NULL && i < self->modules->len; i++)
    {
      const PerfmonRecordedModule *module = g_ptr_array_index (self->modules, i);

      g_variant_builder_add (&modules, "(ssts)", module->name, module->path, module->base, module->build_id);
    }

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

  return g_variant_ref_sink (g_variant_new ("(uxxustt@at@au@as@at@as@au@at@at@at@atxa(ssts)@at)",
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
                                            &modules,
                                            FIXED_ARRAY (G_VARIANT_TYPE_UINT64, sampled_cpu_times, n)));
#undef FIXED_ARRAY
}

/* --- Decoder: untrusted input, checked in full --------------------------- */

/* The members of PERFMON_SNAPSHOT_VARIANT_TYPE. */
#define N_MEMBERS 20

/* A snapshot variant's members, its groups by column: read and checked by
 * read_columns(), which applies every rule of the format, so that
 * perfmon_snapshot_check_variant() and perfmon_snapshot_new_from_variant()
 * accept the same variants. */
typedef struct
{
  PerfmonSnapshotFields  fields;    /* but the groups */
  GVariant              *extended;  /* an older form, with the members it lacks */
  GVariant              *ids_v, *kinds_v, *names_v, *window_ids_v, *addon_ids_v, *addon_indexes_v;
  GVariant              *cpu_times_v, *blocked_times_v, *ticks_v, *durations_v, *sampled_cpu_times_v;
  const guint64         *ids, *window_ids, *cpu_times, *blocked_times, *ticks, *durations, *sampled_cpu_times;
  const guint32         *kinds, *addon_indexes;
  const char           **addon_ids;
  gsize                  n, n_addon_ids;
} Columns;

static void
columns_clear (Columns *c)
{
  _perfmon_snapshot_fields_clear (&c->fields);
  g_clear_pointer (&c->extended, g_variant_unref);
  g_clear_pointer (&c->ids_v, g_variant_unref);
  g_clear_pointer (&c->kinds_v, g_variant_unref);
  g_clear_pointer (&c->names_v, g_variant_unref);
  g_clear_pointer (&c->window_ids_v, g_variant_unref);
  g_clear_pointer (&c->addon_ids_v, g_variant_unref);
  g_clear_pointer (&c->addon_indexes_v, g_variant_unref);
  g_clear_pointer (&c->cpu_times_v, g_variant_unref);
  g_clear_pointer (&c->blocked_times_v, g_variant_unref);
  g_clear_pointer (&c->ticks_v, g_variant_unref);
  g_clear_pointer (&c->durations_v, g_variant_unref);
  g_clear_pointer (&c->sampled_cpu_times_v, g_variant_unref);
  g_clear_pointer (&c->addon_ids, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Columns, columns_clear)

static gboolean
read_columns (GVariant  *variant,
              Columns   *c,
              GError   **error)
{
  gsize length;
  guint32 version, pid, next_addon_index = 1;
  gboolean ids_increase = TRUE;
  g_autoptr(GHashTable) index_by_id = NULL;

  if (g_variant_type_equal (g_variant_get_type (variant), G_VARIANT_TYPE (SNAPSHOT_VARIANT_TYPE_NO_WALL_TIME)) ||
      g_variant_type_equal (g_variant_get_type (variant), G_VARIANT_TYPE (SNAPSHOT_VARIANT_TYPE_NO_MODULES)) ||
      g_variant_type_equal (g_variant_get_type (variant), G_VARIANT_TYPE (SNAPSHOT_VARIANT_TYPE_NO_SAMPLED)))
    {
      /* The forms of processes built before snapshots had sampled CPU
       * times, modules, or a wall time: the same but the last members. A
       * column of sampled CPU times has one 0 per group. */
      const char *type = g_variant_get_type_string (variant);
      g_autoptr(GPtrArray) children = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_unref);
      g_autoptr(GVariant) ids = g_variant_get_child_value (variant, 7);
      g_autofree guint64 *zeros = g_new0 (guint64, MAX (g_variant_n_children (ids), 1));

      for (gsize i = 0; i < g_variant_n_children (variant); i++)
        g_ptr_array_add (children, g_variant_get_child_value (variant, i));
      if (g_str_equal (type, SNAPSHOT_VARIANT_TYPE_NO_WALL_TIME))
        g_ptr_array_add (children, g_variant_ref_sink (g_variant_new_int64 (0)));
      if (!g_str_equal (type, SNAPSHOT_VARIANT_TYPE_NO_SAMPLED))
        g_ptr_array_add (children, g_variant_ref_sink (g_variant_new_array (G_VARIANT_TYPE ("(ssts)"), NULL, 0)));
      g_ptr_array_add (children, g_variant_ref_sink (g_variant_new_fixed_array (G_VARIANT_TYPE_UINT64, zeros,
                                                                                g_variant_n_children (ids),
                                                                                sizeof (guint64))));
      c->extended = g_variant_ref_sink (g_variant_new_tuple ((GVariant **) children->pdata, children->len));
      variant = c->extended;
    }

  if (!g_variant_type_equal (g_variant_get_type (variant),
                             G_VARIANT_TYPE (PERFMON_SNAPSHOT_VARIANT_TYPE)))
    return _perfmon_snapshot_set_field_error (error, NULL, "(root)", "expected a variant of type %s, got %s",
                                              PERFMON_SNAPSHOT_VARIANT_TYPE, g_variant_get_type_string (variant));

  /* Member by member, not with g_variant_get() and a format string,
   * whose parsing cost as much as the rest of the checks of a small
   * snapshot (perfmond checks hundreds a second). Each member is read
   * from the variant as it is, in tree form (as GDBus hands over a "v")
   * or serialised (GetSnapshotBytes), never serialised first. */
  {
    GVariant *members[N_MEMBERS];

    g_assert (g_variant_n_children (variant) == N_MEMBERS);
    for (guint i = 0; i < N_MEMBERS; i++)
      members[i] = g_variant_get_child_value (variant, i);
    version = g_variant_get_uint32 (members[0]);
    c->fields.timestamp = g_variant_get_int64 (members[1]);
    c->fields.interval = g_variant_get_int64 (members[2]);
    pid = g_variant_get_uint32 (members[3]);
    c->fields.process_name = g_variant_dup_string (members[4], NULL);
    c->fields.user_time = g_variant_get_uint64 (members[5]);
    c->fields.system_time = g_variant_get_uint64 (members[6]);
    c->ids_v = g_steal_pointer (&members[7]);
    c->kinds_v = g_steal_pointer (&members[8]);
    c->names_v = g_steal_pointer (&members[9]);
    c->window_ids_v = g_steal_pointer (&members[10]);
    c->addon_ids_v = g_steal_pointer (&members[11]);
    c->addon_indexes_v = g_steal_pointer (&members[12]);
    c->cpu_times_v = g_steal_pointer (&members[13]);
    c->blocked_times_v = g_steal_pointer (&members[14]);
    c->ticks_v = g_steal_pointer (&members[15]);
    c->durations_v = g_steal_pointer (&members[16]);
    c->fields.wall_time = g_variant_get_int64 (members[17]);
    length = g_variant_n_children (members[18]);
    if (length > PERFMON_RECORDED_MODULES_MAX)
      {
        for (guint i = 0; i < N_MEMBERS; i++)
          g_clear_pointer (&members[i], g_variant_unref);
        return _perfmon_snapshot_set_field_error (error, NULL, "modules",
                                                  "expected at most %d modules, got %" G_GSIZE_FORMAT,
                                                  PERFMON_RECORDED_MODULES_MAX, length);
      }
    if (length > 0)
      c->fields.modules = g_ptr_array_new_full (length, _perfmon_recorded_module_free);
    for (gsize i = 0; i < length; i++)
      {
        const char *name, *path, *build_id;
        guint64 base;

        g_variant_get_child (members[18], i, "(&s&st&s)", &name, &path, &base, &build_id);
        g_ptr_array_add (c->fields.modules, _perfmon_recorded_module_new (name, path, base, build_id));
      }
    c->sampled_cpu_times_v = g_steal_pointer (&members[19]);
    for (guint i = 0; i < N_MEMBERS; i++)
      g_clear_pointer (&members[i], g_variant_unref);
  }

  if (!_perfmon_snapshot_check_version (version, error))
    return FALSE;
  c->fields.pid = pid;

  /* Every column has one entry per group (durations PERFMON_N_DURATIONS). */
  c->ids = g_variant_get_fixed_array (c->ids_v, &c->n, sizeof (guint64));
  {
    const struct {
      const char *member;
      GVariant   *column;
      gsize       per_group;
    } columns[] = {
      { "kinds", c->kinds_v, 1 },
      { "names", c->names_v, 1 },
      { "window_ids", c->window_ids_v, 1 },
      { "addon_indexes", c->addon_indexes_v, 1 },
      { "cpu_times", c->cpu_times_v, 1 },
      { "blocked_times", c->blocked_times_v, 1 },
      { "ticks", c->ticks_v, 1 },
      { "durations", c->durations_v, PERFMON_N_DURATIONS },
      { "sampled_cpu_times", c->sampled_cpu_times_v, 1 },
    };

    for (guint i = 0; i < G_N_ELEMENTS (columns); i++)
      {
        gsize expected = c->n * columns[i].per_group;

        length = g_variant_n_children (columns[i].column);
        if (length != expected)
          return _perfmon_snapshot_set_field_error (error, NULL, columns[i].member,
                                                    "expected %" G_GSIZE_FORMAT " elements (%" G_GSIZE_FORMAT
                                                    " per id, %" G_GSIZE_FORMAT " ids), got %" G_GSIZE_FORMAT,
                                                    expected, columns[i].per_group, c->n, length);
      }
  }

  c->kinds = g_variant_get_fixed_array (c->kinds_v, &length, sizeof (guint32));
  c->window_ids = g_variant_get_fixed_array (c->window_ids_v, &length, sizeof (guint64));
  c->addon_ids = g_variant_get_strv (c->addon_ids_v, &c->n_addon_ids);
  c->addon_indexes = g_variant_get_fixed_array (c->addon_indexes_v, &length, sizeof (guint32));
  c->cpu_times = g_variant_get_fixed_array (c->cpu_times_v, &length, sizeof (guint64));
  c->blocked_times = g_variant_get_fixed_array (c->blocked_times_v, &length, sizeof (guint64));
  c->ticks = g_variant_get_fixed_array (c->ticks_v, &length, sizeof (guint64));
  c->durations = g_variant_get_fixed_array (c->durations_v, &length, sizeof (guint64));
  c->sampled_cpu_times = g_variant_get_fixed_array (c->sampled_cpu_times_v, &length, sizeof (guint64));

  /* The table lists each add-on id once, in the order of the groups that
   * first use it, as perfmon_snapshot_to_variant() writes it: any other
   * table would not read back to the same variant. */
  for (gsize i = 0; i < c->n; i++)
    {
      if (c->addon_indexes[i] > next_addon_index || c->addon_indexes[i] > c->n_addon_ids)
        {
          char prefix[32];

          g_snprintf (prefix, sizeof prefix, "groups[%" G_GSIZE_FORMAT "]", i);
          return _perfmon_snapshot_set_field_error (error, prefix, "addon_id",
                                                    "addon_indexes[%" G_GSIZE_FORMAT "] = %u, expected 0 (none) "
                                                    "or an index in [1, %u] of addon_ids (%" G_GSIZE_FORMAT
                                                    " entries, each first used in table order)",
                                                    i, c->addon_indexes[i],
                                                    MIN (next_addon_index, (guint32) MIN (c->n_addon_ids, G_MAXUINT32)),
                                                    c->n_addon_ids);
        }
      if (c->addon_indexes[i] == next_addon_index)
        next_addon_index++;
    }

  if (next_addon_index - 1 != c->n_addon_ids)
    return _perfmon_snapshot_set_field_error (error, NULL, "addon_ids",
                                              "%" G_GSIZE_FORMAT " entries, but groups use %u",
                                              c->n_addon_ids, next_addon_index - 1);
  {
    /* Entry → its index: a set, not a pairwise scan, for untrusted input
     * of thousands of add-ons. */
    g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

    for (gsize i = 0; i < c->n_addon_ids; i++)
      {
        gpointer first;

        if (g_hash_table_lookup_extended (seen, c->addon_ids[i], NULL, &first))
          return _perfmon_snapshot_set_field_error (error, NULL, "addon_ids",
                                                    "entries %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT
                                                    " are both \"%s\"",
                                                    (gsize) GPOINTER_TO_SIZE (first), i, c->addon_ids[i]);
        g_hash_table_insert (seen, (gpointer) c->addon_ids[i], GSIZE_TO_POINTER (i));
      }
  }

  /* The rules of the snapshot object (_perfmon_snapshot_new_checked()),
   * in its order, on the columns: the names come from GVariant's string
   * accessors, which give UTF-8 only. A monitor's ids increase along the
   * groups: no table is needed to find a duplicate then. */
  if (!_perfmon_snapshot_check_header (&c->fields, error))
    return FALSE;
  for (gsize i = 1; i < c->n && ids_increase; i++)
    ids_increase = c->ids[i - 1] < c->ids[i];
  if (!ids_increase)
    index_by_id = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (gsize i = 0; i < c->n; i++)
    {
      gpointer other;

      if (!_perfmon_snapshot_check_kind (c->kinds[i], (guint) i, error) ||
          !_perfmon_snapshot_check_sampled (c->kinds[i], c->sampled_cpu_times[i], (guint) i, error) ||
          !_perfmon_snapshot_check_histogram (c->ticks[i], &c->durations[i * PERFMON_N_DURATIONS], (guint) i, error))
        return FALSE;
      if (index_by_id == NULL)
        continue;
      if (g_hash_table_lookup_extended (index_by_id, &c->ids[i], NULL, &other))
        {
          char prefix[32];

          g_snprintf (prefix, sizeof prefix, "groups[%" G_GSIZE_FORMAT "]", i);
          return _perfmon_snapshot_set_field_error (error, prefix, "id",
                                                    "duplicate id %" G_GUINT64_FORMAT
                                                    ", already the id of groups[%u]",
                                                    c->ids[i], GPOINTER_TO_UINT (other));
        }
      g_hash_table_insert (index_by_id, (gpointer) &c->ids[i], GUINT_TO_POINTER ((guint) i));
    }

  return _perfmon_snapshot_check_modules (&c->fields, error);
}

/**
 * perfmon_snapshot_check_variant:
 * @variant: a #GVariant, as perfmon_snapshot_new_from_variant() takes it
 * @error: return location for a #GError
 *
 * Checks @variant as perfmon_snapshot_new_from_variant() does, without
 * building the snapshot: it fails exactly when that would, with the same
 * error. For a reader that keeps many snapshots in their variant form and
 * reads few of them, such as perfmond, which checks each snapshot it
 * receives and decodes the newest only when asked for it.
 *
 * Returns: %TRUE if perfmon_snapshot_new_from_variant() reads @variant
 *
 * Since: 0.3
 */
gboolean
perfmon_snapshot_check_variant (GVariant  *variant,
                                GError   **error)
{
  g_auto(Columns) c = { { 0, }, };

  g_return_val_if_fail (variant != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return read_columns (variant, &c, error);
}

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
  g_auto(Columns) c = { { 0, }, };
  g_autofree const char **names = NULL;

  g_return_val_if_fail (variant != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!read_columns (variant, &c, error))
    return NULL;

  names = g_variant_get_strv (c.names_v, NULL);
  c.fields.groups = g_ptr_array_new_full (c.n, (GDestroyNotify) perfmon_group_stats_unref);
  for (gsize i = 0; i < c.n; i++)
    {
      PerfmonGroupStats *stats;

      stats = _perfmon_group_stats_new (c.ids[i], (PerfmonGroupKind) c.kinds[i], names[i], c.window_ids[i],
                                        c.addon_indexes[i] != 0 ? c.addon_ids[c.addon_indexes[i] - 1] : NULL);
      stats->cpu_time = c.cpu_times[i];
      stats->blocked_time = c.blocked_times[i];
      stats->ticks = c.ticks[i];
      stats->sampled_cpu_time = c.sampled_cpu_times[i];
      memcpy (stats->durations, &c.durations[i * PERFMON_N_DURATIONS], sizeof stats->durations);
      g_ptr_array_add (c.fields.groups, stats);
    }

  /* Checked again on the groups: read_columns() applied the same rules. */
  return _perfmon_snapshot_new_checked (&c.fields, error);
}
