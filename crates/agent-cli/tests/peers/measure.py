"""Runs a command and reports its peak memory and CPU time, measured by the kernel.

Usage: measure.py REPORT_FILE PROGRAM [ARGS...]

The command inherits stdin, stdout and stderr. When it exits, wait4's resource usage of that one
child is written to REPORT_FILE as JSON (max_rss_kib, cpu_s = user + system, code), and this
process exits with the command's exit code (128 + N for a signal).
"""

import json
import os
import sys

report_path, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
with open(report_path, "w") as out:
    json.dump(
        {
            "max_rss_kib": usage.ru_maxrss,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "code": code,
        },
        out,
    )
sys.exit(code if code >= 0 else 128 - code)
