/* fsync-log.c: an LD_PRELOAD interposer that logs the fsync() and
 * fdatasync() calls a process makes on its main thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For the tests of what perfmon does on a watched thread: each call on the
 * main thread (tid == pid) appends "<pid> <monotonic µs> <path of the fd>"
 * to the file named by FSYNC_LOG (opened with O_APPEND for each line, so
 * that processes sharing it do not mix their lines). Other threads are not
 * logged. Without FSYNC_LOG, it only passes the calls on.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
log_call (int fd)
{
  const char *log = getenv ("FSYNC_LOG");
  char link[64];
  char path[512];
  char line[700];
  struct timespec ts;
  ssize_t n;
  int out;

  if (log == NULL || gettid () != getpid ())
    return;
  snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
  n = readlink (link, path, sizeof path - 1);
  path[n > 0 ? n : 0] = '\0';
  clock_gettime (CLOCK_MONOTONIC, &ts);
  n = snprintf (line, sizeof line, "%d %lld %s\n", (int) getpid (),
                (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000, path);
  out = open (log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (out < 0)
    return;
  if (write (out, line, (size_t) n) < 0)
    {
      /* Nothing to do: the log is best effort. */
    }
  close (out);
}

int
fsync (int fd)
{
  int (*real) (int) = (int (*) (int)) dlsym (RTLD_NEXT, "fsync");

  log_call (fd);
  return real (fd);
}

int
fdatasync (int fd)
{
  int (*real) (int) = (int (*) (int)) dlsym (RTLD_NEXT, "fdatasync");

  log_call (fd);
  return real (fd);
}
