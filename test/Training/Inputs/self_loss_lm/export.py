#!/usr/bin/env python3
"""A language model that returns its own loss (as transformers' models do
with labels=ids), exported at the microbatch size by torch-mlir.

Embedding(32, 16) -> tanh(Linear(16, 16)) -> tied head h @ E^T; the loss is
the next-token cross entropy of the ids against themselves. The function
is forward(embed.weight, proj.weight, proj.bias, ids) -> loss, every
parameter an argument (torch.func.functional_call), ids i64 [2, 8]: one
microbatch of a batch of 8 sequences split into 4 microbatches.

Writes model.mb2.mlir, inputs/arg_0.npy .. arg_2.npy (the parameters),
inputs/arg_3.npy (the whole batch of ids, [8, 8]: pipeopt-run --inputs
inputs splits it into the 4 microbatches) and loss.npy (torch's loss
averaged over the 4 microbatches). Run here: python3 export.py (torch
2.15, torch_mlir).
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_mlir import fx as tmfx

MICROBATCH, MICROBATCHES, SEQ, VOCAB = 2, 4, 8, 32


class SelfLossLm(nn.Module):
    def __init__(self, vocab=VOCAB, d=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, d)

    def forward(self, ids):
        h = torch.tanh(self.proj(self.embed(ids)))
        logits = h @ self.embed.weight.t()
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               ids[:, 1:].reshape(-1))


class Functional(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
        self.names = [n for n, _ in module.named_parameters()]

    def forward(self, *args):
        params = dict(zip(self.names, args[:-1]))
        return torch.func.functional_call(self.module, params, (args[-1],))


os.makedirs("inputs", exist_ok=True)
torch.manual_seed(0)
model = SelfLossLm()
fn = Functional(model)
params = [p.detach().clone() for p in model.parameters()]
g = torch.Generator().manual_seed(7)
ids = torch.randint(0, VOCAB, (MICROBATCH * MICROBATCHES, SEQ), generator=g)
module = tmfx.export_and_import(fn, *params, ids[:MICROBATCH],
                                output_type="linalg-on-tensors",
                                func_name="forward")
with open("model.mb2.mlir", "w") as f:
    f.write(str(module))
for i, p in enumerate(params):
    np.save("inputs/arg_%d.npy" % i, p.numpy())
np.save("inputs/arg_3.npy", ids.numpy())
with torch.no_grad():
    losses = [fn(*params, mb) for mb in ids.split(MICROBATCH)]
np.save("loss.npy", torch.stack(losses).mean().reshape(1).numpy())
print("loss", torch.stack(losses).mean().item(),
      "per microbatch", [round(l.item(), 6) for l in losses])
