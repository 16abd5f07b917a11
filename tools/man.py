#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Man pages from the one source of each command's usage: `rdmak --help` (the role table) and
`rdmak ROLE --help`. Writes OUTDIR/rdmak.1 and OUTDIR/rdmak-ROLE.1 for every role.

  tools/man.py BUILD/rdmak OUTDIR VERSION

A help text is usage lines, paragraphs, and indented option lists: a paragraph is filled, an
indented block is kept as it is laid out (.nf), "Exit: ..." becomes EXIT STATUS. Nothing is
dated, so that one commit gives the same pages."""
import re
import subprocess
import sys


def roff(text):
    """Escape text for roff: backslashes, hyphens (so options copy as ASCII), a leading dot."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + ln if ln.startswith((".", "'")) else ln for ln in text.split("\n"))


def run_help(binary, *args):
    r = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, check=False)
    if r.returncode != 0 or not r.stdout.strip():
        sys.exit(f"tools/man.py: {binary} {' '.join(args)} --help: exit {r.returncode}: {r.stderr}")
    return r.stdout


def split_help(text):
    """(usage lines, [blocks]) with the usage's continuation lines joined to it."""
    lines = text.rstrip("\n").split("\n")
    usage = []
    while lines and (lines[0].startswith("Usage:") or (usage and lines[0].startswith(" "))):
        usage.append(re.sub(r"^Usage: ", "", lines.pop(0)).strip())
    blocks, cur = [], []
    for ln in lines:
        if ln.strip():
            cur.append(ln)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return usage, blocks


def body(blocks):
    out, exit_status = [], []
    for b in blocks:
        if b[0].startswith("Exit:"):
            exit_status = b
            continue
        if all(ln.startswith((" ", "\t")) for ln in b) or any(re.match(r"^\s{2,}\S", ln) for ln in b[1:]):
            # an option list or a table: as laid out; a heading line ("Test:") stays bold
            head = []
            if not b[0].startswith((" ", "\t")) and b[0].rstrip().endswith(":"):
                head = [".PP", ".B " + roff(b[0].strip())]
                b = b[1:]
            out += head + [".PP", ".nf", roff("\n".join(b)), ".fi"]
        else:
            out += [".PP", roff(" ".join(ln.strip() for ln in b))]
    return out, exit_status


def page(name, summary, version, usage, blocks, see_also):
    out = [
        f'.TH {name.upper()} 1 "" "rdmak {version}" "rdmak manual"',
        ".ad l",
        ".nh",
        ".SH NAME",
        f"{roff(name)} \\- {roff(summary)}",
    ]
    if usage:
        out += [".SH SYNOPSIS", ".nf"] + [roff(u) for u in usage] + [".fi"]
    text, exit_status = body(blocks)
    out += [".SH DESCRIPTION"] + text
    if exit_status:
        text = " ".join(ln.strip() for ln in exit_status)
        out += [".SH EXIT STATUS", roff(re.sub(r"^Exit: *", "", text))]
    out += [".SH SEE ALSO", ",\n".join(f".BR {roff(p)} (1)" for p in see_also)]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, outdir, version = sys.argv[1:]
    top = run_help(binary)
    roles = re.findall(r"^  (\S+)\s+(.+)$", top.split("Roles:", 1)[1], re.M)
    if not roles:
        sys.exit(f"tools/man.py: no role table in {binary} --help")
    names = [f"rdmak-{r}" for r, _ in roles]
    intro = [
        [f"rdmak is one binary with many roles; the role comes from the first argument, or from "
         f"the program name when it runs as rdmak-ROLE (a symbolic link), as the CNI plugins "
         f"rdmak-cni and rdmak-ipam do."],
        ["Roles:"] + [f"  {r:<10} {s}" for r, s in roles],
        [f"`rdmak ROLE --help` describes each role; each has a page here (rdmak-ROLE(1)) and one "
         f"in the source's docs/ROLE.md."],
    ]
    with open(f"{outdir}/rdmak.1", "w") as f:
        f.write(page("rdmak", "RDMA networking for Kubernetes nodes, one binary", version,
                     ["rdmak ROLE [options]", "rdmak-ROLE [options]", "rdmak --version"], intro, names))
    for (role, summary), name in zip(roles, names):
        usage, blocks = split_help(run_help(binary, role))
        with open(f"{outdir}/{name}.1", "w") as f:
            f.write(page(name, summary, version, usage, blocks, ["rdmak"]))


if __name__ == "__main__":
    main()
