/* perfmon-preload-typelib.c: the preload module's interposers, for
 * programs that call GLib through GObject-Introspection
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The preload module replaces GLib functions (g_idle_add_full(),
 * g_source_attach(), g_thread_pool_push(), the synchronous D-Bus calls…)
 * by defining them first in the process's global scope: calls through the
 * PLT, from the program and its C libraries, reach perfmon's definition.
 *
 * Python (PyGObject) and JavaScript (GJS) programs make no such call. The
 * bindings call C through libffi, with a function pointer that
 * libgirepository finds by name in the library the typelib names:
 * g_function_info_prep_invoker() and g_function_info_invoke() call
 * g_typelib_symbol(), which asks g_module_symbol() — dlsym() on libglib's
 * own handle — and so hands out GLib's definition, never the preload's.
 * GLib.idle_add(), GLib.timeout_add(), Gio.Task.run_in_thread()… from
 * Python or JavaScript then bypass perfmon (and GLib attaches their
 * sources internally, where no interposer sees them either).
 *
 * The one place both bindings go through is g_typelib_symbol(), and
 * libgirepository calls it through its own PLT (Debian 12's
 * libgirepository-1.0.so.1 has no -Bsymbolic-functions: `objdump -d` shows
 * `call g_typelib_symbol@plt` in g_function_info_prep_invoker() and
 * g_function_info_invoke()). So the module interposes it too: it asks the
 * real one, and when the symbol found is one that this module defines as
 * well (the one the dynamic linker's global scope gives for that name lies
 * in this module), it hands back this module's definition instead. Every
 * interposer of the module thus holds for bindings as for C, with no list
 * to keep: a function added to the module is covered.
 *
 * Found by PyGObject 3.42 and GJS 1.74 once per function (they keep the
 * pointer), so the cost is one dladdr() per function a program uses.
 *
 * Not covered: libgirepository-2.0 (GLib 2.80's gi_typelib_symbol(); not
 * on Debian 12), and a binding that calls dlsym() itself.
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <dlfcn.h>
#include <glib.h>

/* The prototype of girepository.h (the module does not link with it). */
gboolean g_typelib_symbol (gpointer      typelib,
                           const gchar  *symbol_name,
                           gpointer     *symbol);

typedef gboolean (*TypelibSymbolFunc) (gpointer typelib, const gchar *symbol_name, gpointer *symbol);

/* libgirepository's g_typelib_symbol(). Python loads it with its extension
 * module, RTLD_LOCAL, where RTLD_NEXT does not look: then it is found in
 * the library itself, which is loaded since it called us. */
static TypelibSymbolFunc
real_typelib_symbol (void)
{
  static TypelibSymbolFunc real;
  TypelibSymbolFunc found = g_atomic_pointer_get (&real);

  if (G_LIKELY (found != NULL))
    return found;
  found = (TypelibSymbolFunc) dlsym (RTLD_NEXT, "g_typelib_symbol");
  if (found == NULL)
    {
      void *library = dlopen ("libgirepository-1.0.so.1", RTLD_LAZY | RTLD_NOLOAD);

      if (library != NULL)
        {
          found = (TypelibSymbolFunc) dlsym (library, "g_typelib_symbol");
          /* Still loaded by its user: the pointer outlives the handle. */
          dlclose (library);
        }
    }
  if (found == NULL)
    g_error ("perfmon: no g_typelib_symbol after the preload module");
  g_atomic_pointer_set (&real, found);
  return found;
}

/* This module's definition of @name, or NULL if it defines none. */
static gpointer
own_definition (const char *name)
{
  static gpointer own_base;
  gpointer base = g_atomic_pointer_get (&own_base);
  gpointer found;
  Dl_info info;

  if (base == NULL)
    {
      if (dladdr ((gconstpointer) own_definition, &info) == 0)
        return NULL;
      base = info.dli_fbase;
      g_atomic_pointer_set (&own_base, base);
    }
  found = dlsym (RTLD_DEFAULT, name);
  if (found == NULL || dladdr (found, &info) == 0 || info.dli_fbase != base)
    return NULL;
  return found;
}

gboolean
g_typelib_symbol (gpointer      typelib,
                  const gchar  *symbol_name,
                  gpointer     *symbol)
{
  gboolean found = real_typelib_symbol () (typelib, symbol_name, symbol);

  if (found && symbol_name != NULL && symbol != NULL &&
      (symbol_name[0] == 'g' && symbol_name[1] == '_'))
    {
      gpointer ours = own_definition (symbol_name);

      if (ours != NULL)
        *symbol = ours;
    }
  return found;
}
