/* bench-symbolize.c: what naming the frames of a hang costs
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A 40-frame stack of a GTK 4 program (GTK, GDK, GLib, GObject, GIO, libc
 * frames, return addresses 4 bytes into each function), symbolized by a new
 * symbolizer (cold: every module's files are found and its symbol tables
 * read) and again by the same one (warm: from the cache), in ms, medians
 * of interleaved rounds; then the heap the cache keeps (mallinfo2) and the
 * resident memory it adds (no file stays mapped: the cache holds copies).
 * This runs on the watchdog thread in a monitored program,
 * never on the monitored one.
 */
#define _GNU_SOURCE 1

#include "config.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench-common.h"
#include "perfmon-modules-private.h"
#include "perfmon-symbolizer-private.h"

#define N_FRAMES 40
#define ROUNDS 9

/* Outermost first, as a GTK 4 program's stack in a signal handler. */
static const char * const functions[] = {
  "__libc_start_main", "g_application_run", "g_main_context_iteration",
  "g_main_context_dispatch", "g_source_set_callback", "g_closure_invoke",
  "g_signal_emit_valist", "g_signal_emit", "gdk_frame_clock_begin_updating",
  "gdk_display_get_default", "gdk_surface_queue_render", "gtk_native_get_surface",
  "gtk_widget_snapshot", "gtk_snapshot_append_color", "gtk_widget_measure",
  "gtk_widget_size_allocate", "gtk_box_append", "gtk_widget_get_width",
  "gtk_widget_queue_draw", "gtk_style_context_add_class", "gtk_css_provider_load_from_data",
  "gtk_label_set_text", "gtk_text_buffer_insert", "gtk_widget_activate",
  "gtk_button_new_with_label", "gtk_widget_add_controller", "gtk_gesture_click_new",
  "gtk_event_controller_get_widget", "gtk_window_present", "gtk_application_window_new", "gtk_widget_get_parent",
  "g_object_new", "g_object_set", "g_type_check_instance_cast", "g_hash_table_lookup",
  "g_idle_add", "g_timeout_add", "g_strdup", "g_malloc", "malloc", "memcpy",
};

typedef struct
{
  PerfmonModuleRef ref;
  guint64          offset;
} Frame;

static guint
symbolize (PerfmonSymbolizer *symbolizer,
           const Frame       *frames,
           guint              n,
           double            *ms)
{
  gint64 start = _perfmon_clock_monotonic_ns ();
  guint named = 0;

  for (guint i = 0; i < n; i++)
    {
      guint64 function_offset;
      g_autofree char *name = _perfmon_symbolizer_lookup_ref (symbolizer, &frames[i].ref, frames[i].offset,
                                                              TRUE, 0, &function_offset);

      named += name != NULL;
      if (name == NULL && g_getenv ("BENCH_VERBOSE") != NULL)
        g_printerr ("unnamed: %s+0x%" G_GINT64_MODIFIER "x\n", frames[i].ref.path, frames[i].offset);
    }
  *ms = (double) (_perfmon_clock_monotonic_ns () - start) / 1e6;
  return named;
}

static gsize
heap_in_use (void)
{
  struct mallinfo2 info = mallinfo2 ();

  return info.uordblks + info.hblkhd;
}

static gsize
resident_bytes (void)
{
  g_autofree char *statm = NULL;
  unsigned long size = 0, resident = 0;

  if (g_file_get_contents ("/proc/self/statm", &statm, NULL, NULL))
    sscanf (statm, "%lu %lu", &size, &resident);
  return resident * (gsize) sysconf (_SC_PAGESIZE);
}

int
main (void)
{
  void *gtk = dlopen ("libgtk-4.so.1", RTLD_NOW | RTLD_GLOBAL);
  g_autoptr(PerfmonModules) modules = NULL;
  Frame frames[N_FRAMES];
  guint n = 0;
  double cold[ROUNDS], warm[ROUNDS];
  guint named_cold = 0, named_warm = 0;
  gsize heap_before, heap_after, rss_before, rss_after, heap_freed;
  g_autofree char *uptime = NULL;
  PerfmonSymbolizer *symbolizer;
  double ms;

  if (gtk == NULL)
    {
      g_printerr ("bench-symbolize: libgtk-4.so.1 is not installed (%s)\n", dlerror ());
      return 77;
    }
  modules = _perfmon_modules_new ();
  for (guint i = 0; i < G_N_ELEMENTS (functions) && n < N_FRAMES; i++)
    {
      void *address = dlsym (gtk, functions[i]);
      guint index;
      guint64 offset;

      if (address == NULL || !_perfmon_modules_lookup (modules, (guint64) (gsize) address + 4, &index, &offset))
        continue;
      frames[n].ref.path = _perfmon_modules_get_path (modules, index);
      frames[n].ref.build_id = _perfmon_modules_get_build_id (modules, index);
      frames[n].ref.breakpad_id = NULL;
      frames[n].offset = offset;
      n++;
    }

  g_spawn_command_line_sync ("uptime", &uptime, NULL, NULL, NULL);
  printf ("# uptime: %s", uptime != NULL ? uptime : "?\n");
  printf ("# %u frames in %u modules of a GTK 4 stack; %d rounds, cold and warm interleaved\n",
          n, _perfmon_modules_get_n (modules), ROUNDS);

  for (guint round = 0; round < ROUNDS; round++)
    {
      symbolizer = perfmon_symbolizer_new ();
      named_cold = symbolize (symbolizer, frames, n, &cold[round]);
      named_warm = symbolize (symbolizer, frames, n, &warm[round]);
      g_object_unref (symbolizer);
    }

  /* What one symbolizer keeps after a cold pass. */
  malloc_trim (0);
  heap_before = heap_in_use ();
  rss_before = resident_bytes ();
  symbolizer = perfmon_symbolizer_new ();
  symbolize (symbolizer, frames, n, &ms);
  heap_after = heap_in_use ();
  rss_after = resident_bytes ();
  {
    double cold_median = bench_median (cold, ROUNDS);
    double warm_median = bench_median (warm, ROUNDS);

    printf ("symbolize %u frames, cold (new symbolizer): median %.2f ms (min %.2f, max %.2f), %u named\n",
            n, cold_median, cold[0], cold[ROUNDS - 1], named_cold);
    printf ("symbolize %u frames, warm (cached):         median %.4f ms (min %.4f, max %.4f), %u named\n",
            n, warm_median, warm[0], warm[ROUNDS - 1], named_warm);
  }
  printf ("symbol cache: %u modules, heap %.1f KiB, resident memory +%.1f KiB\n",
          perfmon_symbolizer_get_n_cached_modules (symbolizer),
          (double) (heap_after - heap_before) / 1024.0,
          (double) ((gssize) rss_after - (gssize) rss_before) / 1024.0);
  g_object_unref (symbolizer);
  heap_freed = heap_in_use ();
  printf ("after the symbolizer is freed: heap %+.1f KiB from before it\n",
          ((double) heap_freed - (double) heap_before) / 1024.0);
  return 0;
}
