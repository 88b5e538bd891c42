#!/usr/bin/env python3
"""Prints N distinct TCP ports on 127.0.0.1 that are free now, one per line.

    scripts/free_ports.py 5

The scripts that start servers on fixed ports (scripts/conformance*.sh) ask here instead of
using constants: a constant port inside Linux's ephemeral range (32768-60999) can be held for
a moment by any outgoing connection on the machine, and a port already taken by someone else
would be mistaken for our server having started. All N sockets are bound at once (so the
ports differ) and closed before printing; the caller binds them right away.
"""
import socket
import sys


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        ports = [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
    print("\n".join(str(p) for p in ports))


if __name__ == "__main__":
    main()
