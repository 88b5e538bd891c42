"""What the bench/ drivers read of a server process (Linux /proc) and a free loopback port.

Imported by soak.py and idle_sessions.py (they run as `python3 bench/NAME.py`, so this
directory is on the import path). Standard library only.
"""

import os
import socket


def status_kib(pid, field):
    """A `kB` field of /proc/PID/status (`VmRSS`, `VmHWM`, ...), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def fds(pid):
    """Open file descriptors of the process."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
