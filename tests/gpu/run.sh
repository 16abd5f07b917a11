#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Not run by make check (it needs GPUs and NCCL): what tests/captures/nccl/ was made with, on a
# machine with two H200s, PyTorch 2.11 and NCCL 2.28.9. rdmak writes the NCCL topology file for
# the machine's two GPUs (`rdmak dra --dry-run --nccl-topology`); variant.py moves them under a
# synthetic PCIe switch beside a NIC the machine lacks; a 2-GPU all-reduce runs with each file as
# NCCL_TOPO_FILE, and once without, each with NCCL_TOPO_DUMP_FILE and NCCL_DEBUG=INFO.
# Layout expected: .dra-gpu/ in the working directory holding rdmak, the libraries ldd names for
# it plus the loader under lib/, and this folder's three files; results land in $OUT.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
D=$(pwd)/.dra-gpu
R() { "$D/lib/ld-linux-x86-64.so.2" --library-path "$D/lib" "$D/rdmak" "$@"; }
L=$OUT/all.log
{
nvidia-smi -L; nvidia-smi topo -m
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
G=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | sed 's/^0000//' | tr 'A-F' 'a-f' | paste -sd,)
echo "GPUs: $G"
R list
R dra --dry-run --node-name gpu-node --nccl-topology "$G" > $OUT/topo.xml; echo "rdmak dra exit $?"
python3 $D/variant.py $OUT/topo.xml > $OUT/topo-switch.xml
for f in topo topo-switch none; do
  echo "===== $f"
  env $([ $f != none ] && echo NCCL_TOPO_FILE=$OUT/$f.xml) NCCL_TOPO_DUMP_FILE=$OUT/$f-dump.xml NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV timeout 180 python3 -m torch.distributed.run --nproc_per_node=2 $D/allreduce.py
  echo "exit $?"
done
} > $L 2>&1
cat $OUT/*.xml | head -80
grep -E "rank . sum|Loading topology|exit|Changing|Could not|Ignoring|WARN" $L | head -40
