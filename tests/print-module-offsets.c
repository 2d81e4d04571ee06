/* print-module-offsets.c: the module offsets perfmon gives a few functions
 * of this program, built as a non-PIE executable; test_module_offsets.py
 * checks them against `nm` and `readelf`.
 *
 * (A helper program for the tests, not a test: the assertions are in
 * the test that runs it.)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>

#include "perfmon-modules-private.h"

G_GNUC_NO_INLINE __attribute__ ((used)) static void
offsets_static_function (void)
{
  static volatile int calls;

  calls++;
}

void offsets_global_function (void);

G_GNUC_NO_INLINE __attribute__ ((used)) void
offsets_global_function (void)
{
  static volatile int calls;

  calls++;
}

static void
print_offset (PerfmonModules *modules,
              const char     *name,
              void          (*function) (void))
{
  guint index;
  guint64 offset;

  if (!_perfmon_modules_lookup (modules, (guint64) (gsize) function, &index, &offset))
    {
      printf ("%s outside\n", name);
      return;
    }
  printf ("%s %u %" G_GINT64_MODIFIER "x\n", name, index, offset);
}

int
main (int argc, char **argv)
{
  g_autoptr(PerfmonModules) modules = _perfmon_modules_new ();

  offsets_static_function ();
  offsets_global_function ();
  print_offset (modules, "offsets_static_function", offsets_static_function);
  print_offset (modules, "offsets_global_function", offsets_global_function);
  /* Not &g_main_loop_run: in a non-PIE program that is a PLT entry of the
   * program itself. */
  void *glib = dlopen ("libglib-2.0.so.0", RTLD_NOW | RTLD_NOLOAD);
  print_offset (modules, "g_main_loop_run", (void (*) (void)) dlsym (glib, "g_main_loop_run"));
  printf ("module0 %s\n", _perfmon_modules_get_path (modules, 0));
  return 0;
}
