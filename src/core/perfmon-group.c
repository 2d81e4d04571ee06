/* perfmon-group.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-enum-types.h"
#include "perfmon-group-private.h"
#include "perfmon-monitor-private.h"

/**
 * PerfmonGroup:
 *
 * A performance group: code whose cost perfmon accounts for together.
 *
 * Groups come from a [class@Perfmon.Monitor]: the thread's top group
 * ([method@Perfmon.Monitor.get_thread_group]), a group per window
 * ([method@Perfmon.Monitor.get_window_group]), a group per add-on
 * ([method@Perfmon.Monitor.get_addon_group]) and compartments
 * ([method@Perfmon.Monitor.create_compartment]). Code runs inside a
 * compartment between [method@Perfmon.Group.enter] and
 * [method@Perfmon.Group.leave], and its cost is charged to each active group
 * the compartment belongs to.
 *
 * Groups are reference counted. A window or add-on group lives as long as
 * one of its compartments or a caller holds it; once it is gone it no longer
 * appears in snapshots, and a later lookup creates a new group with a new id.
 *
 * Threads: a group belongs to its monitor's thread. Enter, leave and change
 * [property@Perfmon.Group:active] there; the identity getters may be called
 * from any thread. Drop the last reference to a compartment on the monitor's
 * thread too (alerts refer to it from there).
 *
 * Since: 0.1
 */

enum {
  PROP_0,
  PROP_ID,
  PROP_KIND,
  PROP_NAME,
  PROP_WINDOW_ID,
  PROP_ADDON_ID,
  PROP_ACTIVE,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (PerfmonGroup, perfmon_group, G_TYPE_OBJECT)

gboolean
_perfmon_group_record_try_hold (PerfmonGroupRecord *record)
{
  int holders = g_atomic_int_get (&record->holders);

  /* Never take a record back from zero: it is already on the dead stack. */
  while (holders > 0)
    {
      if (g_atomic_int_compare_and_exchange_full (&record->holders, holders, holders + 1, &holders))
        return TRUE;
    }

  return FALSE;
}

void
_perfmon_group_record_release (PerfmonGroupRecord *record)
{
  if (!g_atomic_int_dec_and_test (&record->holders))
    return;

  /* Read the parents before the record is given to the monitor: from then
   * on the monitor's thread may free it at any moment. */
  PerfmonGroupRecord *window = PERFMON_RECORD_WINDOW (record);
  PerfmonGroupRecord *addon = PERFMON_RECORD_ADDON (record);

  _perfmon_monitor_bury_record (record->monitor, record);

  if (window != NULL)
    _perfmon_group_record_release (window);
  if (addon != NULL)
    _perfmon_group_record_release (addon);
}

PerfmonGroup *
_perfmon_group_new (PerfmonGroupRecord *record)
{
  PerfmonGroup *self = g_object_new (PERFMON_TYPE_GROUP, NULL);

  self->record = record;
  g_object_ref (record->monitor);
  if (record->kind == PERFMON_GROUP_KIND_COMPARTMENT)
    {
      record->group.compartment = self;
      self->compartment = record;
    }
  else
    g_weak_ref_set (&record->group.object, self);

  return self;
}

static void
perfmon_group_finalize (GObject *object)
{
  PerfmonGroup *self = PERFMON_GROUP (object);
  PerfmonGroupRecord *record = self->record;

  if (record != NULL)
    {
      PerfmonMonitor *monitor = record->monitor;

      if (record->kind == PERFMON_GROUP_KIND_COMPARTMENT)
        record->group.compartment = NULL;
      _perfmon_group_record_release (record);
      g_object_unref (monitor);
    }

  G_OBJECT_CLASS (perfmon_group_parent_class)->finalize (object);
}

static void
perfmon_group_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  PerfmonGroup *self = PERFMON_GROUP (object);

