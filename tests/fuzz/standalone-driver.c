/* standalone-driver.c: run a fuzz target over files, without libFuzzer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: fuzz-TARGET-regress FILE-OR-DIRECTORY...
 *
 * Calls LLVMFuzzerTestOneInput() once per file (the files of a directory
 * in name order, not recursively), so that any compiler can replay a
 * corpus as a regression test. Fails if an argument cannot be read or if
 * there was no input at all; a finding aborts, as under libFuzzer.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

int LLVMFuzzerTestOneInput (const uint8_t *data,
                            size_t         size);

static gboolean
run_file (const char  *path,
          GError     **error)
{
  g_autofree char *contents = NULL;
  gsize length;

  if (!g_file_get_contents (path, &contents, &length, error))
    return FALSE;

  g_print ("%s (%" G_GSIZE_FORMAT " bytes)\n", path, length);
  LLVMFuzzerTestOneInput ((const uint8_t *) contents, length);

  return TRUE;
}

static int
compare_paths (gconstpointer a,
               gconstpointer b)
{
  return strcmp (*(char * const *) a, *(char * const *) b);
}

static gboolean
run_path (const char  *path,
          guint       *n_inputs,
          GError     **error)
{
  g_autoptr(GDir) dir = NULL;
  g_autoptr(GPtrArray) names = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      if (!run_file (path, error))
        return FALSE;
      (*n_inputs)++;
      return TRUE;
    }

  dir = g_dir_open (path, 0, error);
  if (dir == NULL)
    return FALSE;

  names = g_ptr_array_new_with_free_func (g_free);
  while ((name = g_dir_read_name (dir)) != NULL)
    g_ptr_array_add (names, g_build_filename (path, name, NULL));
  g_ptr_array_sort (names, compare_paths);

  for (guint i = 0; i < names->len; i++)
    {
      const char *file = g_ptr_array_index (names, i);

      if (g_file_test (file, G_FILE_TEST_IS_DIR))
        continue;

      if (!run_file (file, error))
        return FALSE;
      (*n_inputs)++;
    }

  return TRUE;
}

int
main (int    argc,
      char **argv)
{
  guint n_inputs = 0;

  if (argc < 2)
    {
      g_printerr ("Usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
      return EXIT_FAILURE;
    }

  for (int i = 1; i < argc; i++)
    {
      g_autoptr(GError) error = NULL;

      if (!run_path (argv[i], &n_inputs, &error))
        {
          g_printerr ("%s: %s\n", argv[0], error->message);
          return EXIT_FAILURE;
        }
    }

  if (n_inputs == 0)
    {
      g_printerr ("%s: no input files\n", argv[0]);
      return EXIT_FAILURE;
    }

  g_print ("%u inputs, no finding\n", n_inputs);

  return EXIT_SUCCESS;
}
