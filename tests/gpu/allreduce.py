# SPDX-License-Identifier: Apache-2.0
import torch, torch.distributed as dist
dist.init_process_group("nccl")
r = dist.get_rank()
torch.cuda.set_device(r)
x = torch.ones(1 << 20, device="cuda") * (r + 1)
dist.all_reduce(x)
torch.cuda.synchronize()
print("rank", r, "sum", x[0].item(), flush=True)
dist.destroy_process_group()
