#!/usr/bin/env python3
"""A tiny transformers GPT-2 (1 layer, width 16, 2 heads, vocabulary 32,
8 positions; random weights from a config, nothing downloaded) that returns
its own loss (labels=ids), exported by torch-mlir at the microbatch size
(ids i64 [2, 8]) with every parameter an argument.

  model.mb2.mlir          exported with an explicit attention_mask (ones):
                          func + linalg on tensors, what pipeopt takes;
  model-no-mask.mb2.mlir  exported without one: GPT-2 then computes its
                          position ids with a cumulative sum, which
                          torch-mlir exports as tm_tensor.scan;
  inputs/arg_<i>.npy      the 16 parameters and (arg_16) the whole batch of
                          ids, [8, 8] = 4 microbatches of [2, 8];
  loss.npy                torch's loss averaged over the 4 microbatches.

Run here: python3 export.py (torch 2.15, transformers 5.25, torch_mlir).
"""
import os

import numpy as np
import torch
from torch_mlir import fx as tmfx
from transformers import GPT2Config, GPT2LMHeadModel

MICROBATCH, MICROBATCHES, SEQ, VOCAB = 2, 4, 8, 32

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=VOCAB,
                    n_positions=SEQ, attn_implementation="eager")
model = GPT2LMHeadModel(config).eval()
names = [n for n, _ in model.named_parameters()]


class Functional(torch.nn.Module):
    """forward(*params, ids) -> loss, the mask explicit or not."""

    def __init__(self, mask):
        super().__init__()
        self.model = model
        self.mask = mask

    def forward(self, *args):
        params = dict(zip(names, args[:-1]))
        ids = args[-1]
        kwargs = dict(input_ids=ids, labels=ids, use_cache=False)
        if self.mask:
            kwargs["attention_mask"] = torch.ones_like(ids)
        return torch.func.functional_call(self.model, params, (),
                                          kwargs).loss


params = [p.detach().clone() for p in model.parameters()]
g = torch.Generator().manual_seed(3)
ids = torch.randint(0, VOCAB, (MICROBATCH * MICROBATCHES, SEQ), generator=g)
for mask, path in ((True, "model.mb2.mlir"),
                   (False, "model-no-mask.mb2.mlir")):
    module = tmfx.export_and_import(Functional(mask), *params,
                                    ids[:MICROBATCH],
                                    output_type="linalg-on-tensors",
                                    func_name="forward")
    with open(path, "w") as f:
        f.write(str(module))
os.makedirs("inputs", exist_ok=True)
for i, p in enumerate(params):
    np.save("inputs/arg_%d.npy" % i, p.numpy())
np.save("inputs/arg_%d.npy" % len(params), ids.numpy())
with torch.no_grad():
    losses = [Functional(True)(*params, mb) for mb in ids.split(MICROBATCH)]
loss = torch.stack(losses).mean()
np.save("loss.npy", loss.reshape(1).numpy())
print("loss", loss.item())
