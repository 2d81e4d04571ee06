/* perfmon-recorded-module.c: what a file records of a module that its
 * "module+0x…" names refer to
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-error.h"
#include "perfmon-recorded-module-private.h"

PerfmonRecordedModule *
_perfmon_recorded_module_new (const char *name,
                              const char *path,
                              guint64     base,
                              const char *build_id)
{
  PerfmonRecordedModule *module = g_new0 (PerfmonRecordedModule, 1);

  module->name = g_strdup (name);
  module->path = g_strdup (path);
  module->base = base;
  module->build_id = g_strdup (build_id != NULL ? build_id : "");
  return module;
}

PerfmonRecordedModule *
_perfmon_recorded_module_copy (const PerfmonRecordedModule *module)
{
  return _perfmon_recorded_module_new (module->name, module->path, module->base, module->build_id);
}

void
_perfmon_recorded_module_free (gpointer data)
{
  PerfmonRecordedModule *module = data;

  if (module == NULL)
    return;
  g_free (module->name);
  g_free (module->path);
  g_free (module->build_id);
  g_free (module);
}

static gboolean
invalid (GError     **error,
         const char  *prefix,
         const char  *member,
         const char  *expected)
{
  g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA, "%s.%s: expected %s",
               prefix, member, expected);
  return FALSE;
}

gboolean
_perfmon_recorded_module_check (const char  *prefix,
                                const char  *name,
                                const char  *path,
                                const char  *build_id,
                                GError     **error)
{
  gsize length;

  if (name == NULL || name[0] == '\0' || strlen (name) > 255 || strchr (name, '/') != NULL ||
      !g_utf8_validate (name, -1, NULL))
    return invalid (error, prefix, "name", "a file name: 1 to 255 bytes of UTF-8 without '/'");
  if (path == NULL || path[0] != '/' || strlen (path) > PERFMON_RECORDED_MODULE_PATH_MAX ||
      !g_utf8_validate (path, -1, NULL))
    return invalid (error, prefix, "path",
                    "an absolute path: 1 to " G_STRINGIFY (PERFMON_RECORDED_MODULE_PATH_MAX) " bytes of UTF-8");
  length = build_id != NULL ? strlen (build_id) : 0;
  if (build_id == NULL || length % 2 != 0 || length > PERFMON_RECORDED_MODULE_BUILD_ID_MAX ||
      strspn (build_id, "0123456789abcdef") != length)
    return invalid (error, prefix, "build_id",
                    "\"\" or an even number, up to " G_STRINGIFY (PERFMON_RECORDED_MODULE_BUILD_ID_MAX)
                    ", of lowercase hex digits");
  return TRUE;
}

const PerfmonRecordedModule *
_perfmon_recorded_modules_find (GPtrArray  *modules,
                                const char *name)
{
  for (guint i = 0; modules != NULL && name != NULL && i < modules->len; i++)
    {
      const PerfmonRecordedModule *module = g_ptr_array_index (modules, i);

      if (g_str_equal (module->name, name))
        return module;
    }
  return NULL;
}
