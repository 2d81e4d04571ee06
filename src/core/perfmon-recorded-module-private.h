/* perfmon-recorded-module-private.h: what a file records of a module that
 * its "module+0x…" names refer to
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Groups and tasks whose callback has no exported symbol are named
 * "module+0xOFFSET" by the program (it never symbolizes): the file name of
 * the module and the offset from its base. So that the tool can name them
 * after the program has exited, the files that hold such names (snapshots,
 * in their JSON and GVariant forms, and task logs) record, once per
 * module, where the program loaded it from, its load base and its GNU
 * build id. stack/ finds them (_perfmon_modules_for_names()); this is the
 * record and the one check of it that every reader applies.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  char    *name;       /* the word before "+0x" in the names: the file name */
  char    *path;       /* the file the program loaded */
  guint64  base;       /* its load base, where the offsets count from */
  char    *build_id;   /* GNU build id, lowercase hex; "" if none */
} PerfmonRecordedModule;

/* The most modules one file records. */
#define PERFMON_RECORDED_MODULES_MAX 4096
/* The longest path and build id (in hex digits) a record may hold. */
#define PERFMON_RECORDED_MODULE_PATH_MAX 4096
#define PERFMON_RECORDED_MODULE_BUILD_ID_MAX 128

PerfmonRecordedModule *_perfmon_recorded_module_new  (const char *name,
                                                      const char *path,
                                                      guint64     base,
                                                      const char *build_id);
PerfmonRecordedModule *_perfmon_recorded_module_copy (const PerfmonRecordedModule *module);
void                   _perfmon_recorded_module_free (gpointer module);

/* Checks untrusted fields: @name a file name (non-empty, no '/', at most
 * 255 bytes), @path absolute, @build_id "" or an even number of lowercase
 * hex digits, all UTF-8 and bounded. On failure, a PERFMON_ERROR_INVALID_DATA
 * error that names @prefix's member ("modules[2].build_id") and the allowed
 * form, without echoing the input. */
gboolean _perfmon_recorded_module_check (const char  *prefix,
                                         const char  *name,
                                         const char  *path,
                                         const char  *build_id,
                                         GError     **error);

/* The module of @modules (of PerfmonRecordedModule; may be NULL) named
 * @name, or NULL. */
const PerfmonRecordedModule *_perfmon_recorded_modules_find (GPtrArray  *modules,
                                                             const char *name);

G_END_DECLS
