"""Compares train_gpt2.py's result with torch's own training of the same model.

    PYTHONPATH=build/python python3 examples/python/train_gpt2.py trained.pt
    python3 examples/python/compare_with_torch.py trained.pt

Trains the same GPT-2 (same seed, data and AdamW) with torch.optim in
float32 and in float64 (the truth both float32 runs approximate) and prints
how far pipeopt's losses are from torch's float32 losses, and, per tensor,
how far pipeopt's and torch's float32 weights are from the float64 ones.
"""
import copy
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=128, n_head=4, vocab_size=512, n_positions=64,
                                   bos_token_id=0, eos_token_id=0))
ids = torch.randint(0, 512, (8, 33))
inputs, targets = ids[:, :-1], ids[:, 1:]


def train(dtype):
    m = copy.deepcopy(model).to(dtype).eval()  # eval: dropout off, as pipeopt's export
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        logits = m(inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 512), targets.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.tensor(losses, dtype=torch.float64), m.state_dict()


got = torch.load(sys.argv[1] if len(sys.argv) > 1 else "trained.pt")
l32, s32 = train(torch.float32)
_, s64 = train(torch.float64)
rel = ((got["losses"].double() - l32).abs() / l32.abs()).max().item()
print(f"losses: max relative difference from torch float32: {rel:.2e}")
worst = (0.0, "")
for name, ref in s64.items():
    if not ref.is_floating_point():
        continue
    ours = (got["state_dict"][name].double() - ref).abs().max().item()
    theirs = (s32[name].double() - ref).abs().max().item()
    worst = max(worst, (ours / max(theirs, 1e-30), name))
print(f"weights: the largest ratio of pipeopt's to torch float32's distance from float64 is "
      f"{worst[0]:.2f} ({worst[1]}); {len(s64)} tensors")
