/* perfmon-tsan-private.h: hand-overs ThreadSanitizer cannot see
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib hands some of perfmon's memory from one thread to another under
 * locks it takes inside itself, which no TSan build can see (libglib is
 * not instrumented, and its own calls to its lock functions bypass
 * src/tsan/perfmon-tsan-glib.c). Where perfmon's code is on both sides of
 * such a hand-over, it tells TSan: _perfmon_tsan_release (@address) before
 * the hand-over, _perfmon_tsan_acquire (@address) where the memory is
 * received. Outside TSan builds both are nothing.
 *
 * Where perfmon's code is only on the giving side, and GLib frees the
 * memory on the receiving thread (a GThreadPool's last worker frees the
 * pool), no acquire can be placed: the few reads perfmon makes of such
 * memory before it hands it over are made between
 * _perfmon_tsan_ignore_begin() and _perfmon_tsan_ignore_end(), which TSan
 * does not record, each with its reason.
 */
#pragma once

#if defined(__SANITIZE_THREAD__)
# define PERFMON_TSAN_BUILD 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define PERFMON_TSAN_BUILD 1
# endif
#endif

#ifdef PERFMON_TSAN_BUILD
# include <sanitizer/tsan_interface.h>
# define _perfmon_tsan_release(address) __tsan_release ((void *) (address))
# define _perfmon_tsan_acquire(address) __tsan_acquire ((void *) (address))
/* In the TSan runtimes of gcc and clang, not in their headers. */
void __tsan_ignore_thread_begin (void);
void __tsan_ignore_thread_end (void);
# define _perfmon_tsan_ignore_begin() __tsan_ignore_thread_begin ()
# define _perfmon_tsan_ignore_end() __tsan_ignore_thread_end ()
#else
# define _perfmon_tsan_release(address) ((void) 0)
# define _perfmon_tsan_acquire(address) ((void) 0)
# define _perfmon_tsan_ignore_begin() ((void) 0)
# define _perfmon_tsan_ignore_end() ((void) 0)
#endif