  switch (prop_id)
    {
    case PROP_ID:
      g_value_set_uint64 (value, perfmon_group_get_id (self));
      break;
    case PROP_KIND:
      g_value_set_enum (value, perfmon_group_get_kind (self));
      break;
    case PROP_NAME:
      g_value_set_string (value, perfmon_group_get_name (self));
      break;
    case PROP_WINDOW_ID:
      g_value_set_uint64 (value, perfmon_group_get_window_id (self));
      break;
    case PROP_ADDON_ID:
      g_value_set_string (value, perfmon_group_get_addon_id (self));
      break;
    case PROP_ACTIVE:
      g_value_set_boolean (value, perfmon_group_get_active (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_group_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  PerfmonGroup *self = PERFMON_GROUP (object);

  switch (prop_id)
    {
    case PROP_ACTIVE:
      perfmon_group_set_active (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
perfmon_group_class_init (PerfmonGroupClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = perfmon_group_finalize;
  object_class->get_property = perfmon_group_get_property;
  object_class->set_property = perfmon_group_set_property;

  /**
   * PerfmonGroup:id:
   *
   * The group's id, unique among all groups of the process.
   *
   * Since: 0.1
   */
  properties[PROP_ID] =
    g_param_spec_uint64 ("id", NULL, NULL, 0, G_MAXUINT64, 0,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonGroup:kind:
   *
   * What the group stands for.
   *
   * Since: 0.1
   */
  properties[PROP_KIND] =
    g_param_spec_enum ("kind", NULL, NULL,
                       PERFMON_TYPE_GROUP_KIND, PERFMON_GROUP_KIND_THREAD,
                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonGroup:name:
   *
   * A human-readable name.
   *
   * Since: 0.1
   */
  properties[PROP_NAME] =
    g_param_spec_string ("name", NULL, NULL, NULL,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonGroup:window-id:
   *
   * The id of the window the group's code runs for, or 0.
   *
   * Since: 0.1
   */
  properties[PROP_WINDOW_ID] =
    g_param_spec_uint64 ("window-id", NULL, NULL, 0, G_MAXUINT64, 0,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonGroup:addon-id:
   *
   * The id of the add-on the group's code comes from, or %NULL.
   *
   * Since: 0.1
   */
  properties[PROP_ADDON_ID] =
    g_param_spec_string ("addon-id", NULL, NULL, NULL,
                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);

  /**
   * PerfmonGroup:active:
   *
   * Whether the group is measured. Compartments are inactive by default
   * (their windows and add-ons are still measured), all other groups active.
   *
   * Since: 0.1
   */
  properties[PROP_ACTIVE] =
    g_param_spec_boolean ("active", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
perfmon_group_init (PerfmonGroup *self)
{
}

/**
 * perfmon_group_get_id:
 * @self: a group
 *
 * Gets the group's id, the key of its counters in a [class@Perfmon.Snapshot].
 *
 * Returns: the group's id, unique in the process
 *
 * Since: 0.1
 */
guint64
perfmon_group_get_id (PerfmonGroup *self)
{
  g_return_val_if_fail (PERFMON_IS_GROUP (self), 0);
  g_return_val_if_fail (self->record != NULL, 0);

  return self->record->id;
}

/**
 * perfmon_group_get_kind:
 * @self: a group
 *
 * Gets what kind of group this is: a thread, a window, an add-on or a
 * compartment.
 *
 * Returns: what the group stands for
 *
 * Since: 0.1
 */
PerfmonGroupKind
perfmon_group_get_kind (PerfmonGroup *self)
{
  g_return_val_if_fail (PERFMON_IS_GROUP (self), PERFMON_GROUP_KIND_THREAD);
  g_return_val_if_fail (self->record != NULL, PERFMON_GROUP_KIND_THREAD);

  return self->record->kind;
}

/**
 * perfmon_group_get_name:
 * @self: a group
 *
 * Gets the group's name, as snapshots and `perfmon top` show it.
 *
 * Returns: (transfer none): the group's name
 *
 * Since: 0.1
 */
const char *
perfmon_group_get_name (PerfmonGroup *self)
{
  g_return_val_if_fail (PERFMON_IS_GROUP (self), NULL);
  g_return_val_if_fail (self->record != NULL, NULL);

  return self->record->name;
}

/**
 * perfmon_group_get_window_id:
 * @self: a group
 *
 * Gets the id of the window the group stands for or belongs to.
 *
 * Returns: the id of the window of a window group or of a compartment that
 *   belongs to a window, otherwise 0
 *
 * Since: 0.1
 */
guint64
perfmon_group_get_window_id (PerfmonGroup *self)
{
  PerfmonGroupRecord *record;

  g_return_val_if_fail (PERFMON_IS_GROUP (self), 0);
  g_return_val_if_fail (self->record != NULL, 0);

  record = self->record;
  if (record->kind == PERFMON_GROUP_KIND_WINDOW)
    return record->key.window_id;
  if (PERFMON_RECORD_WINDOW (record) != NULL)
    return PERFMON_RECORD_WINDOW (record)->key.window_id;
  return 0;
}

/**
 * perfmon_group_get_addon_id:
 * @self: a group
 *
 * Gets the id of the add-on the group stands for or belongs to.
 *
 * Returns: (transfer none) (nullable): the id of the add-on of an add-on
 *   group or of a compartment that belongs to an add-on, otherwise %NULL
 *
 * Since: 0.1
 */
const char *
perfmon_group_get_addon_id (PerfmonGroup *self)
{
  PerfmonGroupRecord *record;

  g_return_val_if_fail (PERFMON_IS_GROUP (self), NULL);
  g_return_val_if_fail (self->record != NULL, NULL);

  record = self->record;
  if (record->kind == PERFMON_GROUP_KIND_ADDON)
    return record->key.addon_id;
  if (PERFMON_RECORD_ADDON (record) != NULL)
    return PERFMON_RECORD_ADDON (record)->key.addon_id;
  return NULL;
}

/**
 * perfmon_group_get_active:
 * @self: a group
 *
 * Gets whether the group is measured on its own: see
 * [property@Perfmon.Group:active].
 *
 * Returns: whether the group is measured
 *
 * Since: 0.1
 */
gboolean
perfmon_group_get_active (PerfmonGroup *self)
{
  g_return_val_if_fail (PERFMON_IS_GROUP (self), FALSE);
  g_return_val_if_fail (self->record != NULL, FALSE);

  return self->record->active;
}

/**
 * perfmon_group_set_active:
 * @self: a group
 * @active: whether to measure the group
 *
 * Starts or stops measuring @self. A change takes effect at the next
 * [method@Perfmon.Group.enter] of a compartment that belongs to @self.
 * Call it on the monitor's thread.
 *
 * Since: 0.1
 */
void
perfmon_group_set_active (PerfmonGroup *self,
                          gboolean      active)
{
  g_return_if_fail (PERFMON_IS_GROUP (self));
  g_return_if_fail (self->record != NULL);

  active = !!active;
  if (self->record->active == active)
    return;

  self->record->active = active;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ACTIVE]);
}

/* perfmon_group_enter() and perfmon_group_leave() live in
 * perfmon-monitor.c, beside the measuring code they inline. */
