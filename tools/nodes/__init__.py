# SPDX-License-Identifier: Apache-2.0
"""Sample-node builder for rdmak: node specs (plain data) -> fake /sys + /dev trees.

Modules:
  sysfs.py    Tree: writes files, kernel-style relative symlinks, char device nodes.
  hw.py       formats and facts the kernel uses (rate strings, GIDs, GUIDs, cpumasks,
              udev names) and the hardware catalog (PCI ids of NICs, GPUs, bridges).
  compose.py  helpers that build spec fragments (switch groups, NIC functions, VFs).
  build.py    build(spec, outdir): walks a spec and writes the tree.
  specs_*.py  the nodes; each module exports NODES = [spec, ...].
"""
