/* peas-burn-plugin.c: a libpeas C plugin that burns CPU in a GLib timeout,
 * or (-DPEAS_TEST_CALM) one that does almost nothing in it, and measures
 * what it burnt (tests/cli/test_cli_run_peas.py, issue 24 point 7)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <libpeas/peas.h>
#include <time.h>

#define BURN_MS 30

/* Two plugins in one process may not register one type name. */
#ifdef PEAS_TEST_CALM
#define PeasTestPlugin PeasTestCalmPlugin
#define PeasTestPluginClass PeasTestCalmPluginClass
#endif

#define PEAS_TEST_TYPE_PLUGIN (peas_test_plugin_get_type ())
G_DECLARE_FINAL_TYPE (PeasTestPlugin, peas_test_plugin, PEAS_TEST, PLUGIN, PeasExtensionBase)

struct _PeasTestPlugin
{
  PeasExtensionBase parent_instance;
  GObject *object;
  guint timeout_id;
  gint64 burnt_us;
};

enum { PROP_0, PROP_OBJECT, PROP_BURNT };

static void activatable_iface_init (PeasActivatableInterface *iface);

/* Through a macro of its own, so that the type's name is PeasTestPlugin's
 * expansion. */
#define DEFINE_PLUGIN_TYPE(TypeName) \
  G_DEFINE_DYNAMIC_TYPE_EXTENDED (TypeName, peas_test_plugin, PEAS_TYPE_EXTENSION_BASE, G_TYPE_FLAG_FINAL, \
                                  G_IMPLEMENT_INTERFACE_DYNAMIC (PEAS_TYPE_ACTIVATABLE, activatable_iface_init))
DEFINE_PLUGIN_TYPE (PeasTestPlugin)

static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* Static, as a plugin's callbacks usually are: no dynamic symbol. */
static gboolean
on_timeout (gpointer data)
{
  PeasTestPlugin *self = data;
  gint64 start = thread_cpu_us ();
  gint64 now = start;

#ifndef PEAS_TEST_CALM
  while (now - start < BURN_MS * 1000)
    now = thread_cpu_us ();
#endif
  self->burnt_us += now - start;
  return G_SOURCE_CONTINUE;
}

static void
peas_test_plugin_activate (PeasActivatable *activatable)
{
  PeasTestPlugin *self = PEAS_TEST_PLUGIN (activatable);

  self->timeout_id = g_timeout_add (100, on_timeout, self);
}

static void
peas_test_plugin_deactivate (PeasActivatable *activatable)
{
  PeasTestPlugin *self = PEAS_TEST_PLUGIN (activatable);

  g_clear_handle_id (&self->timeout_id, g_source_remove);
}

static void
activatable_iface_init (PeasActivatableInterface *iface)
{
  iface->activate = peas_test_plugin_activate;
  iface->deactivate = peas_test_plugin_deactivate;
}

static void
peas_test_plugin_set_property (GObject      *object,
                               guint         prop_id,
                               const GValue *value,
                               GParamSpec   *pspec)
{
  PeasTestPlugin *self = PEAS_TEST_PLUGIN (object);

  switch (prop_id)
    {
    case PROP_OBJECT:
      g_set_object (&self->object, g_value_get_object (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
peas_test_plugin_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  PeasTestPlugin *self = PEAS_TEST_PLUGIN (object);

  switch (prop_id)
    {
    case PROP_OBJECT:
      g_value_set_object (value, self->object);
      break;
    case PROP_BURNT:
      g_value_set_int64 (value, self->burnt_us);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
peas_test_plugin_dispose (GObject *object)
{
  PeasTestPlugin *self = PEAS_TEST_PLUGIN (object);

  g_clear_handle_id (&self->timeout_id, g_source_remove);
  g_clear_object (&self->object);
  G_OBJECT_CLASS (peas_test_plugin_parent_class)->dispose (object);
}

static void
peas_test_plugin_class_init (PeasTestPluginClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->set_property = peas_test_plugin_set_property;
  object_class->get_property = peas_test_plugin_get_property;
  object_class->dispose = peas_test_plugin_dispose;
  g_object_class_override_property (object_class, PROP_OBJECT, "object");
  g_object_class_install_property (object_class, PROP_BURNT,
                                   g_param_spec_int64 ("burnt", NULL, NULL, 0, G_MAXINT64, 0,
                                                       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
}

static void
peas_test_plugin_class_finalize (PeasTestPluginClass *klass)
{
}

static void
peas_test_plugin_init (PeasTestPlugin *self)
{
}

G_MODULE_EXPORT void peas_register_types (PeasObjectModule *module);

G_MODULE_EXPORT void
peas_register_types (PeasObjectModule *module)
{
  peas_test_plugin_register_type (G_TYPE_MODULE (module));
  peas_object_module_register_extension_type (module, PEAS_TYPE_ACTIVATABLE, PEAS_TEST_TYPE_PLUGIN);
}
