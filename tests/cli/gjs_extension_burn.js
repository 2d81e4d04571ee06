// burn.js: CPU burnt on purpose, and measured (shared by the test
// extensions in gjs-extensions/; test_cli_run_addons.py copies it next to
// each as burn.js when it installs them, as extensions ship their own
// files)
//
// SPDX-License-Identifier: LGPL-2.1-or-later
import GLib from 'gi://GLib';

const decoder = new TextDecoder();

// The calling thread's CPU time, ns (the scheduler's own count).
export function threadCpuNs() {
    const [, bytes] = GLib.file_get_contents('/proc/thread-self/schedstat');
    return Number(decoder.decode(bytes).split(' ')[0]);
}

// Runs for @ms of CPU; returns the CPU time it took, ns.
export function burn(ms) {
    const start = threadCpuNs();
    let now = start;
    while (now - start < ms * 1e6)
        now = threadCpuNs();
    return now - start;
}
