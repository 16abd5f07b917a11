#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy on a free loopback port that holds each new connection DELAY seconds before it
connects it to UPSTREAM: a server slow to answer a handshake (an etcd member on a busy node).
    slow-proxy.py UPSTREAM-HOST:PORT DELAY    prints its port on the first line, then serves
"""
import socket, sys, threading, time

host, port = sys.argv[1].rsplit(":", 1)
delay = float(sys.argv[2])
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)


def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(c):
    time.sleep(delay)
    try:
        u = socket.create_connection((host, int(port)))
    except OSError:
        c.close()
        return
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    pipe(u, c)


while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
